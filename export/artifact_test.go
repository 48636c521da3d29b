// The fuzz builds (scripts/fuzz.sh, -tags fuzzing) leave these tests out: they run on the
// SQLite store (sqlite_test.go), which a fuzz build would instrument.

//go:build !fuzzing

package export

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/localfs"
)

// spyStore records the keys an artifact store is asked for and can fail Puts.
type spyStore struct {
	gtc.ArtifactStore
	mu       sync.Mutex
	calls    []string
	failPuts func(key string) error
}

func (s *spyStore) record(op, key string) {
	s.mu.Lock()
	s.calls = append(s.calls, op+" "+key)
	s.mu.Unlock()
}

func (s *spyStore) Put(ctx context.Context, key string, body io.Reader, o gtc.PutOptions) (gtc.ArtifactInfo, error) {
	s.record("put", key)
	if s.failPuts != nil {
		if err := s.failPuts(key); err != nil {
			return gtc.ArtifactInfo{}, err
		}
	}
	return s.ArtifactStore.Put(ctx, key, body, o)
}

func (s *spyStore) Open(ctx context.Context, key string) (*gtc.ArtifactObject, error) {
	s.record("open", key)
	return s.ArtifactStore.Open(ctx, key)
}

func (s *spyStore) Stat(ctx context.Context, key string) (gtc.ArtifactInfo, error) {
	s.record("stat", key)
	return s.ArtifactStore.Stat(ctx, key)
}

func (s *spyStore) List(ctx context.Context, prefix string, o gtc.ListOptions) iter.Seq2[gtc.ArtifactEntry, error] {
	s.record("list", prefix)
	return s.ArtifactStore.List(ctx, prefix, o)
}

func (s *spyStore) reset() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls
	s.calls = nil
	return c
}

type harness struct {
	st    gtc.Store
	local *localfs.Store
	spy   *spyStore
	root  string
	clock *gtc.FakeClock
	x     *Exporter
}

func newHarness(t *testing.T, items int, chain ...string) *harness {
	t.Helper()
	h := &harness{st: newSQLite(t), root: t.TempDir(), clock: gtc.NewFakeClock(time.Date(2026, 1, 16, 0, 0, 0, 0, time.UTC))}
	fill(t, h.st, []string{"dataset_b", "dataset_a"}, items)
	var err error
	h.local, err = localfs.Open(h.root)
	require.NoError(t, err)
	t.Cleanup(func() { h.local.Close() })
	h.spy = &spyStore{ArtifactStore: h.local}
	pr, fr := Builtins([]string{"_etag"})
	h.x, err = New(Config{Items: h.st.Items(), Artifacts: h.spy, Clock: h.clock, Processors: pr, Formatters: fr,
		DefaultChain: chain, PageSize: 7, WriteConcurrency: 3, TempDir: filepath.Join(h.root, "tmp")})
	require.NoError(t, err)
	return h
}

func (h *harness) plan(t *testing.T, format string, processors ...string) *Plan {
	t.Helper()
	req := &gtc.ExportRequest{Format: &format, Mode: gtc.DeliveryArtifact}
	if processors != nil {
		req.Processors = &processors
	}
	p, err := h.x.Resolve(req, "alice@example.com")
	require.NoError(t, err)
	return p
}

type manifestDoc struct {
	SchemaVersion string         `json:"schemaVersion"`
	SnapshotID    string         `json:"snapshotId"`
	SnapshotAt    string         `json:"snapshotAt"`
	CreatedAt     string         `json:"createdAt"`
	CreatedBy     string         `json:"createdBy"`
	Format        string         `json:"format"`
	Processors    []string       `json:"processors"`
	Filters       map[string]any `json:"filters"`
	DatasetNames  []string       `json:"datasetNames"`
	Count         int            `json:"count"`
	Files         []FileEntry    `json:"files"`
}

