package screen

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/gtc-dev/gtc"
)

// Run screens the batches of one import run. Its PII warnings are Screen's; its duplicate
// check reads the candidates of a dataset once per run instead of once per batch: the first
// batch with a draft of the dataset reads them as Screen does (its DuplicateCandidateLimit
// most recently updated approved items, after that batch's writes) and signs them. From
// then on, the approved items that each batch creates in the dataset join the candidates in
// the store's order (most recently updated first; an item imported with an older updatedAt
// takes its place by that time), the oldest beyond DuplicateCandidateLimit drop out, and no
// candidate is signed twice. A batch's drafts are still checked against the approved items
// of that same batch.
//
// Which entries were created is read from the ImportResult: every entry for which it lists
// no error. So every batch of the run goes through Screen after its writes, in order, as the
// curator does. While nothing else writes to the store, each batch gets exactly the warnings
// Screen would give it. Writes by others during the run are not seen until the next run: an
// approved item created elsewhere is no candidate, and one edited or deleted elsewhere is
// still compared as it was read.
//
// A Run serves one run, one batch after the other; its calls are serialized. Its duplicate
// state grows with the datasets of the run, up to DuplicateCandidateLimit items each.
type Run struct {
	s        *Screen
	mu       sync.Mutex
	sg       dupSigner
	datasets map[string]*runDataset // the datasets whose candidates were read
}

// runDataset is the state of one dataset in a Run: its candidates in candidate order, each
// with its sort key, and their index, nil until a batch needs it after they changed.
type runDataset struct {
	cands []*dupCandidate
	index *dupIndex
}

// ForRun returns the screen of one import run, with the checks of s; a nil s gives a nil
// Run, which screens nothing.
func (s *Screen) ForRun() *Run {
	if s == nil {
		return nil
	}
	return &Run{s: s, datasets: map[string]*runDataset{}}
}

// Screen appends the PII warnings of every entry, then the duplicate warnings of the drafts
// among them, to res, as Screen does; res must hold the batch's errors, so that the approved
// items it created become candidates.
func (r *Run) Screen(ctx context.Context, entries []*gtc.ImportEntry, res *gtc.ImportResult) {
	if r == nil {
		return
	}
	r.s.pii(entries, res)
	if !r.s.opts.Duplicates {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// The datasets read in earlier batches take this batch's approved items first; a dataset
	// first read below is read after this batch's writes and finds them in the store.
	r.add(entries, res)
	res.DuplicateWarnings = duplicateWarnings(entryItems(entries), func(dataset string) *dupIndex {
		return r.index(ctx, dataset)
	}, &r.sg)
}

// index returns the index of the candidates of dataset, reading and signing them the first
// time. A failed read is not remembered: the next batch with a draft of the dataset reads
// again.
func (r *Run) index(ctx context.Context, dataset string) *dupIndex {
	d := r.datasets[dataset]
	if d == nil {
		items, ok := r.s.candidates(ctx, dataset)
		if !ok {
			return newDupIndex(nil)
		}
		d = &runDataset{cands: signCandidates(dataset, items, &r.sg)}
		for _, c := range d.cands {
			c.key = gtc.UpdatedAtSortKey(c.item)
		}
		r.datasets[dataset] = d
	}
	if d.index == nil {
		d.index = newDupIndex(d.cands)
	}
	return d.index
}

// add merges the approved items that the batch of entries created into the candidates of
// the datasets already read. An entry was created when res lists no error for it.
func (r *Run) add(entries []*gtc.ImportEntry, res *gtc.ImportResult) {
	if len(r.datasets) == 0 {
		return
	}
	failed := make([]bool, len(entries))
	for _, e := range res.Errors {
		if e.Index >= 0 && e.Index < len(entries) {
			failed[e.Index] = true
		}
	}
	var created map[string][]*gtc.Item
	for i, e := range entries {
		it := e.Item
		if failed[i] || it == nil || it.Status != gtc.StatusApproved || r.datasets[it.DatasetName] == nil {
			continue
		}
		if created == nil {
			created = map[string][]*gtc.Item{}
		}
		created[it.DatasetName] = append(created[it.DatasetName], it)
	}
	for dataset, items := range created {
		r.datasets[dataset].merge(items, &r.sg)
	}
}

// merge places items, approved items of the dataset just created, among the candidates by
// their sort keys, and keeps the first DuplicateCandidateLimit. Only the new items that are
// kept are signed; the index is rebuilt when the candidates changed.
func (d *runDataset) merge(items []*gtc.Item, sg *dupSigner) {
	type created struct {
		key  string
		item *gtc.Item
	}
	news := make([]created, len(items))
	for i, it := range items {
		news[i] = created{gtc.UpdatedAtSortKey(it), it}
	}
	// Descending, as the store lists them; keys are unique within a dataset (they end in
	// the id).
	slices.SortFunc(news, func(a, b created) int { return cmp.Compare(b.key, a.key) })
	merged := make([]*dupCandidate, 0, min(len(d.cands)+len(news), DuplicateCandidateLimit))
	i, j := 0, 0
	for len(merged) < DuplicateCandidateLimit && (i < len(d.cands) || j < len(news)) {
		if j < len(news) && (i == len(d.cands) || news[j].key > d.cands[i].key) {
			c := signCandidate(news[j].item, sg)
			c.key = news[j].key
			merged = append(merged, &c)
			j++
			continue
		}
		merged = append(merged, d.cands[i])
		i++
	}
	if j == 0 {
		return // every new item sorts after the last candidate kept: nothing changed
	}
	d.cands, d.index = merged, nil
}

// Interface check.
var _ gtc.ImportScreen = (*Run)(nil)
