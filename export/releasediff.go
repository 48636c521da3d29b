package export

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"

	"github.com/gtc-dev/gtc"
)

// CurrentRelease, in place of the second release of a comparison, stands for the items the
// first release's selection holds now: its datasets, status and tags applied to the store
// as a new release would apply them, without writing anything. No release may take the name.
const CurrentRelease = "current"

// The kinds of item a comparison lists.
const (
	DiffAdded   = "added"   // in the second release only
	DiffRemoved = "removed" // in the first release only
	DiffChanged = "changed" // in both, at another revision or with other exported content
)

// Page sizes of a comparison.
const (
	DefaultDiffLimit = 50
	MaxDiffLimit     = 500
)

// RevisionDiffFunc returns the field-level changes of the item k from the version after
// revision from to the version after revision to. When the item is no longer stored it fails
// with the NOT_FOUND error whose message is gtc.MsgItemNotFound; when one of the revisions
// between the two is no longer kept (retention, or history switched off) with another
// NOT_FOUND error. Package history's Diff does both.
type RevisionDiffFunc func(ctx context.Context, k gtc.Key, from, to int64) ([]gtc.PatchOp, error)

// DiffOptions choose a page of a comparison.
type DiffOptions struct {
	// Kind keeps one kind of item: DiffAdded, DiffRemoved or DiffChanged; "" keeps all three.
	Kind string
	// Limit is the page size, 1 to MaxDiffLimit; 0 is DefaultDiffLimit.
	Limit int
	// Cursor is the NextCursor of the previous page of the same comparison; "" starts.
	Cursor string
	// Changes asks for the field-level changes of each changed item.
	Changes bool
}

// ReleaseDiff is one page of the comparison of two releases: the counts and the tag shift of
// the whole comparison, and the page's items in (datasetName, id) order.
type ReleaseDiff struct {
	From     string     `json:"from"`
	To       string     `json:"to"`
	Counts   DiffCounts `json:"counts"`
	TagShift []TagShift `json:"tagShift"`
	Items    []DiffItem `json:"items"`
	// NextCursor continues with the next page; nil after the last.
	NextCursor *string `json:"nextCursor"`
}

// DiffCounts count the items of a comparison by kind; unchanged items are in both
// releases at the same revision (and, between two releases, with the same content).
type DiffCounts struct {
	Added     int `json:"added"`
	Removed   int `json:"removed"`
	Changed   int `json:"changed"`
	Unchanged int `json:"unchanged"`
}

// TagShift is a tag carried by a different number of items in the two releases.
type TagShift struct {
	Tag   string `json:"tag"`
	From  int    `json:"from"`
	To    int    `json:"to"`
	Delta int    `json:"delta"` // To - From
}

// DiffItem is one added, removed or changed item. FromRevision is its revision in the first
// release (absent when added), ToRevision in the second (absent when removed). Changes, on a
// changed item when asked for, are the field-level changes between the two revisions (empty
// when only the exported content differs); when they cannot be had, ChangesUnavailable says
// why instead.
type DiffItem struct {
	Kind               string        `json:"kind"`
	DatasetName        string        `json:"datasetName"`
	Bucket             string        `json:"bucket"`
	ID                 string        `json:"id"`
	FromRevision       *int64        `json:"fromRevision,omitempty"`
	ToRevision         *int64        `json:"toRevision,omitempty"`
	Changes            []gtc.PatchOp `json:"changes,omitzero"`
	ChangesUnavailable string        `json:"changesUnavailable,omitempty"`
}

// diffCursor is what a comparison's cursor holds: the format version, the hash of the
// comparison it belongs to, and the (datasetName, id) of the last item of its page. It is
// opaque to callers: URL-safe base64 of this JSON.
type diffCursor struct {
	V int    `json:"v"`
	H string `json:"h"`
	D string `json:"d"`
	I string `json:"i"`
}

const diffCursorVersion = 1

// diffHash identifies a comparison and its kind, so a cursor is refused by any other.
func diffHash(a, b, kind string) string {
	sum := sha256.Sum256([]byte("releasediff\x00" + a + "\x00" + b + "\x00" + kind))
	return hex.EncodeToString(sum[:12])
}

