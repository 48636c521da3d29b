package importer_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/importer"
	"github.com/gtc-dev/gtc/screen"
	"github.com/gtc-dev/gtc/storage/sqlite"
	"github.com/gtc-dev/gtc/tagging"
)

// t0 is the start of the import runs' clock; the seeded items are older.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// stepClock reads t0 and then a millisecond later on every read, so that the items of a run
// get distinct, increasing update times, the same in every run of the same input.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.now
	c.now = c.now.Add(time.Millisecond)
	return t
}

// countingItems counts the queries of each dataset.
type countingItems struct {
	gtc.ItemStore
	mu      sync.Mutex
	queries map[string]int
}

func (c *countingItems) Query(ctx context.Context, q gtc.Query) (gtc.QueryPage, error) {
	c.mu.Lock()
	c.queries[strings.Join(q.Filter.DatasetNames, ",")]++
	c.mu.Unlock()
	return c.ItemStore.Query(ctx, q)
}

// seedItem is an approved item of the store before the run.
func seedItem(dataset string, n int, updated time.Time) *gtc.Item {
	it := gtc.NewItem(dataset, fmt.Sprintf("seed-%04d", n))
	it.Bucket = gtc.DeriveBucket(it.DatasetName, it.ID)
	it.Status = gtc.StatusApproved
	it.History = []gtc.HistoryEntry{{Role: "user", Msg: fmt.Sprintf("%s seeded question %d", dataset, n)}, {Role: "assistant", Msg: "An answer."}}
	it.Metadata = json.RawMessage(fmt.Sprintf(`{"n": %d}`, n))
	it.UpdatedAt = updated
	return it
}

// importStore opens a store holding seed and a curator over it whose import screen is
// screenOf(a duplicate-only Screen reading through the returned counter).
func importStore(t *testing.T, seed []*gtc.Item, screenOf func(*screen.Screen) gtc.ImportScreen) (*gtc.Curator, *countingItems) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(t.TempDir(), "gtc.db"), Synchronous: "NORMAL"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	for i, err := range st.Items().CreateEach(ctx, seed) {
		require.NoError(t, err, "seed %d", i)
	}
	reg, err := tagging.NewDefaultRegistry()
	require.NoError(t, err)
	groups, err := tagging.LoadGroups("")
	require.NoError(t, err)
	validators, err := tagging.NewValidators(nil, groups.Schema())
	require.NoError(t, err)
	clock := &stepClock{now: t0}
	vocab := tagging.NewVocabulary(reg, nil, groups, st.TagStore(), st.TagDefinitions(), clock, nil)
	items := &countingItems{ItemStore: st.Items(), queries: map[string]int{}}
	scr := screen.New(screen.Options{Duplicates: true, Items: items})
	cur := gtc.NewCurator(gtc.CuratorDeps{Store: st, Tagger: tagging.NewPipeline(reg, validators, nil), Vocabulary: vocab,
		Clock: clock, IDs: gtc.NewIDGenerator(rand.Reader), ImportScreen: screenOf(scr)})
	return cur, items
}

// runImport imports lines (JSON lines) in batches of batch and returns every report line.
func runImport(t *testing.T, cur *gtc.Curator, lines []string, batch int) []importer.ReportLine {
	t.Helper()
	var report []importer.ReportLine
	im := &importer.Importer{
		Curator: cur, BatchSize: batch,
		Sum:    importer.Summary{WarningCounts: map[string]int{}, ErrorSamples: []importer.Issue{}},
		Report: func(l importer.ReportLine) { report = append(report, l) },
	}
	body := strings.Join(lines, "\n") + "\n"
	src := importer.Source{Name: "input.jsonl", Format: "jsonl", Open: func(context.Context) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader([]byte(body))), nil
	}}
	ctx := gtc.WithCaller(context.Background(), gtc.Caller{UserID: "cli:test"})
	require.NoError(t, im.Run(ctx, []importer.Source{src}))
	return report
}

// element is one input line: an item of dataset with id and status, whose question is q.
func element(dataset, id, status, q string, extra ...string) string {
	fields := []string{
		fmt.Sprintf(`"datasetName": %q`, dataset), fmt.Sprintf(`"id": %q`, id), fmt.Sprintf(`"status": %q`, status),
		fmt.Sprintf(`"history": [{"role": "user", "msg": %q}, {"role": "assistant", "msg": "An answer."}]`, q),
	}
	return "{" + strings.Join(append(fields, extra...), ", ") + "}"
}