func (h *harness) manifest(t *testing.T, id string) (manifestDoc, []byte) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(h.root, "exports", "snapshots", id, "manifest.json"))
	require.NoError(t, err)
	var m manifestDoc
	require.NoError(t, json.Unmarshal(data, &m))
	return m, data
}

func (h *harness) dirNames(t *testing.T, id string) []string {
	entries, err := os.ReadDir(filepath.Join(h.root, "exports", "snapshots", id))
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func TestArtifactPerItemFiles(t *testing.T) {
	h := newHarness(t, 30)
	ctx := context.Background()
	res, err := h.x.Artifact(ctx, h.plan(t, "json_snapshot_payload", "merge_tags"))
	require.NoError(t, err)
	assert.Equal(t, "20260116T000000Z", res.SnapshotID)
	assert.Equal(t, "exports/snapshots/20260116T000000Z", res.SnapshotDir)
	assert.Equal(t, "exports/snapshots/20260116T000000Z/manifest.json", res.ManifestPath)
	assert.Equal(t, 20, res.Count, "the approved items only")

	m, raw := h.manifest(t, res.SnapshotID)
	assert.Equal(t, "v2", m.SchemaVersion)
	assert.Equal(t, "20260116T000000Z", m.SnapshotAt)
	assert.Equal(t, "2026-01-16T00:00:00.000Z", m.CreatedAt)
	assert.Equal(t, "alice@example.com", m.CreatedBy)
	assert.Equal(t, "json_snapshot_payload", m.Format)
	assert.Equal(t, []string{"merge_tags"}, m.Processors)
	assert.Equal(t, map[string]any{"status": "approved"}, m.Filters)
	assert.Equal(t, []string{"dataset_a", "dataset_b"}, m.DatasetNames)
	assert.Equal(t, 20, m.Count)
	require.Len(t, m.Files, 20)
	assert.True(t, strings.HasSuffix(strings.TrimSpace(string(raw)), "]\n}") || strings.HasSuffix(string(raw), "]\n}\n"), "files is the last key")
	assert.True(t, bytes.HasPrefix(raw, []byte("{\n  \"schemaVersion\": \"v2\",\n  \"snapshotId\"")), "pretty-printed in the documented order")

	names := h.dirNames(t, res.SnapshotID)
	assert.Contains(t, names, ".reserved")
	assert.Contains(t, names, "manifest.json")
	assert.Len(t, names, 22)
	for i, f := range m.Files {
		if i > 0 {
			assert.Less(t, m.Files[i-1].Name, f.Name, "files are listed by name")
		}
		data, err := os.ReadFile(filepath.Join(h.root, "exports", "snapshots", res.SnapshotID, f.Name))
		require.NoError(t, err)
		sum := sha256.Sum256(data)
		assert.Equal(t, hex.EncodeToString(sum[:]), f.SHA256)
		assert.Equal(t, int64(len(data)), f.Bytes)
		assert.Equal(t, "application/json", f.ContentType)
		assert.Equal(t, 1, f.Items)
		var r map[string]any
		require.NoError(t, json.Unmarshal(data, &r))
		assert.Equal(t, f.Name, ItemFileName(r["id"].(string)))
		assert.True(t, bytes.HasPrefix(data, []byte("{\n  \"_etag\": ")), "pretty, sorted keys")
		assert.True(t, bytes.HasSuffix(data, []byte("}\n")))
	}
}

func TestArtifactSameSecondAndDeterminism(t *testing.T) {
	h := newHarness(t, 12)
	ctx := context.Background()
	for _, format := range []string{"json_snapshot_payload", "jsonl"} {
		a, err := h.x.Artifact(ctx, h.plan(t, format))
		require.NoError(t, err)
		b, err := h.x.Artifact(ctx, h.plan(t, format))
		require.NoError(t, err)
		assert.NotEqual(t, a.SnapshotID, b.SnapshotID, "two exports in the same second never share a snapshot")
		assert.True(t, strings.HasPrefix(b.SnapshotID, "20260116T000000Z-"))
		ma, _ := h.manifest(t, a.SnapshotID)
		mb, _ := h.manifest(t, b.SnapshotID)
		assert.Equal(t, ma.Files, mb.Files, "same content and clock: same names, bytes and hashes")
		for _, f := range ma.Files {
			da, err := os.ReadFile(filepath.Join(h.root, "exports/snapshots", a.SnapshotID, f.Name))
			require.NoError(t, err)
			db, err := os.ReadFile(filepath.Join(h.root, "exports/snapshots", b.SnapshotID, f.Name))
			require.NoError(t, err)
			assert.Equal(t, da, db)
		}
	}
	ids, err := h.x.snapshotIDs(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"20260116T000000Z-4", "20260116T000000Z-3", "20260116T000000Z-2", "20260116T000000Z"}, ids)
}

