package codec

import (
	"time"

	"github.com/gtc-dev/gtc"
)

// Retention. A store that prunes revisions does so inside the item write that records a new
// one, a bounded number at a time, so no write costs more than a fixed amount of work however
// long an item's history has grown. PlanPrune decides what one write prunes; the store reads
// the item's oldest revisions, writes what the plan keeps and deletes what it drops, all in
// the write's own transaction.

// Prune is what one write does to an item's revisions.
type Prune struct {
	// Write are the revisions the write records: the ones it was about to record, less those
	// retention drops at once (a baseline older than the age limit), the first of them
	// carrying PrunedBefore and Base when it becomes the oldest kept.
	Write []*gtc.Revision
	// Delete are the numbers of stored revisions to delete, oldest first.
	Delete []int64
	// Rebased is the stored revision that becomes the oldest kept, with PrunedBefore and Base
	// set, to be written over the stored one; nil when that revision is among Write, or when
	// nothing is pruned.
	Rebased *gtc.Revision
}

// Pruning reports whether p deletes or rewrites a stored revision.
func (p Prune) Pruning() bool { return len(p.Delete) > 0 || p.Rebased != nil }

// MayPrune reports whether a write recording revision number latest at now can prune
// anything under o: when only MaxRevisions applies, an item with at most that many
// revisions numbers needs no read of its stored revisions.
func MayPrune(o gtc.HistoryOptions, latest int64) bool {
	return o.MaxAge > 0 || o.MaxRevisions > 0 && latest > int64(o.MaxRevisions)
}

// PlanPrune decides what a write prunes under o. oldest are the item's stored revisions
// numbered below the write's, in ascending order: the oldest limit+1 of them (fewer when the
// item has fewer). written are the revisions the write records, in ascending order, the last
// one being the latest; doc is the item's stored document after the write. At most limit
// revisions are pruned, oldest first; the latest is never pruned. later, called only when the
// new oldest kept revision cannot be rebuilt forward from the pruned ones (a gap in the
// numbers), returns the stored revisions numbered above n, in ascending order.
func PlanPrune(o gtc.HistoryOptions, oldest, written []*gtc.Revision, doc []byte, now time.Time, limit int,
	later func(n int64) ([]*gtc.Revision, error)) (Prune, error) {
	out := Prune{Write: written}
	if len(written) == 0 || !o.Prunes() {
		return out, nil
	}
	latest := written[len(written)-1].Number
	prunable := func(r *gtc.Revision) bool {
		if r.Number >= latest {
			return false
		}
		return o.MaxRevisions > 0 && r.Number <= latest-int64(o.MaxRevisions) ||
			o.MaxAge > 0 && r.At.Before(now.Add(-o.MaxAge))
	}
	all := append(append(make([]*gtc.Revision, 0, len(oldest)+len(written)), oldest...), written...)
	i := 0
	for i < len(all) && prunable(all[i]) && (i < limit || i >= len(oldest)) {
		i++
	}
	if i == 0 {
		return out, nil
	}
	// The base of each pruned revision in turn, forward, ending with the first kept one.
	var base []byte
	for j := 0; j <= i; j++ {
		base = nextBase(base, all, j)
	}
	first := *all[i]
	if base == nil {
		var err error
		if base, err = baseFromLater(&first, all[i+1:], oldest, doc, later); err != nil {
			return Prune{}, err
		}
	}
	first.PrunedBefore, first.Base = first.Number, base
	for _, r := range all[:min(i, len(oldest))] {
		out.Delete = append(out.Delete, r.Number)
	}
	if i < len(oldest) {
		out.Rebased = &first
		return out, nil
	}
	out.Write = append([]*gtc.Revision{&first}, written[i-len(oldest)+1:]...)
	return out, nil
}

// nextBase is the item after all[j], from base, the item after all[j-1] (nil: unknown).
func nextBase(base []byte, all []*gtc.Revision, j int) []byte {
	r := all[j]
	if len(r.Base) > 0 {
		return r.Base
	}
	if len(r.Ops) == 1 && r.Ops[0].Op == "add" && r.Ops[0].Path == "" {
		return r.Ops[0].Value
	}
	if base == nil || j == 0 || r.Number != all[j-1].Number+1 {
		return nil
	}
	next, err := ApplyStored(base, r.Ops, false)
	if err != nil {
		return nil
	}
	return next
}

// baseFromLater rebuilds the item after first by undoing, from doc (the item after the
// write), every revision above it: those of after (the rest of the ones read and the write's
// own) and, when first is a stored one, the stored ones above those read (from later). nil
// when the numbers above first have a gap: that version cannot be rebuilt.
func baseFromLater(first *gtc.Revision, after, oldest []*gtc.Revision, doc []byte,
	later func(n int64) ([]*gtc.Revision, error)) ([]byte, error) {
	chain := after
	if n := len(oldest); later != nil && n > 0 && first.Number <= oldest[n-1].Number {
		top := oldest[n-1].Number
		rest, err := later(top)
		if err != nil {
			return nil, err
		}
		read := 0
		for read < len(after) && after[read].Number <= top {
			read++
		}
		chain = append(append(append([]*gtc.Revision{}, after[:read]...), rest...), after[read:]...)
	}
	prev := first.Number
	for _, r := range chain {
		if r.Number != prev+1 {
			return nil, nil
		}
		prev = r.Number
	}
	doc, err := ApplyStored(doc, nil, false) // without its revision key
	for k := len(chain) - 1; k >= 0 && err == nil; k-- {
		doc, err = ApplyStored(doc, chain[k].Ops, true)
	}
	if err != nil {
		return nil, nil // the revisions do not undo: the version cannot be rebuilt
	}
	return doc, nil
}