// dupRun is the input of the differential test, in batches of 50: several datasets; a store with more
// approved items than DuplicateCandidateLimit in one dataset and 10 fewer in another; approved
// items created in the run that drafts of the same and of later batches repeat, enough to
// push most seeded candidates out; approved items the import refuses.
type dupRun struct {
	seed  []*gtc.Item
	lines []string
	batch int
}

// seeded is the question of seed item n of dataset.
func seeded(dataset string, n int) string { return fmt.Sprintf("%s seeded question %d", dataset, n) }

func newDupRun() dupRun {
	r := dupRun{batch: 50}
	// Seed item n of a dataset was updated 2000-n minutes before t0. In "full",
	// seed-0000 … seed-0049 are beyond the limit.
	for n := range screen.DuplicateCandidateLimit + 50 {
		r.seed = append(r.seed, seedItem("full", n, t0.Add(-time.Duration(2000-n)*time.Minute)))
	}
	for n := range screen.DuplicateCandidateLimit - 10 {
		r.seed = append(r.seed, seedItem("half", n, t0.Add(-time.Duration(2000-n)*time.Minute)))
	}
	add := func(l string) { r.lines = append(r.lines, l) }
	// fill pads the input with drafts that repeat nothing, up to the end of batch b.
	fill := func(b int) {
		if len(r.lines) > r.batch*b {
			panic(fmt.Sprintf("batch %d overflows", b))
		}
		for len(r.lines) < r.batch*b {
			add(element("fresh", fmt.Sprintf("filler-%d", len(r.lines)), "draft", fmt.Sprintf("nothing like it %d", len(r.lines))))
		}
	}

	// Batch 1: drafts of seeded items at the end of the candidates, and approved items that
	// drafts of this batch and of later ones repeat.
	add(element("full", "b1-d-full-60", "draft", seeded("full", 60)))
	add(element("full", "b1-d-full-50", "draft", seeded("full", 50))) // pushed out by b1-a-y
	add(element("full", "b1-d-full-49", "draft", seeded("full", 49))) // beyond the limit from the start
	add(element("half", "b1-d-half-5", "draft", seeded("half", 5)))
	add(element("fresh", "b1-a-x", "approved", "fresh question x"))
	add(element("fresh", "b1-d-x", "draft", "Fresh  question X"))
	add(element("full", "b1-a-y", "approved", "full question y"))
	add(element("full", "b1-d-y", "draft", "full question y"))
	add(element("late", "b1-a-late", "approved", "late question"))
	add(element("fresh", "b1-a-meta", "approved", "meta question 1", `"metadata": {"k": 1, "tool": "x"}`))
	add(element("fresh", "b1-d-meta", "draft", "meta question 2", `"metadata": {"tool": "x", "k": 1}`))
	fill(1)

	// Batch 2: 20 approved items each in "full" and "half" push their oldest candidates
	// out; refused approved items.
	for n := range 20 {
		add(element("full", fmt.Sprintf("b2-a-full-%02d", n), "approved", fmt.Sprintf("full new question %d", n)))
		add(element("half", fmt.Sprintf("b2-a-half-%02d", n), "approved", fmt.Sprintf("half new question %d", n)))
	}
	add(element("full", "seed-0500", "approved", "exists already"))                          // DUPLICATE_ID
	add(element("full", "b2-a-tag", "approved", "unknown tag", `"manualTags": ["no:such"]`)) // INVALID_TAG
	add(element("fresh", "b2-a-twice", "approved", "twice question"))
	add(element("fresh", "b2-a-twice", "approved", "second of twice")) // DUPLICATE_ID, same batch
	add(element("fresh", "b2-d-x", "draft", "fresh question x"))
	fill(2)

	// Batch 3: approved items imported with their own update time: older than every
	// candidate of "full", between two of its candidates, and three equal times.
	mid := t0.Add(-1500*time.Minute + 30*time.Second) // between seed-0500 and seed-0501
	add(element("full", "b3-a-old", "approved", "old question", `"updatedAt": "2020-01-01T00:00:00Z"`))
	add(element("full", "b3-a-mid", "approved", "mid question", fmt.Sprintf(`"updatedAt": %q`, mid.Format(time.RFC3339))))
	add(element("fresh", "b3-a-tie-1", "approved", "tie question", `"updatedAt": "2026-02-01T00:00:00Z"`))
	add(element("fresh", "b3-a-tie-2", "approved", "tie question", `"updatedAt": "2026-02-01T00:00:00Z"`))
	add(element("fresh", "b3-a-tie-0", "approved", "tie question", `"updatedAt": "2026-02-01T00:00:00Z"`))
	add(element("fresh", "b3-d-tie", "draft", "tie question"))
	add(element("fresh", "b3-a-scenario", "approved", "meta question 3", `"scenarioId": "s1"`, `"metadata": {"k": 1, "tool": "x"}`))
	fill(3)

	// Batch 4: drafts of the seeded items again, and of everything the run added.
	add(element("full", "b4-d-full-60", "draft", seeded("full", 60))) // pushed out in batch 2
	add(element("full", "b4-d-full-90", "draft", seeded("full", 90)))
	add(element("full", "b4-d-full-500", "draft", seeded("full", 500)))
	add(element("half", "b4-d-half-5", "draft", seeded("half", 5))) // pushed out in batch 2
	add(element("half", "b4-d-half-25", "draft", seeded("half", 25)))
	add(element("fresh", "b4-d-x", "draft", "fresh question x"))
	add(element("full", "b4-d-y", "draft", "full question y"))
	add(element("full", "b4-d-new", "draft", "full new question 7"))
	add(element("half", "b4-d-new-half", "draft", "half new question 19"))
	add(element("full", "b4-d-exists", "draft", "exists already"))
	add(element("full", "b4-d-tag", "draft", "unknown tag"))
	add(element("fresh", "b4-d-twice", "draft", "second of twice"))
	add(element("fresh", "b4-d-twice-1", "draft", "twice question"))
	add(element("full", "b4-d-old", "draft", "old question"))
	add(element("full", "b4-d-mid", "draft", "mid question"))
	add(element("fresh", "b4-d-tie", "draft", "tie question"))
	add(element("late", "b4-d-late", "draft", "late question"))
	add(element("fresh", "b4-d-meta", "draft", "meta question 4", `"metadata": {"k": 1, "tool": "X"}`))
	add(element("fresh", "b4-d-scenario", "draft", "meta question 5", `"scenarioId": "S1"`, `"metadata": {"k": 1, "tool": "x"}`))
	fill(4)

	// Batches 5 to 25: 503 approved items each in "full" and "half", two per question, in
	// batches without drafts; the last batch also holds drafts.
	for n := range 1006 {
		ds := []string{"full", "half"}[n%2]
		add(element(ds, fmt.Sprintf("bulk-%04d", n), "approved", fmt.Sprintf("bulk question %d", n/4)))
	}
	add(element("full", "b25-d-bulk-1", "draft", "bulk question 1"))
	add(element("half", "b25-d-bulk-125", "draft", "bulk question 125"))
	add(element("full", "b25-d-bulk-251", "draft", "bulk question 251")) // created in this batch
	add(element("full", "b25-d-y", "draft", "full question y"))
	add(element("full", "b25-d-mid", "draft", "mid question"))           // pushed out by the bulk
	add(element("full", "b25-d-full-573", "draft", seeded("full", 573))) // pushed out by the bulk
	add(element("full", "b25-d-full-574", "draft", seeded("full", 574)))
	add(element("half", "b25-d-half-25", "draft", seeded("half", 25))) // pushed out by the bulk
	fill(25)

	// Batch 26: drafts once nothing is added any more.
	add(element("full", "b26-d-new", "draft", "full new question 7"))
	add(element("half", "b26-d-bulk-125", "draft", "bulk question 125"))
	add(element("full", "b26-d-full-574", "draft", seeded("full", 574)))
	return r
}