func TestArtifactSingleFileEqualsStream(t *testing.T) {
	h := newHarness(t, 25)
	for _, format := range []string{"jsonl", "csv", "json_items"} { // parquet: TestParquetIsBuiltin
		assertSingleFileEqualsStream(t, h, format)
	}
}

// assertSingleFileEqualsStream stores an export artifact of h's items in format, split into
// turns: one file, named for the format, whose bytes, type, count and checksum are those of
// the same export streamed.
func assertSingleFileEqualsStream(t *testing.T, h *harness, format string) {
	t.Helper()
	ctx := context.Background()
	res, err := h.x.Artifact(ctx, h.plan(t, format, "split_turns"))
	require.NoError(t, err)
	m, _ := h.manifest(t, res.SnapshotID)
	require.Len(t, m.Files, 1)
	f := m.Files[0]
	assert.Equal(t, "ground-truth-items."+(map[string]string{"jsonl": "jsonl", "csv": "csv", "json_items": "json", "parquet": "parquet"})[format], f.Name)
	assert.Equal(t, gtc.ContentTypeFor(f.Name), f.ContentType)
	assert.Equal(t, h.plan(t, format).Formatter.MediaType(), f.ContentType)
	assert.Equal(t, m.Count, f.Items)
	stored, err := os.ReadFile(filepath.Join(h.root, "exports/snapshots", res.SnapshotID, f.Name))
	require.NoError(t, err)
	var streamed bytes.Buffer
	_, err = h.x.Stream(ctx, h.plan(t, format, "split_turns"), &streamed, nil)
	require.NoError(t, err)
	assert.Equal(t, streamed.String(), string(stored), "the file holds what the formatter streams")
	sum := sha256.Sum256(stored)
	assert.Equal(t, hex.EncodeToString(sum[:]), f.SHA256)
}

func TestArtifactFailureCleansUp(t *testing.T) {
	h := newHarness(t, 30)
	ctx := context.Background()
	var puts int
	var mu sync.Mutex
	h.spy.failPuts = func(key string) error {
		mu.Lock()
		defer mu.Unlock()
		if strings.HasSuffix(key, ".reserved") {
			return nil
		}
		if puts++; puts > 5 {
			return fmt.Errorf("disk on fire: %w", gtc.ErrStorageUnavailable)
		}
		return nil
	}
	_, err := h.x.Artifact(ctx, h.plan(t, "json_snapshot_payload"))
	ge, ok := gtc.AsError(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, gtc.CodeStoreUnavailable, ge.Code, "storage that went away part-way is a 503: nothing saved, retry later")
	assert.Equal(t, "Export storage is not reachable; retry later", ge.Message)
	assert.Equal(t, []string{".reserved"}, h.dirNames(t, "20260116T000000Z"), "the data files are deleted, the reservation stays")

	list, total, err := h.x.ListSnapshots(ctx, 0, 10)
	require.NoError(t, err)
	assert.Equal(t, 0, total, "an incomplete snapshot is never listed")
	assert.Empty(t, list)

	h.spy.failPuts = nil
	res, err := h.x.Artifact(ctx, h.plan(t, "jsonl"))
	require.NoError(t, err)
	assert.Equal(t, "20260116T000000Z-2", res.SnapshotID, "the failed id is never handed out again")

	// A single-file export that fails part-way leaves nothing under the file's name.
	h.spy.failPuts = func(key string) error {
		if strings.HasSuffix(key, "manifest.json") {
			return errors.New("manifest refused")
		}
		return nil
	}
	_, err = h.x.Artifact(ctx, h.plan(t, "jsonl"))
	ge, ok = gtc.AsError(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, gtc.CodeStorageError, ge.Code, "a write the storage refused is a 500")
	assert.Equal(t, "Export storage write failed", ge.Message)
	assert.Equal(t, []string{".reserved"}, h.dirNames(t, "20260116T000000Z-3"))
}

