// The fuzz builds (scripts/fuzz.sh, -tags fuzzing) leave these tests out: they run on the
// SQLite store (sqlite_test.go), which a fuzz build would instrument.

//go:build !fuzzing

package export

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/localfs"
	"github.com/gtc-dev/gtc/storage/storetest/testenv"
)

// failingItems is an item store whose scans fail from page failAt (0-based) on.
type failingItems struct {
	gtc.ItemStore
	failAt int
	pages  atomic.Int32
}

func (f *failingItems) Scan(ctx context.Context, s gtc.ScanSpec, cursor string, limit int) (gtc.ScanPage, error) {
	if int(f.pages.Add(1))-1 >= f.failAt {
		return gtc.ScanPage{}, fmt.Errorf("scan: %w", gtc.ErrUnavailable)
	}
	return f.ItemStore.Scan(ctx, s, cursor, limit)
}

func newExporter(t testing.TB, items gtc.ItemStore, pageSize int) *Exporter {
	pr, fr := Builtins(nil)
	x, err := New(Config{Items: items, Processors: pr, Formatters: fr, PageSize: pageSize, TempDir: t.TempDir(),
		Clock: gtc.NewFakeClock(time.Date(2026, 1, 16, 0, 0, 0, 0, time.UTC))})
	require.NoError(t, err)
	return x
}

func planOf(t testing.TB, x *Exporter, format string, mode string) *Plan {
	st := ""
	p, err := x.Resolve(&gtc.ExportRequest{Format: &format, Status: &st, Mode: mode}, "tester")
	require.NoError(t, err)
	return p
}