// warned lists each item's duplicate warnings as "item>duplicate: reason", in report order.
func warned(report []importer.ReportLine) map[string][]string {
	out := map[string][]string{}
	for _, l := range report {
		for _, w := range l.DuplicateWarnings {
			key := *l.DatasetName + "/" + *l.ID
			out[key] = append(out[key], w.DuplicateID+": "+w.MatchReason)
		}
	}
	return out
}

// A run screened by one Run reports exactly what screening every batch against the store
// reports.
func TestRunScreenGivesThePerBatchWarnings(t *testing.T) {
	r := newDupRun()
	perBatch, _ := importStore(t, r.seed, func(s *screen.Screen) gtc.ImportScreen { return s })
	want := runImport(t, perBatch, r.lines, r.batch)
	run, _ := importStore(t, r.seed, func(s *screen.Screen) gtc.ImportScreen { return s.ForRun() })
	got := runImport(t, run, r.lines, r.batch)
	assert.Equal(t, want, got)

	// The run exercises what it is meant to: the per-batch answers themselves.
	w := warned(want)
	qa := ": " + screen.MatchQuestionAndAnswer
	for id, dups := range map[string][]string{
		"full/b1-d-full-60":   {"seed-0060"},
		"full/b1-d-full-50":   nil, // pushed out by an approved item of its own batch
		"full/b1-d-full-49":   nil,
		"half/b1-d-half-5":    {"seed-0005"},
		"fresh/b1-d-x":        {"b1-a-x"}, // an approved item of the same batch
		"fresh/b1-d-meta":     {"b1-a-meta: " + screen.MatchGeneric},
		"full/b1-d-y":         {"b1-a-y"},
		"fresh/b2-d-x":        {"b1-a-x"}, // of an earlier batch
		"fresh/b3-d-tie":      {"b3-a-tie-2", "b3-a-tie-1", "b3-a-tie-0"},
		"full/b4-d-full-60":   nil,
		"full/b4-d-full-90":   {"seed-0090"},
		"full/b4-d-full-500":  {"seed-0500"},
		"half/b4-d-half-5":    nil,
		"half/b4-d-half-25":   {"seed-0025"},
		"fresh/b4-d-x":        {"b1-a-x"},
		"full/b4-d-y":         {"b1-a-y"},
		"full/b4-d-new":       {"b2-a-full-07"},
		"half/b4-d-new-half":  {"b2-a-half-19"},
		"full/b4-d-exists":    nil, // the refused item is no candidate
		"full/b4-d-tag":       nil,
		"fresh/b4-d-twice":    nil,
		"fresh/b4-d-twice-1":  {"b2-a-twice"},
		"full/b4-d-old":       nil, // older than every candidate
		"full/b4-d-mid":       {"b3-a-mid"},
		"fresh/b4-d-tie":      {"b3-a-tie-2", "b3-a-tie-1", "b3-a-tie-0"},
		"late/b4-d-late":      {"b1-a-late"}, // read after the run created it
		"fresh/b4-d-meta":     {"b1-a-meta: " + screen.MatchGeneric},
		"fresh/b4-d-scenario": {"b3-a-scenario: " + screen.MatchGeneric},
		"full/b25-d-bulk-1":   {"bulk-0006", "bulk-0004"},
		"half/b25-d-bulk-125": {"bulk-0503", "bulk-0501"},
		"full/b25-d-bulk-251": {"bulk-1004"},
		"full/b25-d-y":        {"b1-a-y"},
		"full/b25-d-mid":      nil,
		"full/b25-d-full-573": nil,
		"full/b25-d-full-574": {"seed-0574"},
		"half/b25-d-half-25":  nil,
		"full/b26-d-new":      {"b2-a-full-07"},
		"half/b26-d-bulk-125": {"bulk-0503", "bulk-0501"},
		"full/b26-d-full-574": {"seed-0574"},
	} {
		var want []string
		for _, d := range dups {
			if !strings.Contains(d, ": ") {
				d += qa // the reason of most
			}
			want = append(want, d)
		}
		assert.Equal(t, want, w[id], id)
	}
}

