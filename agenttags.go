package gtc

import (
	"context"
	"sync"
)

// ManualTagsChange is one item of SetManualTagsEach: its key, the ETag its caller saw, and
// the manual tags it gets.
type ManualTagsChange struct {
	Key    Key
	Expect string
	Manual []string
}

// manualTagsReaders is how many items of one SetManualTagsEach are read at once: a store's
// reads run side by side (SQLite's read connections, Cosmos DB's round trips).
const manualTagsReaders = 16

// SetManualTags is SetManualTagsEach for one item.
func (c *Curator) SetManualTags(ctx context.Context, k Key, expect string, manual []string) (*Item, error) {
	out, errs := c.SetManualTagsEach(ctx, []ManualTagsChange{{Key: k, Expect: expect, Manual: manual}})
	return out[0], errs[0]
}

// SetManualTagsEach is the tag save path of the agent tools: for each change it reads the
// item and, when its ETag is still the expected one, saves the change's manual tags through
// the tag pipeline (normalize, strip computed keys, recompute computed tags, run the tag
// rules over manual ∪ computed) with a write conditional on that ETag. Approval rules are
// not applied (tags do not affect approval), updatedAt becomes now and no other field
// changes. The writes go to the store together (ItemStore.ReplaceEach); each item stands or
// falls alone, and its stored item or error is returned in its place.
//
// Errors: ErrNotFound when the item is gone; ErrPreconditionFailed when its ETag is not the
// expected one, before or during the write (never retried: a retry would change a state the
// caller never saw); *TagFormatError or *TagRuleError from the pipeline; any other error is
// the store's.
func (c *Curator) SetManualTagsEach(ctx context.Context, changes []ManualTagsChange) ([]*Item, []error) {
	out := make([]*Item, len(changes))
	errs := make([]error, len(changes))
	pairs := make([]Replacement, len(changes))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(manualTagsReaders, len(changes)) {
		wg.Go(func() {
			for i := range next {
				pairs[i], errs[i] = c.manualTagsPair(ctx, changes[i])
			}
		})
	}
	for i := range changes {
		next <- i
	}
	close(next)
	wg.Wait()

	var ready []Replacement
	var at []int
	for i, p := range pairs {
		if errs[i] == nil {
			ready = append(ready, p)
			at = append(at, i)
		}
	}
	if len(ready) == 0 {
		return out, errs
	}
	written, werrs := c.store.Items().ReplaceEach(ctx, ready)
	for n, i := range at {
		out[i], errs[i] = written[n], werrs[n]
	}
	return out, errs
}

// manualTagsPair reads the item of ch and makes its write: the item as read and the item
// with ch's manual tags.
func (c *Curator) manualTagsPair(ctx context.Context, ch ManualTagsChange) (Replacement, error) {
	cur, err := c.store.Items().Get(ctx, ch.Key)
	if err != nil {
		return Replacement{}, err
	}
	if !SameETag(ch.Expect, cur.ETag) {
		return Replacement{}, ErrPreconditionFailed
	}
	next := cur.Clone()
	if _, err := c.tagger.Prepare(next, ch.Manual, true); err != nil {
		return Replacement{}, err
	}
	next.UpdatedAt = c.now()
	return Replacement{Prev: cur, Next: next}, nil
}
