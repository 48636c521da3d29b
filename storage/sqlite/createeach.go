package sqlite

import (
	"context"
	"errors"
	"runtime"
	"sync"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/internal/parallel"
)

// createChunk is how many items of a CreateEach one queued write holds. A chunk of new items
// takes the writer about 20 ms: long enough that its statements and its commit are shared
// widely, short enough that a curator's write queued behind it hardly notices.
const createChunk = 128

// CreateEach creates the items as Create does, each standing or falling alone, and returns
// each one's error in order.
//
// The items are prepared (encoded, checked, their first revision made) on every CPU, a chunk
// ahead of the writer. Each chunk is one queued write: its item rows one by one, then all its
// tag rows in one statement, with no savepoint per item, since an item whose (datasetName, id)
// exists writes nothing. Two chunks are in flight, so the next is queued while one commits.
// When anything else fails inside a chunk, its write is undone as a whole and its items are
// written again one at a time, so that each gets its own outcome.
func (is *itemStore) CreateEach(ctx context.Context, items []*gtc.Item) []error {
	errs := make([]error, len(items))
	if len(items) == 0 {
		return errs
	}
	for i, err := range gtc.RepeatedInCall(items) {
		errs[i] = err // chunks may commit in either order: the first of an id is the one created
	}
	ps := make([]*preparedItem, len(items))
	chunks := make(chan []int, 1)
	go func() {
		defer close(chunks)
		for start := 0; start < len(items); start += createChunk {
			end := min(start+createChunk, len(items))
			is.prepareEach(ctx, items[start:end], ps[start:end], errs[start:end])
			var ready []int
			for i := start; i < end; i++ {
				if errs[i] == nil {
					ready = append(ready, i)
				}
			}
			chunks <- ready
		}
	}()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for chunk := range chunks {
				is.createChunk(ctx, chunk, ps, errs)
			}
		})
	}
	wg.Wait()
	return errs
}

// prepareEach prepares items into ps (or their errors into errs) on every CPU, all but those
// already refused.
func (is *itemStore) prepareEach(ctx context.Context, items []*gtc.Item, ps []*preparedItem, errs []error) {
	_ = parallel.ForEach(ctx, len(items), runtime.GOMAXPROCS(0), func(ctx context.Context, i int) error {
		if errs[i] == nil {
			ps[i], errs[i] = is.s.prepareItem(ctx, "create", nil, items[i])
		}
		return nil // each item stands or falls alone
	})
}

// createChunk writes the prepared items ps[i] of chunk in one queued write, setting errs[i]
// for each.
func (is *itemStore) createChunk(ctx context.Context, chunk []int, ps []*preparedItem, errs []error) {
	if len(chunk) == 0 {
		return
	}
	st := &is.s.stmts
	conflicts := make([]error, len(chunk))
	err := is.s.write(ctx, "create", func(w *wtx) error {
		var rows tagRows
		for n, i := range chunk {
			p := ps[i]
			head, err := planRevisions(w, st, p, "create", 0)
			if err != nil {
				return err
			}
			pk, err := insertItemRow(w, st, p, "create", head)
			if _, exists := errors.AsType[*gtc.ConflictError](err); exists {
				conflicts[n] = err
				continue
			}
			if err != nil {
				return err
			}
			rows.add(pk, p.stored.DatasetName, string(p.stored.Status), p.tags)
			if err := insertRevisionRows(w, st, p, "create"); err != nil {
				return err
			}
		}
		return wrapErr("create tags", rows.insert(w, st))
	})
	if err == nil {
		for n, i := range chunk {
			errs[i] = conflicts[n]
		}
		return
	}
	for _, i := range chunk {
		errs[i] = is.s.write(ctx, "create", func(w *wtx) error { return insertItem(w, st, ps[i]) })
	}
}