func TestArtifactUnreachableStorage(t *testing.T) {
	h := newHarness(t, 3)
	h.spy.failPuts = func(string) error { return fmt.Errorf("dial tcp: refused: %w", gtc.ErrStorageUnavailable) }
	_, err := h.x.Artifact(context.Background(), h.plan(t, "jsonl"))
	ge, ok := gtc.AsError(err)
	require.True(t, ok)
	assert.Equal(t, gtc.CodeStoreUnavailable, ge.Code)
	assert.NotContains(t, ge.Message, "refused", "the cause is logged, not returned")
}

// TestArtifactSameIDsGetTheirOwnFiles: items are keyed by (datasetName, id), so two
// datasets may hold the same id, and split_turns makes ids (<id>__t<k>) that can equal a
// real one. Every record still gets its own file, the names are deterministic, a record
// whose id is unique keeps ground-truth-<id>.json, and the manifest lists every file.
func TestArtifactSameIDsGetTheirOwnFiles(t *testing.T) {
	h := newHarness(t, 0)
	ctx := context.Background()
	two := []gtc.HistoryEntry{{Role: "user", Msg: "q1"}, {Role: "assistant", Msg: "a1"}, {Role: "user", Msg: "q2"}, {Role: "assistant", Msg: "a2"}}
	item := func(ds, id string, n int, history []gtc.HistoryEntry) *gtc.Item {
		it := fixtureItem(ds, n, gtc.StatusApproved)
		it.ID, it.History = id, history
		return it
	}
	for _, it := range []*gtc.Item{
		item("d", "x", 1, two),         // split: d/x__t1, d/x__t2
		item("d", "x__t1", 2, two[:2]), // d/x__t1 again
		item("e", "x", 3, two[:2]),     // e/x: the only record with id x
		item("e", "x__t2", 4, two[:2]), // e/x__t2, as d's second exchange
		item("f", "y", 5, two[:2]),     // unique
		item("d", "a b/c", 6, two[:2]), // needs encoding, in two datasets
		item("e", "a b/c", 7, two[:2]),
	} {
		_, err := h.st.Items().Create(ctx, it)
		require.NoError(t, err)
	}
	res, err := h.x.Artifact(ctx, h.plan(t, "json_snapshot_payload", "split_turns"))
	require.NoError(t, err)
	assert.Equal(t, 8, res.Count)

	m, _ := h.manifest(t, res.SnapshotID)
	assert.Equal(t, 8, m.Count)
	got := map[string]string{} // file name → datasetName/id inside it
	for _, f := range m.Files {
		data, err := os.ReadFile(filepath.Join(h.root, "exports/snapshots", res.SnapshotID, f.Name))
		require.NoError(t, err, "the manifest lists %s", f.Name)
		sum := sha256.Sum256(data)
		assert.Equal(t, hex.EncodeToString(sum[:]), f.SHA256, f.Name)
		var r map[string]any
		require.NoError(t, json.Unmarshal(data, &r))
		got[f.Name] = r["datasetName"].(string) + "/" + r["id"].(string)
	}
	assert.Equal(t, map[string]string{
		"ground-truth-x__t1.json":       "d/x__t1", // the split record comes first in (datasetName, id) order
		"ground-truth-x__t2.json":       "d/x__t2",
		"ground-truth-x__t1~d.json":     "d/x__t1",
		"ground-truth-x.json":           "e/x",
		"ground-truth-x__t2~e.json":     "e/x__t2",
		"ground-truth-y.json":           "f/y",
		"ground-truth-a%20b%2Fc.json":   "d/a b/c",
		"ground-truth-a%20b%2Fc~e.json": "e/a b/c",
	}, got)
	assert.Len(t, h.dirNames(t, res.SnapshotID), 10, "8 records, the manifest and the reservation: nothing overwritten")

	again, err := h.x.Artifact(ctx, h.plan(t, "json_snapshot_payload", "split_turns"))
	require.NoError(t, err)
	m2, _ := h.manifest(t, again.SnapshotID)
	assert.Equal(t, m.Files, m2.Files, "the same data gets the same names")

	// The default chain (no split_turns) has the cross-dataset duplicates only.
	res, err = h.x.Artifact(ctx, h.plan(t, "json_snapshot_payload"))
	require.NoError(t, err)
	m, _ = h.manifest(t, res.SnapshotID)
	var names []string
	for _, f := range m.Files {
		names = append(names, f.Name)
	}
	assert.ElementsMatch(t, []string{"ground-truth-a%20b%2Fc.json", "ground-truth-a%20b%2Fc~e.json", "ground-truth-x.json",
		"ground-truth-x~e.json", "ground-truth-x__t1.json", "ground-truth-x__t2.json", "ground-truth-y.json"}, names)
}