func TestStreamStartsAfterTheFirstPage(t *testing.T) {
	st := newSQLite(t)
	fill(t, st, []string{"a"}, 25)
	x := newExporter(t, st.Items(), 10)
	var out bytes.Buffer
	started := -1
	res, err := x.Stream(context.Background(), planOf(t, x, "jsonl", gtc.DeliveryStream), &out, func(r Result) error {
		started = out.Len()
		assert.Equal(t, "ground-truth-items-20260116T000000Z.jsonl", r.FileName)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 0, started, "nothing is written before start")
	assert.Equal(t, 25, res.Count)
	assert.Equal(t, int64(out.Len()), res.Bytes)
	assert.Equal(t, 25, bytes.Count(out.Bytes(), []byte("\n")))
}

func TestStreamFailures(t *testing.T) {
	st := newSQLite(t)
	fill(t, st, []string{"a"}, 50)

	// A store failing on the first page: an ordinary error, nothing written, not started.
	x := newExporter(t, &failingItems{ItemStore: st.Items(), failAt: 0}, 10)
	var out bytes.Buffer
	called := false
	res, err := x.Stream(context.Background(), planOf(t, x, "jsonl", gtc.DeliveryStream), &out, func(Result) error { called = true; return nil })
	require.ErrorIs(t, err, gtc.ErrUnavailable)
	assert.False(t, res.Started)
	assert.False(t, called)
	assert.Zero(t, out.Len())

	// Failing on the third page: the response has started and the body is cut.
	x = newExporter(t, &failingItems{ItemStore: st.Items(), failAt: 2}, 10)
	out.Reset()
	res, err = x.Stream(context.Background(), planOf(t, x, "jsonl", gtc.DeliveryStream), &out, nil)
	require.ErrorIs(t, err, gtc.ErrUnavailable)
	assert.True(t, res.Started)
	assert.Equal(t, 20, bytes.Count(out.Bytes(), []byte("\n")), "two pages went out before the failure")

	// A processor rejecting a record of the first page is still an ordinary error.
	x = newExporter(t, st.Items(), 10)
	p := planOf(t, x, "jsonl", gtc.DeliveryStream)
	p.Processors = []Processor{rejectAfter{n: 3}}
	out.Reset()
	res, err = x.Stream(context.Background(), p, &out, nil)
	require.Error(t, err)
	assert.False(t, res.Started)
	ge, ok := gtc.AsError(AsRecordError(err))
	require.True(t, ok)
	assert.Equal(t, gtc.CodeExportRecordInvalid, ge.Code)
	assert.Equal(t, "reject: record 'gt-000004': too late", ge.Message)
	assert.Zero(t, out.Len())
}

// rejectAfter rejects the records whose id sorts after gt-<n>.
type rejectAfter struct {
	n int
}

func (rejectAfter) Name() string { return "reject" }
func (r rejectAfter) Process(_ context.Context, rec Record, emit func(Record) error) error {
	if rec.ID() > fmt.Sprintf("gt-%06d", r.n) {
		return &RecordError{Processor: "reject", RecordID: rec.ID(), Message: "too late"}
	}
	return emit(rec)
}

func TestAttachmentFailuresSendNothing(t *testing.T) {
	st := newSQLite(t)
	fill(t, st, []string{"a"}, 40)
	for _, failAt := range []int{0, 1, 3} {
		x := newExporter(t, &failingItems{ItemStore: st.Items(), failAt: failAt}, 10)
		sp, _, err := x.Attachment(context.Background(), planOf(t, x, "json_snapshot_payload", gtc.DeliveryAttachment))
		require.ErrorIs(t, err, gtc.ErrUnavailable, "page %d", failAt)
		assert.Nil(t, sp)
	}
	x := newExporter(t, st.Items(), 10)
	sp, res, err := x.Attachment(context.Background(), planOf(t, x, "json_snapshot_payload", gtc.DeliveryAttachment))
	require.NoError(t, err)
	defer sp.Close()
	assert.Equal(t, 40, res.Count)
	assert.Equal(t, "ground-truth-snapshot-20260116T000000Z.json", res.FileName)
	var body bytes.Buffer
	n, err := sp.WriteTo(&body)
	require.NoError(t, err)
	assert.Equal(t, sp.Size(), n)
	assert.Equal(t, res.Bytes, n)
}

func TestSpoolGoesToDiskAndCleansUp(t *testing.T) {
	dir := t.TempDir()
	sp := newSpool(dir)
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	var want bytes.Buffer
	for want.Len() < spoolMemory+3*len(chunk) {
		_, err := sp.Write(chunk)
		require.NoError(t, err)
		want.Write(chunk)
	}
	files, _ := filepath.Glob(filepath.Join(dir, tempPrefix+"*"))
	require.Len(t, files, 1, "beyond 8 MiB the spool continues on disk")
	var got bytes.Buffer
	_, err := sp.WriteTo(&got)
	require.NoError(t, err)
	assert.Equal(t, want.Len(), got.Len())
	assert.True(t, bytes.Equal(want.Bytes(), got.Bytes()))
	require.NoError(t, sp.Close())
	files, _ = filepath.Glob(filepath.Join(dir, tempPrefix+"*"))
	assert.Empty(t, files)

	// Leftovers of a crash are removed at startup.
	require.NoError(t, os.WriteFile(filepath.Join(dir, tempPrefix+"spool-1"), []byte("x"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("x"), 0o600))
	n, err := CleanTemp(dir)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.FileExists(t, filepath.Join(dir, "keep.txt"))
}

func TestBusySlots(t *testing.T) {
	st := newSQLite(t)
	pr, fr := Builtins(nil)
	x, err := New(Config{Items: st.Items(), Processors: pr, Formatters: fr, MaxConcurrent: 2, BusyWait: 50 * time.Millisecond})
	require.NoError(t, err)
	r1, err := x.Acquire(context.Background())
	require.NoError(t, err)
	r2, err := x.Acquire(context.Background())
	require.NoError(t, err)
	_, err = x.Acquire(context.Background())
	assert.Equal(t, ErrBusy, err)
	r1()
	r3, err := x.Acquire(context.Background())
	require.NoError(t, err)
	r2()
	r3()
}

func TestManifestRunsMerge(t *testing.T) {
	old, oldItems := maxEntriesInMemory, itemLogMemory
	maxEntriesInMemory, itemLogMemory = 7, 300 // a few item entries a spill
	t.Cleanup(func() { maxEntriesInMemory, itemLogMemory = old, oldItems })
	h := newHarness(t, 60)
	res, err := h.x.Artifact(context.Background(), h.plan(t, "json_snapshot_payload"))
	require.NoError(t, err)
	m, raw := h.manifest(t, res.SnapshotID)
	require.Len(t, m.Files, 40)
	for i := 1; i < len(m.Files); i++ {
		assert.Less(t, m.Files[i-1].Name, m.Files[i].Name)
	}
	var doc struct {
		Items []ItemEntry `json:"items"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.Len(t, doc.Items, 40, "every item, from the spilled part and the part in memory")
	for i := 1; i < len(doc.Items); i++ {
		a, b := doc.Items[i-1], doc.Items[i]
		assert.True(t, a.DatasetName < b.DatasetName || a.DatasetName == b.DatasetName && a.ID < b.ID, "in export order: %v then %v", a, b)
	}
	leftovers, _ := filepath.Glob(filepath.Join(h.root, "tmp", tempPrefix+"*"))
	assert.Empty(t, leftovers, "the runs and items files are removed")
}

// fillFast creates n approved items with 32 concurrent writers, which the store groups
// into shared commits.
func fillFast(t testing.TB, st gtc.Store, n int) {
	var wg sync.WaitGroup
	next := atomic.Int64{}
	errs := make(chan error, 32)
	for range 32 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if _, err := st.Items().Create(context.Background(), fixtureItem([]string{"a", "b", "c"}[i%3], i, gtc.StatusApproved)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// TestMemoryDoesNotGrowWithItems is the flat-memory check: the heap peak of a 50,000-item
// export stays within 32 MiB of a 5,000-item one, for a stream, an attachment and an
// artifact.
func TestMemoryDoesNotGrowWithItems(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 50,000-item store; skipped in -short mode")
	}
	if raceEnabled {
		t.Skip("measured without the race detector (make test runs it in a second pass without -race)")
	}
	peaks := map[string][2]uint64{}
	for k, n := range []int{5000, 50000} {
		st := newSQLite(t)
		t0 := time.Now()
		fillFast(t, st, n)
		t.Logf("%d items stored in %v", n, time.Since(t0).Round(time.Millisecond))
		root := t.TempDir()
		local, err := localfs.Open(root)
		require.NoError(t, err)
		pr, fr := Builtins(nil)
		x, err := New(Config{Items: st.Items(), Artifacts: local, Processors: pr, Formatters: fr, TempDir: filepath.Join(root, "tmp")})
		require.NoError(t, err)
		ctx := context.Background()
		record := func(name string, fn func() int) {
			var count int
			p := testenv.HeapPeak(func() { count = fn() })
			require.Equal(t, n, count, name)
			v := peaks[name]
			v[k] = p
			peaks[name] = v
		}
		record("stream", func() int {
			res, err := x.Stream(ctx, planOf(t, x, "jsonl", gtc.DeliveryStream), io.Discard, nil)
			require.NoError(t, err)
			return res.Count
		})
		record("attachment", func() int {
			sp, res, err := x.Attachment(ctx, planOf(t, x, "jsonl", gtc.DeliveryAttachment))
			require.NoError(t, err)
			_, err = sp.WriteTo(io.Discard)
			require.NoError(t, err)
			require.NoError(t, sp.Close())
			return res.Count
		})
		record("artifact", func() int {
			res, err := x.Artifact(ctx, planOf(t, x, "jsonl", gtc.DeliveryArtifact))
			require.NoError(t, err)
			return res.Count
		})
		local.Close()
	}
	for name, p := range peaks {
		t.Logf("%s: heap peak %.1f MiB at 5,000 items, %.1f MiB at 50,000", name, float64(p[0])/(1<<20), float64(p[1])/(1<<20))
		assert.Less(t, int64(p[1])-int64(p[0]), int64(32<<20), "%s: memory grows with the number of items", name)
	}
}