func encodeDiffCursor(a, b, kind string, last DiffItem) string {
	data, _ := json.Marshal(diffCursor{V: diffCursorVersion, H: diffHash(a, b, kind), D: last.DatasetName, I: last.ID})
	return base64.RawURLEncoding.EncodeToString(data)
}

func decodeDiffCursor(s, a, b, kind string) (diffCursor, bool) {
	var c diffCursor
	data, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(data, &c) != nil {
		return c, false
	}
	return c, c.V == diffCursorVersion && c.H == diffHash(a, b, kind) && c.D != "" && c.I != ""
}

// checkDiffOptions reports every problem of the options at once (422, fields named as the
// options are: kind, limit, cursor), and returns the page size and the cursor's position.
func checkDiffOptions(a, b string, o DiffOptions) (int, *diffCursor, error) {
	var probs []gtc.FieldError
	switch o.Kind {
	case "", DiffAdded, DiffRemoved, DiffChanged:
	default:
		probs = append(probs, gtc.FieldError{Field: "kind", Message: fmt.Sprintf("Unknown kind %q (known: added, removed, changed)", o.Kind)})
	}
	limit := o.Limit
	if limit == 0 {
		limit = DefaultDiffLimit
	}
	if limit < 1 || limit > MaxDiffLimit {
		probs = append(probs, gtc.FieldError{Field: "limit", Message: fmt.Sprintf("must be between 1 and %d", MaxDiffLimit)})
	}
	var after *diffCursor
	if o.Cursor != "" {
		c, ok := decodeDiffCursor(o.Cursor, a, b, o.Kind)
		if ok {
			after = &c
		} else {
			probs = append(probs, gtc.FieldError{Field: "cursor", Message: "not a nextCursor of this comparison (the same releases and kind)"})
		}
	}
	if len(probs) > 0 {
		return 0, nil, gtc.ValidationError(probs)
	}
	return limit, after, nil
}