func TestItemFileNamer(t *testing.T) {
	n := newItemFileNamer()
	assert.Equal(t, "ground-truth-x.json", n.name("d", "x"))
	assert.Equal(t, "ground-truth-x~d.json", n.name("d", "x"), "the dataset qualifies a taken name")
	assert.Equal(t, "ground-truth-x~d~2.json", n.name("d", "x"), "a number, when that is taken too")
	assert.Equal(t, "ground-truth-x~d~3.json", n.name("d", "x"))
	assert.Equal(t, "ground-truth-x~e.json", n.name("e", "x"))
	assert.Equal(t, "ground-truth-y.json", n.name("d", "y"))

	long := strings.Repeat("i", 150)
	ds := strings.Repeat("d", 150)
	first, second := n.name(ds, long), n.name(ds, long)
	assert.Equal(t, "ground-truth-"+long+".json", first)
	assert.NotEqual(t, first, second)
	assert.LessOrEqual(t, len(second), 218)
	assert.True(t, strings.HasPrefix(second, "ground-truth-"+long+"~"+strings.Repeat("d", 29)+"~"), second)
	assert.NoError(t, gtc.ValidateKey("exports/snapshots/x/"+second))
	assert.NotEqual(t, second, n.name(ds, long), "shortened qualified names differ by their number")
}

func TestItemFileName(t *testing.T) {
	assert.Equal(t, "ground-truth-gt-001.json", ItemFileName("gt-001"))
	assert.Equal(t, "ground-truth-a%2Fb%20c%C3%A9%25%7E.json", ItemFileName("a/b cé%~"), "~ is encoded too, so only shortened names carry it")
	long := strings.Repeat("é", 40) + strings.Repeat("a", 100)
	name := ItemFileName(long)
	sum := sha256.Sum256([]byte(long))
	assert.True(t, strings.HasSuffix(name, "~"+hex.EncodeToString(sum[:8])+".json"), name)
	assert.LessOrEqual(t, len(name), 218)
	enc := strings.TrimSuffix(strings.TrimPrefix(name, "ground-truth-"), "~"+hex.EncodeToString(sum[:8])+".json")
	assert.NotContains(t, enc[len(enc)-2:], "%", "never cut inside a %XX triplet")
	assert.NoError(t, gtc.ValidateKey("exports/snapshots/x/"+name))
	// Two long ids that share their first 180 encoded bytes get different names.
	assert.NotEqual(t, ItemFileName(strings.Repeat("a", 250)+"1"), ItemFileName(strings.Repeat("a", 250)+"2"))
	// An id whose encoding is exactly 200 bytes is not shortened.
	assert.Equal(t, "ground-truth-"+strings.Repeat("b", 200)+".json", ItemFileName(strings.Repeat("b", 200)))
}

