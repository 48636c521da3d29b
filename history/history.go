// Package history reads the revisions of items: a page of an item's history, the item as it
// was after a revision, and the field-level changes between two revisions. The stores record
// the revisions with every item write; this package only reads them, so the API, the agent's
// tools and the command line all answer from the same code.
package history

import (
	"context"
	"fmt"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

// MaxLimit bounds a page of history.
const MaxLimit = 200

// Page is one page of an item's revisions, newest first.
func Page(ctx context.Context, c *gtc.Curator, k gtc.Key, cursor string, limit int) (gtc.RevisionPage, error) {
	if _, err := c.GetItem(ctx, k); err != nil {
		return gtc.RevisionPage{}, err
	}
	return c.Store().Revisions().List(ctx, k.DatasetName, k.ID, cursor, min(max(limit, 1), MaxLimit))
}

// ErrNoRevision is the error of a revision the item does not have.
func ErrNoRevision(k gtc.Key, n int64) error {
	return &gtc.Error{Code: gtc.CodeNotFound, Message: fmt.Sprintf("item %s has no revision %d", k.ID, n)}
}

// At returns the item as it was right after revision n, rebuilt from the current item by
// undoing the later revisions, with its Revision set to n. The ETag is the one the item had
// then.
func At(ctx context.Context, c *gtc.Curator, k gtc.Key, n int64) (*gtc.Item, error) {
	cur, err := c.GetItem(ctx, k)
	if err != nil {
		return nil, err
	}
	return at(ctx, c.Store().Revisions(), cur, n)
}

func at(ctx context.Context, rs gtc.RevisionStore, cur *gtc.Item, n int64) (*gtc.Item, error) {
	its, err := versions(ctx, rs, cur, n)
	if err != nil {
		return nil, err
	}
	return its[0], nil
}

// versions returns the item as it was after each revision of ns, in that order, rebuilt in
// one walk down from the current item: the revisions after the oldest of ns, newest first, a
// page at a time (one read per MaxLimit revisions).
func versions(ctx context.Context, rs gtc.RevisionStore, cur *gtc.Item, ns ...int64) ([]*gtc.Item, error) {
	k := cur.Key()
	out := make([]*gtc.Item, len(ns))
	oldest := cur.Revision
	for _, n := range ns {
		if n < 1 || n > cur.Revision {
			return nil, ErrNoRevision(k, n)
		}
		oldest = min(oldest, n)
	}
	doc := codec.ItemStoredJSON(cur)
	etag, next, cursor := cur.ETag, cur.Revision, ""
	capture := func() error { // the version after revision next, for every n that asks for it
		for i, n := range ns {
			if n != next || out[i] != nil {
				continue
			}
			if n == cur.Revision {
				out[i] = cur
				continue
			}
			it, err := codec.DecodeStoredItem(doc)
			if err != nil {
				return fmt.Errorf("history: %s: %w: %w", k, gtc.ErrUnavailable, err)
			}
			it.Revision, it.ETag = n, etag
			out[i] = it
		}
		return nil
	}
	if err := capture(); err != nil {
		return nil, err
	}
	for next > oldest {
		page, err := rs.List(ctx, k.DatasetName, k.ID, cursor, MaxLimit)
		if err != nil {
			return nil, fmt.Errorf("history: revisions of %s: %w", k, err)
		}
		for _, rev := range page.Revisions {
			if rev.Number <= oldest {
				break
			}
			if rev.Number != next || rev.PrunedBefore != 0 {
				// Not kept (pruned, or never recorded): the version is not rebuilt from the
				// old values of a later revision either.
				return nil, ErrNoRevision(k, oldest)
			}
			if doc, err = codec.ApplyStored(doc, rev.Ops, true); err != nil {
				return nil, fmt.Errorf("history: %s: %w: %w", k, gtc.ErrUnavailable, err)
			}
			etag, next = rev.ETagBefore, next-1
			if err := capture(); err != nil {
				return nil, err
			}
		}
		if page.Next == "" && next > oldest {
			return nil, ErrNoRevision(k, oldest)
		}
		cursor = page.Next
	}
	return out, nil
}

// Diff returns the field-level changes from the item as it was after revision from to the
// item as it was after revision to (to 0: the current revision), both rebuilt in one walk.
func Diff(ctx context.Context, c *gtc.Curator, k gtc.Key, from, to int64) (fromN, toN int64, ops []gtc.PatchOp, err error) {
	cur, err := c.GetItem(ctx, k)
	if err != nil {
		return 0, 0, nil, err
	}
	if to == 0 {
		to = cur.Revision
	}
	its, err := versions(ctx, c.Store().Revisions(), cur, from, to)
	if err != nil {
		return 0, 0, nil, err
	}
	ops, err = codec.DiffItems(its[0], its[1])
	return from, to, ops, err
}

// Restore writes the content of revision n of the item as its next revision (see
// gtc.Curator.RestoreItem); ifMatch is the client's token for the current item.
func Restore(ctx context.Context, c *gtc.Curator, k gtc.Key, n int64, ifMatch string) (*gtc.Item, error) {
	was, err := At(ctx, c, k, n)
	if err != nil {
		return nil, err
	}
	return c.RestoreItem(ctx, k, was, ifMatch)
}