// DiffReleases compares release a with release b, or with CurrentRelease: which items were
// added, removed or changed, how many of each, and which tags gained or lost items. One
// streaming merge of the two item lists, both in (datasetName, id) order, makes the counts
// and the page together, so memory does not grow with the releases: every page reads both
// lists whole and keeps the items after the cursor, up to the limit. An item is changed when
// its revision differs or, between two releases, its exported content (sha256) does; against
// CurrentRelease only revisions are compared.
//
// A release that does not exist is 404 and a deleted one 410, as ReleaseSummaryOf says;
// comparing a release with itself finds every item unchanged.
func (x *Exporter) DiffReleases(ctx context.Context, a, b string, opts DiffOptions) (*ReleaseDiff, error) {
	limit, after, err := checkDiffOptions(a, b, opts)
	if err != nil {
		return nil, err
	}
	from, err := x.ReleaseSummaryOf(ctx, a)
	if err != nil {
		return nil, err
	}
	current := b == CurrentRelease
	var (
		toItems iter.Seq2[ReleaseItem, error]
		toTags  map[string]int
	)
	if current {
		if x.items == nil {
			return nil, errors.New("export: comparing with the current items needs an item store")
		}
		sel, err := selectionOf(from)
		if err != nil {
			return nil, fmt.Errorf("export: selection of release %s: %w", a, err)
		}
		toTags = map[string]int{}
		toItems = x.currentItems(ctx, sel, toTags)
	} else {
		to, err := x.ReleaseSummaryOf(ctx, b)
		if err != nil {
			return nil, err
		}
		toTags = to.Counts.Tags
		toItems = x.ReleaseItems(ctx, b)
	}

	d := &ReleaseDiff{From: a, To: b, TagShift: []TagShift{}, Items: []DiffItem{}}
	more := false
	take := func(it DiffItem) {
		switch {
		case opts.Kind != "" && it.Kind != opts.Kind:
		case after != nil && compareKey(it.DatasetName, it.ID, after.D, after.I) <= 0:
		case len(d.Items) < limit:
			d.Items = append(d.Items, it)
		default:
			more = true
		}
	}
	err = mergeItems(ctx, x.ReleaseItems(ctx, a), toItems, func(f, t *ReleaseItem) {
		switch {
		case t == nil:
			d.Counts.Removed++
			take(DiffItem{Kind: DiffRemoved, DatasetName: f.DatasetName, Bucket: f.Bucket, ID: f.ID, FromRevision: ptr(f.Revision)})
		case f == nil:
			d.Counts.Added++
			take(DiffItem{Kind: DiffAdded, DatasetName: t.DatasetName, Bucket: t.Bucket, ID: t.ID, ToRevision: ptr(t.Revision)})
		case f.Revision != t.Revision || !current && f.SHA256 != t.SHA256:
			d.Counts.Changed++
			take(DiffItem{Kind: DiffChanged, DatasetName: t.DatasetName, Bucket: t.Bucket, ID: t.ID, FromRevision: ptr(f.Revision), ToRevision: ptr(t.Revision)})
		default:
			d.Counts.Unchanged++
		}
	})
	if err != nil {
		return nil, err
	}
	if more {
		next := encodeDiffCursor(a, b, opts.Kind, d.Items[len(d.Items)-1])
		d.NextCursor = &next
	}
	d.TagShift = tagShift(from.Counts.Tags, toTags)
	if opts.Changes {
		if err := x.fieldChanges(ctx, d.Items); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// compareKey orders items by (datasetName, id), as the stores' ByDatasetID scans and the
// release manifests do.
func compareKey(ds1, id1, ds2, id2 string) int {
	if c := strings.Compare(ds1, ds2); c != 0 {
		return c
	}
	return strings.Compare(id1, id2)
}

// mergeItems walks two item lists in (datasetName, id) order together and calls fn with
// each item of either: f from the first list, t from the second, nil where a list lacks it.
// A list out of order is an error: the merge would miss matches.
func mergeItems(ctx context.Context, first, second iter.Seq2[ReleaseItem, error], fn func(f, t *ReleaseItem)) error {
	type side struct {
		next    func() (ReleaseItem, error, bool)
		cur     ReleaseItem
		ok      bool
		started bool
	}
	open := func(seq iter.Seq2[ReleaseItem, error]) (*side, func()) {
		next, stop := iter.Pull2(seq)
		return &side{next: next}, stop
	}
	f, stopF := open(first)
	defer stopF()
	t, stopT := open(second)
	defer stopT()
	advance := func(s *side) error {
		it, err, ok := s.next()
		if err != nil {
			return err
		}
		if ok && s.started && compareKey(s.cur.DatasetName, s.cur.ID, it.DatasetName, it.ID) >= 0 {
			return fmt.Errorf("export: items out of (datasetName, id) order: %s/%s after %s/%s", it.DatasetName, it.ID, s.cur.DatasetName, s.cur.ID)
		}
		s.cur, s.ok, s.started = it, ok, true
		return nil
	}
	if err := advance(f); err != nil {
		return err
	}
	if err := advance(t); err != nil {
		return err
	}
	for n := 0; f.ok || t.ok; n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		c := 0
		switch {
		case !t.ok:
			c = -1
		case !f.ok:
			c = 1
		default:
			c = compareKey(f.cur.DatasetName, f.cur.ID, t.cur.DatasetName, t.cur.ID)
		}
		switch {
		case c < 0:
			fn(&f.cur, nil)
			if err := advance(f); err != nil {
				return err
			}
		case c > 0:
			fn(nil, &t.cur)
			if err := advance(t); err != nil {
				return err
			}
		default:
			fn(&f.cur, &t.cur)
			if err := advance(f); err != nil {
				return err
			}
			if err := advance(t); err != nil {
				return err
			}
		}
	}
	return nil
}

// tagShift lists the tags whose counts differ, by the size of the change (largest first),
// then by tag.
func tagShift(from, to map[string]int) []TagShift {
	out := []TagShift{}
	for tag, n := range from {
		if m := to[tag]; m != n {
			out = append(out, TagShift{Tag: tag, From: n, To: m, Delta: m - n})
		}
	}
	for tag, m := range to {
		if _, seen := from[tag]; !seen && m != 0 {
			out = append(out, TagShift{Tag: tag, To: m, Delta: m})
		}
	}
	slices.SortFunc(out, func(a, b TagShift) int {
		if c := cmp.Compare(abs(b.Delta), abs(a.Delta)); c != 0 {
			return c
		}
		return strings.Compare(a.Tag, b.Tag)
	})
	return out
}

func ptr(n int64) *int64 { return &n }

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// releaseSelection is the part of a release's recorded selection that chooses its items.
type releaseSelection struct {
	Datasets    []string `json:"datasets"`
	Status      string   `json:"status"`
	Tags        []string `json:"tags"`
	ExcludeTags []string `json:"excludeTags"`
}

// selectionOf reads the selection a release's manifest records.
func selectionOf(s ReleaseSummary) (releaseSelection, error) {
	var sel releaseSelection
	data, err := json.Marshal(s.Selection)
	if err != nil {
		return sel, err
	}
	if err := json.Unmarshal(data, &sel); err != nil {
		return sel, err
	}
	if sel.Status != "" && !gtc.Status(sel.Status).Valid() {
		return sel, fmt.Errorf("unknown status %q", sel.Status)
	}
	return sel, nil
}

// currentItems yields the items the selection holds now, in (datasetName, id) order, as a
// release would select them, and counts their tags into tags.
func (x *Exporter) currentItems(ctx context.Context, sel releaseSelection, tags map[string]int) iter.Seq2[ReleaseItem, error] {
	spec := gtc.ScanSpec{Order: gtc.ByDatasetID}
	if sel.Status != "" {
		spec.Statuses = []gtc.Status{gtc.Status(sel.Status)}
	}
	if sel.Datasets != nil {
		spec.DatasetNames = uniqueSorted(sel.Datasets)
	}
	keep := tagSelect(uniqueSorted(sel.Tags), uniqueSorted(sel.ExcludeTags))
	return func(yield func(ReleaseItem, error) bool) {
		for cursor := ""; ; {
			p, err := x.items.Scan(ctx, spec, cursor, x.pageSize)
			if err != nil {
				yield(ReleaseItem{}, fmt.Errorf("export: current items: %w", err))
				return
			}
			for _, it := range p.Items {
				if keep != nil && !keep(it) {
					continue
				}
				for _, t := range it.Tags() {
					tags[t]++
				}
				if !yield(ReleaseItem{DatasetName: it.DatasetName, Bucket: it.Bucket, ID: it.ID, Revision: it.Revision}, nil) {
					return
				}
			}
			if p.Next == "" {
				return
			}
			cursor = p.Next
		}
	}
}

// fieldChanges sets the changes of the changed items from their revision history, or says
// why there are none.
func (x *Exporter) fieldChanges(ctx context.Context, items []DiffItem) error {
	for i := range items {
		it := &items[i]
		if it.Kind != DiffChanged {
			continue
		}
		from, to := *it.FromRevision, *it.ToRevision
		if from == to {
			it.Changes = []gtc.PatchOp{} // the same revision: only the exported content differs
			continue
		}
		if x.revisionDiff == nil {
			it.ChangesUnavailable = "This server does not read item history, so field-level changes are not given."
			continue
		}
		ops, err := x.revisionDiff(ctx, gtc.Key{DatasetName: it.DatasetName, Bucket: it.Bucket, ID: it.ID}, from, to)
		if ge, ok := gtc.AsError(err); ok && ge.Code == gtc.CodeNotFound {
			if ge.Message == gtc.MsgItemNotFound {
				it.ChangesUnavailable = "The item is no longer stored, so its revisions cannot be compared."
			} else {
				it.ChangesUnavailable = fmt.Sprintf("The item's history no longer holds every revision from %d to %d: "+
					"retention pruned them, or history was off when they were written.", min(from, to), max(from, to))
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("export: changes of %s/%s from revision %d to %d: %w", it.DatasetName, it.ID, from, to, err)
		}
		if ops == nil {
			ops = []gtc.PatchOp{}
		}
		it.Changes = ops
	}
	return nil
}