func writeObject(t *testing.T, s gtc.ArtifactStore, key, body string) {
	t.Helper()
	_, err := s.Put(context.Background(), key, strings.NewReader(body), gtc.PutOptions{ContentType: gtc.ContentTypeFor(key)})
	require.NoError(t, err)
}

func TestListAndReadSnapshots(t *testing.T) {
	h := newHarness(t, 6)
	ctx := context.Background()
	for _, at := range []string{"20260101T000000Z", "20260102T000000Z"} {
		h.clock.Set(mustTime(at))
		for range 10 {
			_, err := h.x.Artifact(ctx, h.plan(t, "jsonl"))
			require.NoError(t, err)
		}
	}
	// An incomplete snapshot and a foreign directory are not listed.
	writeObject(t, h.local, "exports/snapshots/20260103T000000Z/.reserved", "")
	writeObject(t, h.local, "exports/snapshots/not-a-snapshot/manifest.json", "{}")
	// A snapshot written by the reference backend.
	writeObject(t, h.local, "exports/snapshots/20251231T235959Z/manifest.json", `{"schemaVersion":"v2","snapshotAt":"20251231T235959Z","datasetNames":["old"],"count":2,"filters":{"status":"approved"}}`)
	writeObject(t, h.local, "exports/snapshots/20251231T235959Z/ground-truth-a.json", `{"id":"a"}`)
	writeObject(t, h.local, "exports/snapshots/20251231T235959Z/ground-truth-b.json", `{"id":"bb"}`)

	page, total, err := h.x.ListSnapshots(ctx, 0, 12)
	require.NoError(t, err)
	assert.Equal(t, 21, total)
	require.Len(t, page, 12)
	var ids []string
	for _, s := range page {
		ids = append(ids, s.SnapshotID)
	}
	assert.Equal(t, []string{"20260102T000000Z-10", "20260102T000000Z-9", "20260102T000000Z-8"}, ids[:3], "newest first, numeric suffix order")
	assert.Equal(t, "20260102T000000Z", ids[9])
	assert.Equal(t, "20260101T000000Z-10", ids[10])
	first := page[0]
	assert.Equal(t, "alice@example.com", *first.CreatedBy)
	assert.Equal(t, "jsonl", *first.Format)
	assert.Equal(t, json.Number("4"), *first.Count)
	assert.Equal(t, 1, first.FileCount)
	assert.Positive(t, first.TotalBytes)

	page, _, err = h.x.ListSnapshots(ctx, 20, 12)
	require.NoError(t, err)
	require.Len(t, page, 1)
	old := page[0]
	assert.Equal(t, "20251231T235959Z", old.SnapshotID)
	assert.Nil(t, old.CreatedBy, "keys an older manifest lacks are null")
	assert.Nil(t, old.Format)
	assert.Equal(t, 2, old.FileCount, "from the directory listing")
	assert.Equal(t, int64(len(`{"id":"a"}`)+len(`{"id":"bb"}`)), old.TotalBytes)

	// The reference manifest is completed with snapshotId and files.
	m, err := h.x.OpenManifest(ctx, "20251231T235959Z")
	require.NoError(t, err)
	body, _ := io.ReadAll(m.Body)
	m.Body.Close()
	var doc map[string]any
	require.NoError(t, json.Unmarshal(body, &doc))
	assert.Equal(t, "20251231T235959Z", doc["snapshotId"])
	assert.Equal(t, []any{
		map[string]any{"name": "ground-truth-a.json", "bytes": float64(10), "sha256": nil, "contentType": nil},
		map[string]any{"name": "ground-truth-b.json", "bytes": float64(11), "sha256": nil, "contentType": nil},
	}, doc["files"])

	// A manifest of ours is streamed unchanged.
	m, err = h.x.OpenManifest(ctx, "20260102T000000Z-3")
	require.NoError(t, err)
	body, _ = io.ReadAll(m.Body)
	m.Body.Close()
	_, stored := h.manifest(t, "20260102T000000Z-3")
	assert.Equal(t, stored, body)
	assert.Equal(t, int64(len(stored)), m.Size)

	// Files.
	f, err := h.x.OpenFile(ctx, "20260102T000000Z-3", "ground-truth-items.jsonl")
	require.NoError(t, err)
	data, _ := io.ReadAll(f.Body)
	f.Body.Close()
	assert.Equal(t, f.Size, int64(len(data)))
	sum := sha256.Sum256(data)
	assert.Equal(t, hex.EncodeToString(sum[:]), f.SHA256)
	assert.Equal(t, "application/x-ndjson", f.ContentType)

	f, err = h.x.OpenFile(ctx, "20251231T235959Z", "ground-truth-b.json")
	require.NoError(t, err)
	f.Body.Close()
	assert.Empty(t, f.SHA256)

	notFound := func(err error, msg string) {
		t.Helper()
		ge, ok := gtc.AsError(err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, gtc.CodeNotFound, ge.Code)
		assert.Equal(t, msg, ge.Message)
	}
	h.spy.reset()
	for _, name := range []string{"../manifest.json", `a\b`, ".", "..", "x/y"} {
		_, err = h.x.OpenFile(ctx, "20260102T000000Z-3", name)
		notFound(err, "File not found")
	}
	for _, id := range []string{"../x", "2026", "20260102T000000Z-", "latest"} {
		_, err = h.x.OpenFile(ctx, id, "manifest.json")
		notFound(err, "Snapshot not found")
		_, err = h.x.OpenManifest(ctx, id)
		notFound(err, "Snapshot not found")
	}
	assert.Empty(t, h.spy.reset(), "malformed names and ids never reach storage")

	_, err = h.x.OpenFile(ctx, "20260102T000000Z-3", "ground-truth-secret.json")
	notFound(err, "File not found")
	for _, c := range h.spy.reset() {
		assert.NotContains(t, c, "ground-truth-secret.json", "a name the manifest does not list is not looked up")
	}
	_, err = h.x.OpenFile(ctx, "20251231T235959Z", ".hidden")
	notFound(err, "File not found")
	_, err = h.x.OpenManifest(ctx, "20260103T000000Z")
	notFound(err, "Snapshot not found")
	_, err = h.x.OpenManifest(ctx, "20990101T000000Z")
	notFound(err, "Snapshot not found")

	f, err = h.x.OpenFile(ctx, "20260102T000000Z-3", "manifest.json")
	require.NoError(t, err)
	f.Body.Close()
	assert.Equal(t, "application/json", f.ContentType)
}

