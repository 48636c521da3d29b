package gtc

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// AllocationEntry is one dataset prefix of GTC_SAMPLING_ALLOCATION with its normalized weight.
type AllocationEntry struct {
	Prefix string
	Weight float64
}

// Allocation spreads self-serve draws over dataset prefixes; weights sum to 1.
type Allocation []AllocationEntry

// ParseAllocation reads "prefix:weight,…" (split at the last ':'; a weight is a positive
// decimal). Bad or non-positive entries are ignored and returned so the caller can warn.
func ParseAllocation(s string) (Allocation, []string) {
	var out Allocation
	var ignored []string
	sum := 0.0
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		i := strings.LastIndex(part, ":")
		if i < 0 {
			ignored = append(ignored, part)
			continue
		}
		w, err := strconv.ParseFloat(strings.TrimSpace(part[i+1:]), 64)
		if err != nil || !(w > 0) || math.IsInf(w, 0) {
			ignored = append(ignored, part)
			continue
		}
		out = append(out, AllocationEntry{Prefix: part[:i], Weight: w})
		sum += w
	}
	for i := range out {
		out[i].Weight /= sum
	}
	return out, ignored
}

// quotas splits need over the prefixes: floor(need × weight) each, the remaining slots one
// each to the largest fractional parts (ties: larger weight, then prefix ascending).
func (a Allocation) quotas(need int) []int {
	q := make([]int, len(a))
	frac := make([]float64, len(a))
	left := need
	for i, e := range a {
		x := float64(need) * e.Weight
		q[i] = int(math.Floor(x))
		frac[i] = x - float64(q[i])
		left -= q[i]
	}
	order := make([]int, len(a))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(x, y int) bool {
		i, j := order[x], order[y]
		if frac[i] != frac[j] {
			return frac[i] > frac[j]
		}
		if a[i].Weight != a[j].Weight {
			return a[i].Weight > a[j].Weight
		}
		return a[i].Prefix < a[j].Prefix
	})
	for k := 0; k < left && k < len(order); k++ {
		q[order[k]]++
	}
	return q
}

// SelfServeOptions configure self-serve.
type SelfServeOptions struct {
	DefaultLimit int        // GTC_SELF_SERVE_LIMIT
	MaxLimit     int        // GTC_SELF_SERVE_MAX
	Allocation   Allocation // GTC_SAMPLING_ALLOCATION, parsed
}

// SelfServeResult is the answer of self-serve.
type SelfServeResult struct {
	Assigned      []*Item
	Requested     int
	NewlyAssigned int
}

// lockedRand is a *rand.Rand shared by concurrent requests.
type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (l *lockedRand) intN(n int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.IntN(n)
}

// MyAssignments streams the caller's queue: drafts assigned to them, oldest assignment
// first, read page by page.
func (c *Curator) MyAssignments(ctx context.Context) iter.Seq2[*Item, error] {
	user := CallerFrom(ctx).UserID
	q := Query{Filter: Filter{AssignedTo: &user, Statuses: []Status{StatusDraft}}, Sort: SortAssignedAt, Limit: MaxQueryLimit}
	return c.store.Items().QueryAll(ctx, q)
}

// SelfServe tops the caller's queue up to limit drafts (nil: the default limit; above the
// maximum: clamped). Items are drawn at random from the pool, per dataset prefix when an
// allocation is set, and each is claimed with a conditional write that only succeeds while
// the item is still free, so no item ever goes to two curators.
func (c *Curator) SelfServe(ctx context.Context, limit *int) (*SelfServeResult, error) {
	ctx = WithChange(ctx, Change{Source: SourceAssignment})
	opts := c.selfServe
	n := opts.DefaultLimit
	if limit != nil {
		n = *limit
	}
	if opts.MaxLimit > 0 && n > opts.MaxLimit {
		n = opts.MaxLimit
	}
	// Only the first n items of the queue matter; the rest of it is not read.
	mine := []*Item{}
	for it, err := range c.MyAssignments(ctx) {
		if err != nil {
			return nil, err
		}
		if len(mine) >= n {
			break
		}
		mine = append(mine, it)
	}
	res := &SelfServeResult{Requested: n}
	if len(mine) >= n {
		res.Assigned = mine[:n]
		return res, nil
	}
	res.Assigned = mine
	user := CallerFrom(ctx).UserID
	tried := map[Key]bool{}
	// A round draws what is still needed and claims it; claims lost to curators who
	// self-serve at the same moment are made up by another round, excluding every item
	// tried so far. (One extra round was not enough: under a burst of concurrent curators it
	// left items unclaimed while queues stayed short, so a few more are allowed.)
	for round := 0; round < selfServeRounds && len(res.Assigned) < n; round++ {
		candidates, err := c.drawCandidates(ctx, user, n-len(res.Assigned), tried)
		if err != nil {
			return nil, err
		}
		if len(candidates) == 0 {
			break
		}
		for _, k := range candidates {
			tried[k] = true
		}
		// Claims run concurrently, so the store commits them together; the answer keeps
		// the draw's order.
		for _, r := range c.claimAll(ctx, candidates, user) {
			switch {
			case r.err == nil:
				res.Assigned = append(res.Assigned, r.item)
				res.NewlyAssigned++
			case errors.Is(r.err, errNotClaimable), errors.Is(r.err, ErrNotFound), errors.Is(r.err, ErrConcurrentModification):
				// someone else got it first
			default:
				return nil, r.err
			}
		}
	}
	return res, nil
}

