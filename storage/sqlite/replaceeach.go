package sqlite

import (
	"context"
	"runtime"
	"sync"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
	"github.com/gtc-dev/gtc/storage/internal/parallel"
)

// replaceChunk is the most items of a ReplaceEach one queued write holds. A replace takes the
// writer about a quarter of a millisecond, so a full chunk holds it for about 15 ms: its
// statements and its commit are shared widely, and a curator's write queued behind it
// hardly notices.
const replaceChunk = 64

// ReplaceEach writes each pair as Replace does, each standing or falling alone, and returns
// each one's stored item or error in order.
//
// The pairs are prepared (encoded, checked, their revisions made) on every CPU, a chunk ahead
// of the writer. Each chunk is one queued write: one read of its items' stored columns, per
// item the row and its revisions, then the tag rows its items lose in one statement and those
// they gain in one per dataset and status. An item that is gone or whose ETag changed writes
// nothing, so it needs no savepoint of its own. Two chunks are in flight, so the next is queued while one
// commits, and the writer does not wait for company for them (writeBulk). When anything else fails inside a chunk, its write is undone as a whole and its
// items are written again one at a time, so that each gets its own outcome.
func (is *itemStore) ReplaceEach(ctx context.Context, pairs []gtc.Replacement) ([]*gtc.Item, []error) {
	out := make([]*gtc.Item, len(pairs))
	errs := make([]error, len(pairs))
	if len(pairs) == 0 {
		return out, errs
	}
	for i, err := range gtc.RepeatedReplaceInCall(pairs) {
		errs[i] = err
	}
	ps := make([]*preparedItem, len(pairs))
	// Equal chunks: 100 items are two writes of 50, not one of 64 and one of 36.
	chunks := (len(pairs) + replaceChunk - 1) / replaceChunk
	size := (len(pairs) + chunks - 1) / chunks
	ready := make(chan []int, 1)
	go func() {
		defer close(ready)
		for start := 0; start < len(pairs); start += size {
			end := min(start+size, len(pairs))
			is.prepareReplaces(ctx, pairs[start:end], ps[start:end], errs[start:end])
			var chunk []int
			for i := start; i < end; i++ {
				if errs[i] == nil {
					chunk = append(chunk, i)
				}
			}
			ready <- chunk
		}
	}()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for chunk := range ready {
				is.replaceChunk(ctx, chunk, pairs, ps, errs)
			}
		})
	}
	wg.Wait()
	for i, p := range ps {
		if errs[i] == nil {
			out[i] = p.stored
		}
	}
	return out, errs
}

// prepareReplaces prepares pairs into ps (or their errors into errs) on every CPU, all but
// those already refused. A pair left unprepared because ctx ended gets ctx's error.
func (is *itemStore) prepareReplaces(ctx context.Context, pairs []gtc.Replacement, ps []*preparedItem, errs []error) {
	_ = parallel.ForEach(ctx, len(pairs), runtime.GOMAXPROCS(0), func(ctx context.Context, i int) error {
		if errs[i] == nil {
			ps[i], errs[i] = is.s.prepareReplace(ctx, pairs[i].Prev, pairs[i].Next)
		}
		return nil // each item stands or falls alone
	})
	for i := range pairs {
		if errs[i] == nil && ps[i] == nil {
			errs[i] = wrapErr("replace", ctx.Err())
		}
	}
}

// replaceChunk writes the prepared items ps[i] of chunk in one queued write, setting errs[i]
// for each.
func (is *itemStore) replaceChunk(ctx context.Context, chunk []int, pairs []gtc.Replacement, ps []*preparedItem, errs []error) {
	if len(chunk) == 0 {
		return
	}
	st := &is.s.stmts
	refused := make([]error, len(chunk))
	err := is.s.writeBulk(ctx, "replace", func(w *wtx) error {
		curs, err := currentEach(w, st, chunk, pairs)
		if err != nil {
			return err
		}
		var tags tagChanges
		for n, i := range chunk {
			prev := pairs[i].Prev
			if refused[n] = replaceRefused(prev, curs[n]); refused[n] != nil {
				continue // nothing of it is written
			}
			if err := applyReplace(w, st, prev, *curs[n], ps[i], &tags); err != nil {
				return err
			}
		}
		return tags.flush(w, st)
	})
	if err == nil {
		for n, i := range chunk {
			errs[i] = refused[n]
		}
		return
	}
	for _, i := range chunk {
		errs[i] = is.writeReplace(ctx, pairs[i].Prev, ps[i])
	}
}

// currentEach reads the stored columns of the items of chunk's pairs in the write transaction,
// in one statement: nil for an item that is not stored.
func currentEach(w *wtx, st *statements, chunk []int, pairs []gtc.Replacement) ([]*storedColumns, error) {
	keys := append(make([]byte, 0, 64*len(chunk)), '[')
	for n, i := range chunk {
		if n > 0 {
			keys = append(keys, ',')
		}
		k := pairs[i].Prev.Key()
		keys = append(codec.AppendString(append(keys, '['), k.DatasetName), ',')
		keys = append(codec.AppendString(keys, k.ID), ']')
	}
	rows, err := w.stmt(st.currentOfEach).Query(string(append(keys, ']')))
	if err != nil {
		return nil, wrapErr("replace", err)
	}
	defer rows.Close()
	curs := make([]*storedColumns, len(chunk))
	for rows.Next() {
		var n int
		cur := new(storedColumns)
		if err := rows.Scan(append([]any{&n}, cur.dest()...)...); err != nil {
			return nil, wrapErr("replace", err)
		}
		curs[n] = cur
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr("replace", err)
	}
	return curs, nil
}