func mustTime(at string) time.Time {
	t, err := time.Parse("20060102T150405Z", at)
	if err != nil {
		panic(err)
	}
	return t
}

func TestPrune(t *testing.T) {
	h := newHarness(t, 3)
	ctx := context.Background()
	h.clock.Set(time.Now().UTC())
	_, err := h.x.Artifact(ctx, h.plan(t, "jsonl"))
	require.NoError(t, err)
	writeObject(t, h.local, "exports/snapshots/20200101T000000Z/.reserved", "")
	writeObject(t, h.local, "exports/snapshots/20200101T000000Z/ground-truth-x.json", "{}")

	got, err := h.x.Prune(ctx, PruneOptions{Incomplete: true, OlderThan: time.Hour})
	require.NoError(t, err)
	assert.Empty(t, got, "the leftover is younger than an hour")

	h.clock.Advance(2 * time.Hour)
	got, err = h.x.Prune(ctx, PruneOptions{Incomplete: true, OlderThan: time.Hour, DryRun: true})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "20200101T000000Z", got[0].SnapshotID)
	assert.DirExists(t, filepath.Join(h.root, "exports/snapshots/20200101T000000Z"), "a dry run deletes nothing")

	got, err = h.x.Prune(ctx, PruneOptions{Incomplete: true, OlderThan: time.Hour})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, 2, got[0].Objects)
	assert.NoDirExists(t, filepath.Join(h.root, "exports/snapshots/20200101T000000Z"))

	_, total, err := h.x.ListSnapshots(ctx, 0, 10)
	require.NoError(t, err)
	assert.Equal(t, 1, total, "complete snapshots are kept by --incomplete")
	got, err = h.x.Prune(ctx, PruneOptions{Complete: true, OlderThan: time.Hour})
	require.NoError(t, err)
	require.Len(t, got, 1)
	_, total, err = h.x.ListSnapshots(ctx, 0, 10)
	require.NoError(t, err)
	assert.Equal(t, 0, total)
}