var errNotClaimable = errors.New("item is no longer in the self-serve pool")

// selfServeRounds bounds the draw-and-claim rounds of one self-serve call.
const selfServeRounds = 5

type claimResult struct {
	item *Item
	err  error
}

// claimAll claims keys concurrently and returns the results in the order of keys.
func (c *Curator) claimAll(ctx context.Context, keys []Key, user string) []claimResult {
	out := make([]claimResult, len(keys))
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i].item, out[i].err = c.claim(ctx, k, user)
		}()
	}
	wg.Wait()
	return out
}

// claim assigns the item to user if it is still eligible (or already theirs).
func (c *Curator) claim(ctx context.Context, k Key, user string) (*Item, error) {
	return Update(ctx, c.store.Items(), k, func(cur *Item) (*Item, error) {
		assigned := ""
		if cur.AssignedTo != nil {
			assigned = *cur.AssignedTo
		}
		eligible := (cur.Status == StatusDraft && (assigned == "" || assigned == user)) ||
			(cur.Status == StatusSkipped && assigned != user)
		if !eligible {
			return nil, errNotClaimable
		}
		return c.assignTo(cur, user)
	})
}

// assignTo gives cur to user as a draft, stamped now, with its computed tags refreshed: the
// one write of a claim and of a (forced) assignment.
func (c *Curator) assignTo(cur *Item, user string) (*Item, error) {
	now := c.now()
	cur.AssignedTo, cur.AssignedAt = &user, &now
	cur.Status = StatusDraft
	cur.UpdatedAt = now
	if _, err := c.tagger.Prepare(cur, cur.ManualTags, false); err != nil {
		return nil, tagError(err, "") // a stored tag the rules refuse names itself
	}
	return cur, nil
}

// drawCandidates draws up to need keys of the pool, none already tried: per prefix by the
// allocation and interleaved round-robin by weight, then filled from the whole pool.
func (c *Curator) drawCandidates(ctx context.Context, user string, need int, tried map[Key]bool) ([]Key, error) {
	alloc := c.selfServe.Allocation
	var out []Key
	picked := map[Key]bool{}
	if len(alloc) > 0 {
		quotas := alloc.quotas(need)
		draws := make([][]Key, len(alloc))
		for i, e := range alloc {
			if quotas[i] == 0 {
				continue
			}
			ks, err := c.sample(ctx, EligibleSpec{User: user, DatasetPrefix: e.Prefix}, quotas[i], tried)
			if err != nil {
				return nil, err
			}
			draws[i] = ks
		}
		order := make([]int, len(alloc))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(x, y int) bool {
			i, j := order[x], order[y]
			if alloc[i].Weight != alloc[j].Weight {
				return alloc[i].Weight > alloc[j].Weight
			}
			return alloc[i].Prefix < alloc[j].Prefix
		})
		for round := 0; ; round++ {
			more := false
			for _, i := range order {
				if round < len(draws[i]) {
					more = true
					if k := draws[i][round]; !picked[k] {
						picked[k] = true
						out = append(out, k)
					}
				}
			}
			if !more {
				break
			}
		}
	}
	if len(out) < need {
		exclude := make(map[Key]bool, len(tried)+len(picked))
		for k := range tried {
			exclude[k] = true
		}
		for k := range picked {
			exclude[k] = true
		}
		ks, err := c.sample(ctx, EligibleSpec{User: user}, need-len(out), exclude)
		if err != nil {
			return nil, err
		}
		out = append(out, ks...)
	}
	return out, nil
}

// sample draws up to n keys of the pool uniformly, none of exclude: through the store's
// sampler when it has one, else by reservoir sampling over Eligible.
func (c *Curator) sample(ctx context.Context, e EligibleSpec, n int, exclude map[Key]bool) ([]Key, error) {
	if s, ok := c.store.Items().(EligibleSampler); ok {
		return s.SampleEligible(ctx, e, n, exclude)
	}
	var res []Key
	seen := 0
	for k, err := range c.store.Items().Eligible(ctx, e) {
		if err != nil {
			return nil, err
		}
		if exclude[k] {
			continue
		}
		seen++
		if len(res) < n {
			res = append(res, k)
		} else if j := c.rand.intN(seen); j < n {
			res[j] = k
		}
	}
	return res, nil
}

