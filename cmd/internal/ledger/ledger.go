// Package ledger keeps a client's record of acknowledged writes and checks, after a load or
// a crash, that the server kept every one of them: the proof behind "nothing is lost".
//
// Every write the load makes is conditional (If-Match). An acknowledged write is an edge
// from the ETag it presented (before) to the ETag the server answered (after), with the
// fields it set. A store that keeps every acknowledged write has, for each item, one chain
// of edges from a known starting state (a base: the ETag seen right after import or
// self-serve) to its current ETag, and the current document holds the fields of the last
// edge. Check walks that chain backwards from the current ETag and reports any acknowledged
// write not on it (lost), two acknowledged writes on one base (a conditional write that was
// not), a current state no recorded write explains (a missing item included), an ETag the
// server gave out twice, and fields that differ from the last write's. Writes of unknown
// outcome may fill gaps in the chain, several in a row; of the chains they allow, Check
// takes one that holds every acknowledged write when there is one.
package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"sync"
)

// Key names one item.
type Key struct{ Dataset, Bucket, ID string }

func (k Key) String() string { return k.Dataset + "/" + k.Bucket + "/" + k.ID }

// Fields are the top-level document fields a write set, as JSON values (for example
// {"comment": "c-17", "manualTags": ["intent:action"], "status": "approved"}). Check compares
// them with the current document after a JSON round trip, so []string and []any compare
// equal.
type Fields map[string]any

type write struct {
	before, after string
	fields        Fields
	acked         bool // false: the outcome is unknown (timeout, connection cut, crash)
}

type item struct {
	bases  map[string]bool
	writes []write
}

// Ledger records what a client saw; it is safe for concurrent use.
type Ledger struct {
	mu    sync.Mutex
	items map[Key]*item
}

// New returns an empty ledger.
func New() *Ledger { return &Ledger{items: map[Key]*item{}} }

func (l *Ledger) item(k Key) *item {
	it := l.items[k]
	if it == nil {
		it = &item{bases: map[string]bool{}}
		l.items[k] = it
	}
	return it
}

// Base records an ETag observed as an item's starting state: the state right after the
// client imported it or self-served it, before any write this ledger records.
func (l *Ledger) Base(k Key, etag string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.item(k).bases[etag] = true
}

// Ack records an acknowledged conditional write: If-Match before, answered ETag after, and
// the fields it set.
func (l *Ledger) Ack(k Key, before, after string, f Fields) {
	l.mu.Lock()
	defer l.mu.Unlock()
	it := l.item(k)
	it.writes = append(it.writes, write{before: before, after: after, fields: f, acked: true})
}

// Unknown records a conditional write whose outcome the client never learned (a timeout,
// a cut connection, a killed server). It may or may not have landed; it must not be
// half-applied.
func (l *Ledger) Unknown(k Key, before string, f Fields) {
	l.mu.Lock()
	defer l.mu.Unlock()
	it := l.item(k)
	it.writes = append(it.writes, write{before: before, fields: f})
}

// Current is an item as the server holds it now.
type Current struct {
	Found bool
	ETag  string
	Doc   map[string]any // the item's JSON
}

// Fetch reads the current state of one item.
type Fetch func(ctx context.Context, k Key) (Current, error)

// Problem is one broken promise, for one item.
type Problem struct {
	Key    Key
	Detail string
}

func (p Problem) String() string { return p.Key.String() + ": " + p.Detail }

// Report sums up a check.
type Report struct {
	Items        int // items the ledger names
	Acked        int // acknowledged writes
	Unknown      int // writes with unknown outcome
	UnknownKept  int // of those, how many landed (on the chain)
	Problems     []Problem
	ProblemItems int
}

// OK reports whether every acknowledged write is present.
func (r Report) OK() bool { return len(r.Problems) == 0 }

// Check reads every item the ledger names and verifies its chain. It returns an error only
// when an item could not be read.
func (l *Ledger) Check(ctx context.Context, fetch Fetch) (Report, error) {
	l.mu.Lock()
	keys := make([]Key, 0, len(l.items))
	for k := range l.items {
		keys = append(keys, k)
	}
	l.mu.Unlock()
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	var r Report
	for _, k := range keys {
		cur, err := fetch(ctx, k)
		if err != nil {
			return r, fmt.Errorf("read %s: %w", k, err)
		}
		l.mu.Lock()
		it := l.items[k]
		ps, acked, unknown, kept := checkItem(k, it, cur)
		l.mu.Unlock()
		r.Items++
		r.Acked += acked
		r.Unknown += unknown
		r.UnknownKept += kept
		if len(ps) > 0 {
			r.ProblemItems++
			r.Problems = append(r.Problems, ps...)
		}
	}
	return r, nil
}