// The manifest names every exported item at the revision it was exported at, so a snapshot
// says exactly which version of each item it holds; an edit between two snapshots shows as
// a newer revision in the second.
func TestArtifactManifestNamesRevisions(t *testing.T) {
	h := newHarness(t, 9)
	ctx := context.Background()
	type entry struct {
		DatasetName string `json:"datasetName"`
		ID          string `json:"id"`
		Revision    int64  `json:"revision"`
	}
	items := func(raw []byte) []entry {
		var doc struct {
			Items []entry `json:"items"`
		}
		require.NoError(t, json.Unmarshal(raw, &doc))
		return doc.Items
	}
	first, err := h.x.Artifact(ctx, h.plan(t, "jsonl"))
	require.NoError(t, err)
	m, raw := h.manifest(t, first.SnapshotID)
	before := items(raw)
	require.Len(t, before, m.Count)
	for i, e := range before {
		if i > 0 {
			prev := before[i-1]
			assert.True(t, prev.DatasetName < e.DatasetName || prev.DatasetName == e.DatasetName && prev.ID < e.ID, "in (datasetName, id) order")
		}
		it, err := h.st.Items().Get(ctx, gtc.Key{DatasetName: e.DatasetName, Bucket: fixtureBucket, ID: e.ID})
		require.NoError(t, err)
		assert.Equal(t, it.Revision, e.Revision, "%s/%s", e.DatasetName, e.ID)
		assert.Positive(t, e.Revision)
	}

	edited := before[2]
	cur, err := h.st.Items().Get(ctx, gtc.Key{DatasetName: edited.DatasetName, Bucket: fixtureBucket, ID: edited.ID})
	require.NoError(t, err)
	next := *cur
	next.Comment = "edited between two snapshots"
	_, err = h.st.Items().Replace(ctx, cur, &next)
	require.NoError(t, err)

	h.clock.Advance(time.Minute)
	second, err := h.x.Artifact(ctx, h.plan(t, "jsonl"))
	require.NoError(t, err)
	_, raw = h.manifest(t, second.SnapshotID)
	after := items(raw)
	require.Len(t, after, len(before))
	for i := range after {
		want := before[i]
		if want == edited {
			want.Revision++
		}
		assert.Equal(t, want, after[i])
	}
	// The data file carries the same revision for the edited item.
	data, err := os.ReadFile(filepath.Join(h.root, "exports", "snapshots", second.SnapshotID, "ground-truth-items.jsonl"))
	require.NoError(t, err)
	found := false
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		var r struct {
			DatasetName string `json:"datasetName"`
			ID          string `json:"id"`
			Revision    int64  `json:"revision"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &r))
		if r.DatasetName == edited.DatasetName && r.ID == edited.ID {
			found = true
			assert.Equal(t, edited.Revision+1, r.Revision)
		}
	}
	assert.True(t, found)

	// The snapshot listing still reads such a manifest.
	list, total, err := h.x.ListSnapshots(ctx, 0, 10)
	require.NoError(t, err)
	require.Equal(t, 2, total)
	for _, s := range list {
		require.NotNil(t, s.Count)
		assert.Equal(t, fmt.Sprint(len(after)), s.Count.String())
		assert.Equal(t, 1, s.FileCount)
	}
}