// A Run reads the candidates of each dataset once per run, where Screen reads them for
// every batch with a draft of the dataset.
func TestRunScreenReadsEachDatasetOnce(t *testing.T) {
	var seed []*gtc.Item
	for n := range 20 {
		seed = append(seed, seedItem([]string{"a", "b"}[n%2], n, t0.Add(-time.Duration(n)*time.Minute)))
	}
	// Six batches of ten: approved items and drafts of "a" in each, drafts of "b" in every
	// other one, and "c" from the third on.
	var lines []string
	for b := range 6 {
		for n := range 10 {
			ds := "a"
			switch {
			case n%3 == 1 && b%2 == 0:
				ds = "b"
			case n%3 == 2 && b >= 2:
				ds = "c"
			}
			status := []string{"draft", "approved"}[n%2]
			lines = append(lines, element(ds, fmt.Sprintf("e-%d-%d", b, n), status, fmt.Sprintf("question %d", (b+n)%3)))
		}
	}
	perBatch, perBatchItems := importStore(t, seed, func(s *screen.Screen) gtc.ImportScreen { return s })
	want := runImport(t, perBatch, lines, 10)
	run, runItems := importStore(t, seed, func(s *screen.Screen) gtc.ImportScreen { return s.ForRun() })
	got := runImport(t, run, lines, 10)
	assert.Equal(t, map[string]int{"a": 6, "b": 3, "c": 4}, perBatchItems.queries, "one read per batch with a draft of the dataset")
	assert.Equal(t, map[string]int{"a": 1, "b": 1, "c": 1}, runItems.queries, "one read per dataset")
	assert.Equal(t, want, got)
	assert.NotEmpty(t, warned(got))
}