func checkItem(k Key, it *item, cur Current) (ps []Problem, acked, unknown, kept int) {
	bad := func(format string, args ...any) {
		ps = append(ps, Problem{Key: k, Detail: fmt.Sprintf(format, args...)})
	}
	byAfter := map[string]int{}
	byBefore := map[string]int{}
	for i, w := range it.writes {
		if !w.acked {
			unknown++
			continue
		}
		acked++
		if j, dup := byBefore[w.before]; dup {
			bad("two acknowledged writes on ETag %s: %s (%s) and %s (%s): a conditional write was not conditional",
				w.before, it.writes[j].after, fieldsText(it.writes[j].fields), w.after, fieldsText(w.fields))
		} else {
			byBefore[w.before] = i
		}
		byAfter[w.after] = i
	}
	if !cur.Found {
		// The ledger names only items the client saw or wrote, and no write it records
		// removes one: a missing item is a state nothing recorded explains, even when
		// none of its writes were acknowledged (an imported item that vanished is lost too).
		if acked > 0 {
			bad("item is gone; %d acknowledged writes lost", acked)
		} else {
			bad("item is gone; no recorded write removed it")
		}
		return ps, acked, unknown, 0
	}
	// Walk back from the current ETag. An ETag no acknowledged write produced may come from
	// a write of unknown outcome on a state of the chain; it must then hold that write's
	// fields, since a write lands whole or not at all.
	if i, ok := byAfter[cur.ETag]; ok {
		if d := fieldsDiff(it.writes[i].fields, cur.Doc); d != "" {
			bad("current document differs from the last acknowledged write (%s → %s): %s", it.writes[i].before, cur.ETag, d)
		}
	}
	w := walker{it: it, byAfter: byAfter, doc: cur.Doc, acked: acked, budget: maxWalk, used: map[int]bool{}, onPath: map[string]bool{}}
	w.search(cur.ETag, true)
	path, ok := w.best, w.found
	if !ok {
		path = w.failPath
	}
	onChain := map[int]bool{}
	for _, i := range path {
		if it.writes[i].acked {
			onChain[i] = true
		} else {
			kept++
		}
	}
	if !ok {
		switch f := w.failure; {
		case !w.failed:
			bad("not checked: its writes of unknown outcome combine in more than %d ways", maxWalk)
		case f.loop:
			bad("ETag %s comes back in its own history: the server reused an ETag", f.etag)
		case f.first:
			bad("current ETag %s was produced by no write this client recorded or tried", f.etag)
		default:
			bad("chain broken at ETag %s: no recorded write produced it", f.etag)
		}
	}
	for i, w := range it.writes {
		if w.acked && !onChain[i] {
			bad("acknowledged write %s → %s (%s) was lost: the current state does not descend from it", w.before, w.after, fieldsText(w.fields))
		}
	}
	return ps, acked, unknown, kept
}

// maxWalk bounds the states one item's search visits (writes of unknown outcome can be
// combined in many ways; an item has few of them in practice).
const maxWalk = 100_000

// walker searches an item's history for the chain of recorded writes that leads from the
// current state back to a base and holds the most acknowledged writes: every one of them,
// when nothing was lost. An acknowledged write that produced a state is the only way on
// from it. Otherwise, when the state is no base, any unused write of unknown outcome may
// have produced it (at the current state only one whose fields the document holds): first
// those on a known state (a base or an acknowledged write's result), newest first, then
// the others, whose starting state the client read but the ledger cannot name (a landed
// write of unknown outcome after another one).
type walker struct {
	it      *item
	byAfter map[string]int
	doc     map[string]any // the current document
	acked   int            // acknowledged writes in all
	budget  int

	path   []int           // the writes of the path being tried, newest first
	used   map[int]bool    // unknown writes on it
	onPath map[string]bool // ETags on it: one seen twice was reused

	found   bool
	best    []int // the base-reaching path with the most acknowledged writes
	bestAck int
	done    bool // best holds every acknowledged write

	failed   bool
	failPath []int // the first path that reached no base, the most plausible one
	failure  walkFailure
}

// walkFailure says where a chain could not be continued.
type walkFailure struct {
	etag  string
	first bool // at the current state
	loop  bool // the ETag came back: a reused ETag
}

func (w *walker) search(etag string, first bool) {
	if w.done || w.budget <= 0 {
		return
	}
	w.budget--
	if w.onPath[etag] {
		w.fail(walkFailure{etag: etag, loop: true})
		return
	}
	w.onPath[etag] = true
	defer delete(w.onPath, etag)
	if i, ok := w.byAfter[etag]; ok {
		w.path = append(w.path, i)
		w.search(w.it.writes[i].before, false)
		w.path = w.path[:len(w.path)-1]
		return
	}
	if w.it.bases[etag] {
		w.reached()
		return
	}
	var known, other []int
	for j := len(w.it.writes) - 1; j >= 0; j-- {
		u := w.it.writes[j]
		if u.acked || w.used[j] || (first && fieldsDiff(u.fields, w.doc) != "") {
			continue
		}
		if _, ok := w.byAfter[u.before]; ok || w.it.bases[u.before] {
			known = append(known, j)
		} else {
			other = append(other, j)
		}
	}
	if len(known)+len(other) == 0 {
		w.fail(walkFailure{etag: etag, first: first})
		return
	}
	for _, j := range append(known, other...) {
		w.used[j] = true
		w.path = append(w.path, j)
		w.search(w.it.writes[j].before, false)
		w.path = w.path[:len(w.path)-1]
		w.used[j] = false
		if w.done {
			return
		}
	}
}

// reached scores the current path, which ends on a base.
func (w *walker) reached() {
	n := 0
	for _, i := range w.path {
		if w.it.writes[i].acked {
			n++
		}
	}
	if !w.found || n > w.bestAck {
		w.found, w.best, w.bestAck = true, slices.Clone(w.path), n
	}
	w.done = n == w.acked
}

func (w *walker) fail(f walkFailure) {
	if !w.failed {
		w.failed, w.failPath, w.failure = true, slices.Clone(w.path), f
	}
}

// fieldsDiff names the first expected field whose value the document does not hold.
func fieldsDiff(want Fields, doc map[string]any) string {
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		w, g := normal(want[n]), normal(doc[n])
		if !reflect.DeepEqual(w, g) {
			return fmt.Sprintf("%s is %s, want %s", n, text(g), text(w))
		}
	}
	return ""
}

func normal(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func text(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func fieldsText(f Fields) string { return text(f) }
