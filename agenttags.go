package gtc

import "context"

// SetManualTags is the tag save path of the agent tools: it reads k and, when the item's ETag
// is still expect, saves manual as its manual tags through the tag pipeline (normalize, strip
// computed keys, recompute computed tags, run the tag rules over manual ∪ computed) with a
// write conditional on expect. Approval rules are not applied (tags do not affect approval),
// updatedAt becomes now and no other field changes.
//
// Errors: ErrNotFound when the item is gone; ErrPreconditionFailed when its ETag is not
// expect, before or during the write (never retried: a retry would change a state the
// caller never saw); *TagFormatError or *TagRuleError from the pipeline; any other error is
// the store's.
func (c *Curator) SetManualTags(ctx context.Context, k Key, expect string, manual []string) (*Item, error) {
	cur, err := c.store.Items().Get(ctx, k)
	if err != nil {
		return nil, err
	}
	if !SameETag(expect, cur.ETag) {
		return nil, ErrPreconditionFailed
	}
	next := cur.Clone()
	if _, err := c.tagger.Prepare(next, manual, true); err != nil {
		return nil, err
	}
	next.UpdatedAt = c.now()
	return c.store.Items().Replace(ctx, cur, next)
}