// AssignConflictError is the 409 of an assign onto someone else's draft.
func assignConflict(it *Item) *Error {
	extra := map[string]any{"assignedTo": *it.AssignedTo}
	if it.AssignedAt != nil {
		extra["assignedAt"] = FormatAPITime(*it.AssignedAt)
	}
	return &Error{Code: CodeAssignmentConflict, Message: "Item is assigned to another curator", Extra: extra}
}

// Assign gives the item to the caller: status draft, assignedTo caller. A draft held by
// another curator needs force and the admin role. A lost race is evaluated again, so a
// conflict that appears meanwhile is still a 409. A deleted item is refused: assigning must
// not silently restore it.
func (c *Curator) Assign(ctx context.Context, k Key, force bool) (*Item, error) {
	ctx = WithChange(ctx, Change{Source: SourceAssignment})
	caller := CallerFrom(ctx)
	out, err := Update(ctx, c.store.Items(), k, func(cur *Item) (*Item, error) {
		if cur.Status == StatusDeleted {
			return nil, &Error{Code: CodeBadRequest, Message: "Item is deleted; restore it before assigning"}
		}
		if cur.Status == StatusDraft && cur.AssignedTo != nil && *cur.AssignedTo != "" && *cur.AssignedTo != caller.UserID {
			if !force {
				return nil, assignConflict(cur)
			}
			if err := caller.Require(RoleAdmin, "forcing an assignment"); err != nil {
				return nil, err
			}
		}
		return c.assignTo(cur, caller.UserID)
	})
	if err != nil {
		return nil, storeError(err)
	}
	return out, nil
}

// Duplicate makes a rephrase copy of the item for the caller: a new draft in the same dataset
// and bucket with a generated id, the original's content, and the tag rephrase:<original id>,
// which also goes to the tag store.
func (c *Curator) Duplicate(ctx context.Context, k Key) (*Item, error) {
	ctx = WithChange(ctx, Change{Source: SourceDuplicate})
	caller := CallerFrom(ctx)
	orig, err := c.store.Items().Get(ctx, k)
	if err != nil {
		return nil, storeError(err)
	}
	if orig.AssignedTo != nil && *orig.AssignedTo != "" && *orig.AssignedTo != caller.UserID {
		return nil, &Error{Code: CodeAssignmentOwnership, Message: "ASSIGNMENT_OWNERSHIP"}
	}
	// The rephrase tag, normalized (so the id is lower-cased). An id that cannot make a
	// valid tag (a comma in it, or too long) gives no tag rather than no copy.
	var rephrase []string
	if norm, err := c.tagger.NormalizeManual([]string{"rephrase:" + orig.ID}); err == nil {
		rephrase = norm
	} else {
		c.log.WarnContext(ctx, "duplicate: the original id makes no valid rephrase tag", "item", orig.ID, "err", err)
	}
	for attempt := 0; ; attempt++ {
		it := orig.Clone()
		it.ID = c.ids.New(func(id string) bool { return c.idExists(ctx, orig.DatasetName, id) })
		now := c.now()
		user := caller.UserID
		it.Status = StatusDraft
		it.AssignedTo, it.AssignedAt = &user, &now
		it.CreatedBy, it.CreatedAt = &user, &now
		it.ReviewedAt, it.UpdatedBy = nil, nil
		it.UpdatedAt = now
		it.ETag = ""
		if _, err := c.tagger.Prepare(it, append(slices.Clone(orig.ManualTags), rephrase...), true); err != nil {
			return nil, tagError(err, "")
		}
		out, err := c.store.Items().Create(ctx, it)
		if errors.Is(err, ErrConflict) && attempt < 3 {
			continue // another request took the generated id meanwhile
		}
		if err != nil {
			return nil, storeError(err)
		}
		if c.vocab != nil && len(rephrase) > 0 {
			if _, err := c.vocab.AddTags(ctx, rephrase); err != nil {
				c.log.WarnContext(ctx, "duplicate: could not add the rephrase tag to the tag store", "tag", rephrase[0], "err", err)
			}
		}
		return out, nil
	}
}

// ItemPath is the API path of an item, each segment percent-encoded.
func ItemPath(prefix string, k Key) string {
	return fmt.Sprintf("%s/ground-truths/%s/%s/%s", prefix, url.PathEscape(k.DatasetName), url.PathEscape(k.Bucket), url.PathEscape(k.ID))
}
