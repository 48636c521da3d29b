package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/cmd/internal/ledger"
	"github.com/gtc-dev/gtc/storage/sqlite"
)

// Fault tests: the real binary on a real full file system, and killed with SIGKILL in the
// middle of sustained writes. What they prove is what a user would notice: a clear answer,
// nothing acknowledged lost, a sound database file.

// faultTmpfs mounts a tmpfs of the given size (mount's syntax, e.g. "8m") on a fresh
// directory and unmounts it when the test ends. Mounting needs root; without it, or when
// mount fails, the test is skipped, never failed.
func faultTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("skipped: a real full file system needs a tmpfs mount, which needs root (running as uid %d)", os.Geteuid())
	}
	dir := t.TempDir() // removed after the unmount below (cleanups run last-in first-out)
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("skipped: cannot mount a tmpfs on %s (%v: %s); the full-disk tests need root and a working mount",
			dir, err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
			_ = exec.Command("umount", "-l", dir).Run()
		}
	})
	return dir
}

// faultFree is the space left on the file system holding dir.
func faultFree(t *testing.T, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(dir, &st))
	return int64(st.Bavail) * st.Bsize
}

// faultFill writes a filler file into dir that leaves about leave bytes free, so a few
// writes fill the disk. Deleting the file is how the test frees space again.
func faultFill(t *testing.T, dir string, leave int64) string {
	t.Helper()
	name := filepath.Join(dir, "filler")
	f, err := os.Create(name)
	require.NoError(t, err)
	defer f.Close()
	chunk := bytes.Repeat([]byte{0xA5}, 1<<20)
	for todo := faultFree(t, dir) - leave; todo > 0; {
		n := min(todo, int64(len(chunk)))
		_, err := f.Write(chunk[:n])
		require.NoError(t, err)
		todo -= n
	}
	require.NoError(t, f.Sync())
	return name
}

// faultIntegrity runs PRAGMA integrity_check on the database file, opened read-only, and
// returns its answer ("ok" when the file is sound).
func faultIntegrity(t *testing.T, path string) string {
	t.Helper()
	out, err := sqlite.CheckFile(context.Background(), path)
	require.NoError(t, err)
	return out
}

// faultItemCount counts the items in the database file.
func faultItemCount(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	require.NoError(t, err)
	defer db.Close()
	var n int
	require.NoError(t, db.QueryRow("SELECT count(*) FROM items").Scan(&n))
	return n
}

// faultStop stops the server with SIGTERM and waits for a clean exit.
func faultStop(t *testing.T, s *server) {
	t.Helper()
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-s.done:
		require.NoError(t, s.err, "graceful shutdown exits 0; log:\n%s", s.stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("server did not stop after SIGTERM")
	}
}

// faultItem is one item the full-disk test created, as the server acknowledged it.
type faultItem struct {
	id, bucket, etag, comment string
}

// faultImportOne imports one item with a unique comment of about 2 KiB and answers the
// status and body.
func faultImportOne(t *testing.T, s *server, ds, id string) (int, map[string]any, string) {
	t.Helper()
	comment := id + " " + strings.Repeat("a full disk must not lose what it acknowledged; ", 40)
	item := map[string]any{"id": id, "datasetName": ds, "comment": comment,
		"history": []map[string]any{{"role": "user", "msg": "What does " + id + " ask?"}, {"role": "assistant", "msg": "It asks " + id + "."}}}
	code, body, _ := doJSON(t, http.MethodPost, s.base+"/v1/ground-truths", []any{item}, nil)
	return code, body, comment
}

// faultGet reads one item: status and body.
func faultGet(t *testing.T, s *server, ds string, it faultItem) (int, map[string]any) {
	t.Helper()
	code, body, _ := doJSON(t, http.MethodGet, s.base+"/v1/ground-truths/"+ds+"/"+it.bucket+"/"+it.id, nil, nil)
	return code, body
}

// faultLocate reads the bucket and ETag of an item by id through the explorer list.
func faultLocate(t *testing.T, s *server, ds, id string) (bucket, etag string) {
	t.Helper()
	code, body, _ := doJSON(t, http.MethodGet, s.base+"/v1/ground-truths?dataset="+ds+"&itemId="+id+"&limit=10", nil, nil)
	require.Equal(t, http.StatusOK, code, "%v", body)
	for _, v := range body["items"].([]any) {
		m := v.(map[string]any)
		if m["id"] == id {
			return m["bucket"].(string), m["_etag"].(string)
		}
	}
	t.Fatalf("item %s/%s not listed: %v", ds, id, body)
	return "", ""
}

// The details of a 507: what went wrong, what was kept, what to do.
const (
	detailStoreFull  = "The server is out of storage space; nothing was saved. Free disk space and retry."
	detailExportFull = "Export storage is out of space; the snapshot was not saved. Free disk space and retry."
)

// assert507 checks the body of a write refused for want of space.
func assert507(t *testing.T, body map[string]any, detail, what string) {
	t.Helper()
	assert.Equal(t, map[string]any{"status": float64(http.StatusInsufficientStorage), "code": "INSUFFICIENT_STORAGE", "detail": detail},
		body, "%s", what)
}

// TestFullDiskAnswers507AndKeepsEverything puts the SQLite database on a small tmpfs, fills
// it, and checks what a client sees: a write that does not fit answers 507
// INSUFFICIENT_STORAGE (never 500 or 503), stores nothing, and reads keep working; every
// item acknowledged before reads back as acknowledged; the file stays sound; and once space
// is freed, writes work again without a restart.
func TestFullDiskAnswers507AndKeepsEverything(t *testing.T) {
	disk := faultTmpfs(t, "8m")
	data := filepath.Join(disk, "data")
	dbPath := filepath.Join(data, "gtc.db")
	s := startServer(t, env(data))
	const ds = "full"

	acked := map[string]faultItem{}
	ack := func(id, comment string) {
		bucket, etag := faultLocate(t, s, ds, id)
		acked[id] = faultItem{id: id, bucket: bucket, etag: etag, comment: comment}
	}
	for i := range 10 {
		id := fmt.Sprintf("before-%02d", i)
		code, body, comment := faultImportOne(t, s, ds, id)
		require.Equal(t, http.StatusOK, code, "%v", body)
		require.Equal(t, 1.0, body["imported"], "%v", body)
		ack(id, comment)
	}

	filler := faultFill(t, disk, 256<<10)
	t.Logf("filled the tmpfs: %d bytes left free", faultFree(t, disk))

	// Import one item per request until the disk refuses one.
	statuses := map[int]int{}
	var refused []string
	var body507 map[string]any
	for i := 0; i < 400 && len(refused) < 3; i++ {
		id := fmt.Sprintf("fill-%03d", i)
		code, body, comment := faultImportOne(t, s, ds, id)
		statuses[code]++
		switch code {
		case http.StatusOK:
			if body["imported"] == 1.0 {
				ack(id, comment)
				continue
			}
			// A request of one item either saved it or answered 507.
			t.Errorf("import of %s answered 200 without importing it: %v", id, body)
		case http.StatusInsufficientStorage:
			assert507(t, body, detailStoreFull, "import of "+id)
			body507 = body
			refused = append(refused, id)
		default:
			t.Errorf("import of %s answered %d: %v", id, code, body)
		}
	}
	t.Logf("import answers while filling: %v; %d items acknowledged; the 507 body: %v", statuses, len(acked), body507)
	require.NotEmpty(t, refused, "the full disk refused no import")
	assert.Zero(t, statuses[http.StatusInternalServerError], "no 500 while full")
	assert.Zero(t, statuses[http.StatusServiceUnavailable], "no 503 while full")
	s.logContains(t, `"msg":"out of storage space"`)
	for _, line := range strings.Split(s.stderr.String(), "\n") {
		if strings.Contains(line, `"msg":"out of storage space"`) {
			assert.Contains(t, line, `"level":"ERROR"`, "logged as an error: %s", line)
			assert.Regexp(t, `"request_id":"[^"]+"`, line, "with the request id")
			assert.Contains(t, line, "database or disk is full", "with the cause")
			break
		}
	}

	// A bulk import of which nothing fits is refused as a whole.
	var batch []any
	for i := range 5 {
		id := fmt.Sprintf("batch-%d", i)
		batch = append(batch, map[string]any{"id": id, "datasetName": ds, "comment": strings.Repeat("b", 2000),
			"history": []map[string]any{{"role": "user", "msg": "q"}, {"role": "assistant", "msg": "a"}}})
		refused = append(refused, id)
	}
	code, body, _ := doJSON(t, http.MethodPost, s.base+"/v1/ground-truths", batch, nil)
	require.Equal(t, http.StatusInsufficientStorage, code, "%v", body)
	assert507(t, body, detailStoreFull, "bulk import")

	// A conditional edit of a stored item is refused too, and leaves the item as it was.
	victim := acked["before-03"]
	code, body, _ = doJSON(t, http.MethodPut, s.base+"/v1/ground-truths/"+ds+"/"+victim.bucket+"/"+victim.id,
		map[string]any{"comment": "an edit the full disk cannot hold " + strings.Repeat("x", 4000)}, map[string]string{"If-Match": victim.etag})
	require.Equal(t, http.StatusInsufficientStorage, code, "%v", body)
	assert507(t, body, detailStoreFull, "PUT")

	// Reads keep working, and everything acknowledged is there as acknowledged; nothing
	// refused is.
	checkStored := func(when string) {
		for _, it := range acked {
			code, got := faultGet(t, s, ds, it)
			if !assert.Equal(t, http.StatusOK, code, "%s: acknowledged item %s: %v", when, it.id, got) {
				continue
			}
			assert.Equal(t, it.etag, got["_etag"], "%s: item %s", when, it.id)
			assert.Equal(t, it.comment, got["comment"], "%s: item %s", when, it.id)
		}
		for _, id := range refused {
			code, body, _ := doJSON(t, http.MethodGet, s.base+"/v1/ground-truths?dataset="+ds+"&itemId="+id+"&limit=10", nil, nil)
			require.Equal(t, http.StatusOK, code, "%v", body)
			for _, v := range body["items"].([]any) {
				assert.NotEqual(t, id, v.(map[string]any)["id"], "%s: refused item %s was stored", when, id)
			}
		}
	}
	checkStored("while full")
	stats := getJSON(t, s.base+"/v1/ground-truths/stats")
	assert.Equal(t, float64(len(acked)), stats["draft"], "stats while full: %v", stats)
	res, err := http.Get(s.base + "/readyz")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode, "the server stays ready: reads work")
	assert.Equal(t, "ok", faultIntegrity(t, dbPath), "integrity of the live file while the disk is full")

	// Free space: writes work again on the same process.
	require.NoError(t, os.Remove(filler))
	for i := range 5 {
		id := fmt.Sprintf("after-%02d", i)
		code, body, comment := faultImportOne(t, s, ds, id)
		require.Equal(t, http.StatusOK, code, "an import after space was freed: %v", body)
		require.Equal(t, 1.0, body["imported"], "%v", body)
		ack(id, comment)
	}
	code, body, _ = doJSON(t, http.MethodPut, s.base+"/v1/ground-truths/"+ds+"/"+victim.bucket+"/"+victim.id,
		map[string]any{"comment": "edited once there was room"}, map[string]string{"If-Match": victim.etag})
	require.Equal(t, http.StatusOK, code, "the refused edit, sent again with the same token, lands: %v", body)
	victim.etag, victim.comment = body["_etag"].(string), "edited once there was room"
	acked[victim.id] = victim
	checkStored("after space was freed")

	faultStop(t, s)
	assert.Equal(t, "ok", faultIntegrity(t, dbPath), "integrity after the server stopped")
	assert.Equal(t, len(acked), faultItemCount(t, dbPath), "the file holds exactly the acknowledged items")
	assert.NotContains(t, s.stderr.String(), `"msg":"internal error"`)
	assert.NotContains(t, s.stderr.String(), `"msg":"store unavailable"`)
}

// faultStale makes the stored computed tags of every item out of date, as after a plugin
// change, so a recompute has a write to make for each.
func faultStale(t *testing.T, dbPath string) int {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Options{Path: dbPath})
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	n := 0
	for it, err := range st.Items().QueryAll(ctx, gtc.Query{Sort: gtc.SortID, Limit: gtc.MaxQueryLimit}) {
		require.NoError(t, err)
		stale := it.Clone()
		stale.ComputedTags = []string{"dataset:" + it.DatasetName}
		_, err = st.Items().Replace(ctx, it, stale)
		require.NoError(t, err)
		n++
	}
	return n
}

// TestFullDiskStopsRecomputeWithAClearMessage fills the disk under a store whose items all
// need a recompute: the command, the synchronous route and a background job each stop at the
// first refused write with a message that says the disk is full (exit 3, 507, a failed job
// with code INSUFFICIENT_STORAGE) instead of listing every item as an error; once space is
// freed the recompute finishes the work.
func TestFullDiskStopsRecomputeWithAClearMessage(t *testing.T) {
	// Room for the seeded store (1.3 MB) and the WAL that rewriting all 200 items leaves
	// (8.7 MB measured): at 16 MiB the rewrite itself once ran out of space under the race
	// detector. The disk is filled on purpose only afterwards.
	disk := faultTmpfs(t, "32m")
	data := filepath.Join(disk, "data")
	dbPath := filepath.Join(data, "gtc.db")
	_, errOut, code := runGTC(t, env(data), "seed", "--items", "200", "--datasets", "2")
	require.Equal(t, 0, code, errOut)
	stale := faultStale(t, dbPath)
	require.Equal(t, 200, stale)
	filler := faultFill(t, disk, 64<<10)

	out, errOut, code := runGTC(t, env(data), "recompute-tags", "--progress", "none")
	t.Logf("recompute-tags on a full disk: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	assert.Equal(t, exitFatal, code, "a full disk stops the command")
	assert.Contains(t, errOut, "Out of storage space: the recompute stopped before it finished")
	assert.Contains(t, errOut, "Free disk space and run it again.")

	s := startServer(t, env(data))
	code, body, _ := doJSON(t, http.MethodPost, s.base+"/v1/ground-truths/recompute-tags", nil, nil)
	require.Equal(t, http.StatusInsufficientStorage, code, "%v", body)
	assert.Equal(t, "INSUFFICIENT_STORAGE", body["code"])
	assert.Contains(t, body["detail"], "the recompute stopped before it finished")

	code, body, _ = doJSON(t, http.MethodPost, s.base+"/v1/ground-truths/recompute-tags?async=true", nil, nil)
	require.Equal(t, http.StatusAccepted, code, "%v", body)
	var job map[string]any
	deadline := time.Now().Add(30 * time.Second)
	for {
		job = getJSON(t, s.base+"/v1/jobs/"+body["id"].(string))
		if job["status"] == "failed" || job["status"] == "succeeded" || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.Equal(t, "failed", job["status"], "%v", job)
	jobErr := job["error"].(map[string]any)
	assert.Equal(t, "INSUFFICIENT_STORAGE", jobErr["code"], "%v", job)
	assert.Contains(t, jobErr["detail"], "Out of storage space: the recompute stopped before it finished", "%v", job)

	require.NoError(t, os.Remove(filler))
	code, body, _ = doJSON(t, http.MethodPost, s.base+"/v1/ground-truths/recompute-tags", nil, nil)
	require.Equal(t, http.StatusOK, code, "%v", body)
	assert.Empty(t, body["errors"], "%v", body)
	assert.Equal(t, 200.0, body["processed"], "%v", body)
	t.Logf("recompute once space was freed: %v", body)
	faultStop(t, s)
	assert.Equal(t, "ok", faultIntegrity(t, dbPath))

	out, errOut, code = runGTC(t, env(data), "recompute-tags", "--json")
	require.Equal(t, 0, code, errOut)
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	assert.Equal(t, 0.0, res["updated"], "every item was refreshed: %v", res)
}

// faultExportFiles lists every file under root except the filler, by path relative to root.
func faultExportFiles(t *testing.T, root string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "filler" {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = fi.Size()
		return nil
	}))
	return out
}

// TestFullExportDiskAnswers507AndLeavesNoPartialSnapshot puts local export storage on a
// small tmpfs and fills it: an artifact export that does not fit answers 507
// INSUFFICIENT_STORAGE, leaves no data file, temporary file or manifest behind (only the
// empty reservation that keeps its id from being handed out again) and lists nothing; once
// space is freed the same export succeeds.
func TestFullExportDiskAnswers507AndLeavesNoPartialSnapshot(t *testing.T) {
	exports := faultTmpfs(t, "4m")
	// No free-space floor: the export must start and meet the full disk while it writes.
	s := startServer(t, env(t.TempDir(), "GTC_EXPORT_LOCAL_DIR="+exports, "GTC_EXPORT_MIN_FREE_BYTES=0"))
	const ds = "exported"
	var items []map[string]any
	for i := range 300 {
		items = append(items, map[string]any{"id": fmt.Sprintf("ex-%03d", i), "datasetName": ds,
			"comment": strings.Repeat("an exported item needs room on the export disk ", 20),
			"history": []map[string]any{{"role": "user", "msg": fmt.Sprintf("question %d", i)}, {"role": "assistant", "msg": "answer"}}})
	}
	code, body, _ := doJSON(t, http.MethodPost, s.base+"/v1/ground-truths", items, nil)
	require.Equal(t, http.StatusOK, code, "%v", body)
	require.Equal(t, 300.0, body["imported"], "%v", body)

	// The size of the jsonl export, produced as an attachment (nothing stored).
	req := func(format, mode string) map[string]any {
		return map[string]any{"format": format, "filters": map[string]any{"status": ""}, "delivery": map[string]any{"mode": mode}}
	}
	raw, err := json.Marshal(req("jsonl", "attachment"))
	require.NoError(t, err)
	res, err := http.Post(s.base+"/v1/ground-truths/snapshot", "application/json", bytes.NewReader(raw))
	require.NoError(t, err)
	attachment, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", attachment)
	size := int64(len(attachment))

	filler := faultFill(t, exports, size/3)
	t.Logf("jsonl export of %d bytes; %d bytes left free on the export disk", size, faultFree(t, exports))

	for _, format := range []string{"jsonl", "json_snapshot_payload"} {
		code, body, _ := doJSON(t, http.MethodPost, s.base+"/v1/ground-truths/snapshot", req(format, "artifact"), nil)
		require.Equal(t, http.StatusInsufficientStorage, code, "%s artifact on a full disk: %v", format, body)
		assert507(t, body, detailExportFull, format+" artifact")
		t.Logf("%s artifact on a full export disk: %d %v", format, code, body)
		for name, n := range faultExportFiles(t, exports) {
			base := filepath.Base(name)
			assert.True(t, base == ".reserved" && n == 0, "%s: only empty reservations stay behind, found %s (%d bytes)", format, name, n)
		}
	}
	code, body, _ = doJSON(t, http.MethodGet, s.base+"/v1/exports", nil, nil)
	require.Equal(t, http.StatusOK, code, "%v", body)
	assert.Empty(t, body["items"], "a failed snapshot is never listed")
	s.logContains(t, `"msg":"out of storage space"`)

	require.NoError(t, os.Remove(filler))
	code, body, _ = doJSON(t, http.MethodPost, s.base+"/v1/ground-truths/snapshot", req("jsonl", "artifact"), nil)
	require.Equal(t, http.StatusOK, code, "the export once space is freed: %v", body)
	assert.Equal(t, 300.0, body["count"])
	code, list, _ := doJSON(t, http.MethodGet, s.base+"/v1/exports", nil, nil)
	require.Equal(t, http.StatusOK, code, "%v", list)
	require.Len(t, list["items"], 1, "%v", list)
	assert.Equal(t, body["snapshotId"], list["items"].([]any)[0].(map[string]any)["snapshotId"])
	stored, err := os.ReadFile(filepath.Join(exports, "exports", "snapshots", body["snapshotId"].(string), "ground-truth-items.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, string(attachment), string(stored), "the stored snapshot is the whole export")
}

// faultWriter is one of the concurrent clients of the kill test: it edits its own items
// with conditional PUTs and records every outcome in the ledger.
type faultWriter struct {
	n     int
	keys  []ledger.Key
	etags map[ledger.Key]string
}

// TestKill9DuringWritesLosesNothing runs 16 concurrent writers of conditional PUTs against
// the server on SQLite (default synchronous setting), kills it with SIGKILL in the middle of
// the writes, restarts it on the same data directory and checks with the ledger that every
// acknowledged write is there, that every write of unknown outcome landed whole or not at
// all, that every write has its revision and every revision its write, and that the database
// file is sound. Three rounds, on the same data.
func TestKill9DuringWritesLosesNothing(t *testing.T) {
	data := t.TempDir()
	kill9Rounds(t, env(data), 300, 3, 2500, func(round int, s *server) {
		faultStop(t, s)
		dbPath := filepath.Join(data, "gtc.db")
		assert.Equal(t, "ok", faultIntegrity(t, dbPath), "round %d: integrity_check after the restart", round)
		assert.Equal(t, 300, faultItemCount(t, dbPath), "round %d", round)
	})
}

// TestKill9OnCosmosKeepsWritesAndRevisionsTogether is the same on Cosmos DB (the test
// server): gtc killed mid-write leaves no acknowledged write without its revision and no
// revision without its write.
func TestKill9OnCosmosKeepsWritesAndRevisionsTogether(t *testing.T) {
	e, _ := cosmosEnv(t, t.TempDir(), "GTC_COSMOS_CREATE_CONTAINERS=true")
	kill9Rounds(t, e, 60, 2, 300, func(_ int, s *server) { faultStop(t, s) })
}

// TestKill9DuringImportKeepsEachItemWhole kills the server with SIGKILL while it imports
// 10,000 items in one request (the bulk create: many items to a transaction, no savepoint per
// item), then checks the database file: every item that is there has its one revision and
// its tag rows, no revision is there without its item, the tag counts agree, and sending the
// same request again imports exactly the items that were not there.
func TestKill9DuringImportKeepsEachItemWhole(t *testing.T) {
	const ds, n = "crash-import", 10000
	data := t.TempDir()
	dbPath := filepath.Join(data, "gtc.db")
	s := startServer(t, env(data))
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{"id": fmt.Sprintf("item-%05d", i), "datasetName": ds, "manualTags": []string{"topic:crash"},
			"history": []map[string]any{{"role": "user", "msg": fmt.Sprintf("How do I install version %d?", i)}, {"role": "assistant", "msg": "Like this."}}}
	}
	body, err := json.Marshal(items)
	require.NoError(t, err)
	post := func(base string) (int, map[string]any) {
		res, err := http.Post(base+"/v1/ground-truths?registerTags=true", "application/json", bytes.NewReader(body))
		if err != nil {
			return 0, nil // cut by the kill
		}
		defer res.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(res.Body).Decode(&out)
		return res.StatusCode, out
	}
	answered := make(chan int, 1)
	go func() { code, _ := post(s.base); answered <- code }()
	// Kill as soon as the first items are committed.
	deadline := time.Now().Add(60 * time.Second)
	for faultItemCount(t, dbPath) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGKILL))
	<-s.done
	code := <-answered

	assert.Equal(t, "ok", faultIntegrity(t, dbPath), "integrity_check after the kill")
	db, err := sql.Open("sqlite", "file:"+dbPath+"?mode=ro")
	require.NoError(t, err)
	defer db.Close()
	count := func(query string, args ...any) int {
		t.Helper()
		var c int
		require.NoError(t, db.QueryRow(query, args...).Scan(&c), query)
		return c
	}
	stored := count(`SELECT count(*) FROM items WHERE dataset_name = ?`, ds)
	t.Logf("%d of %d items committed before the kill (the import answered %d)", stored, n, code)
	require.Positive(t, stored)
	if code == http.StatusOK {
		assert.Equal(t, n, stored, "an import answered 200 stored every item")
	}
	assert.Zero(t, count(`SELECT count(*) FROM items i LEFT JOIN item_revisions r ON r.rid = i.rev_head
  WHERE i.dataset_name = ? AND (r.rid IS NULL OR r.dataset_name != i.dataset_name OR r.id != i.id OR r.n != 1 OR r.prev IS NOT NULL)`, ds),
		"every stored item has its first revision, and only that")
	// Each item's revision is a row of its own, so as many rows as items means none without.
	assert.Equal(t, stored, count(`SELECT count(*) FROM item_revisions WHERE dataset_name = ?`, ds),
		"no revision without its item")
	assert.Zero(t, count(`SELECT count(*) FROM items i WHERE dataset_name = ? AND
  NOT EXISTS (SELECT 1 FROM item_tags t WHERE t.item_pk = i.pk AND t.tag = 'topic:crash')`, ds),
		"every stored item has its tag row")
	assert.Equal(t, stored, count(`SELECT coalesce(sum(n), 0) FROM tag_counts WHERE tag = 'topic:crash' AND dataset_name = ?`, ds),
		"the tag count is the number of stored items")
	require.NoError(t, db.Close())

	// Nothing is lost for the sender: the same request again imports the rest.
	s = startServer(t, env(data))
	code, out := post(s.base)
	require.Equal(t, http.StatusOK, code, "%v", out)
	assert.Equal(t, float64(n-stored), out["imported"], "the items that were not there")
	assert.Equal(t, float64(stored), out["failed"], "the items that were there, as duplicates")
	faultStop(t, s)
	assert.Equal(t, n, faultItemCount(t, dbPath))
}

// kill9Rounds imports nItems items, then runs nRounds rounds of: 16 writers of conditional
// PUTs until perRound are acknowledged, SIGKILL, restart, the ledger check and the history
// check; afterRound then stops the server (and checks what it will).
func kill9Rounds(t *testing.T, e []string, nItems, nRounds int, perRound int64, afterRound func(round int, s *server)) {
	const (
		ds        = "crash"
		nWriters  = 16
		putPrefix = "/v1/ground-truths/"
	)
	s := startServer(t, e)
	importItems(t, s, ds, nItems)
	current := func(s *server) map[ledger.Key]string {
		res, err := http.Get(s.base + putPrefix + ds)
		require.NoError(t, err)
		defer res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode)
		var list []map[string]any
		require.NoError(t, json.NewDecoder(res.Body).Decode(&list))
		require.Len(t, list, nItems)
		out := map[ledger.Key]string{}
		for _, it := range list {
			out[ledger.Key{Dataset: ds, Bucket: it["bucket"].(string), ID: it["id"].(string)}] = it["_etag"].(string)
		}
		return out
	}
	etags := current(s)

	var ackedAfter sync.Map // by key: the ETags of the acknowledged writes
	for round := 1; round <= nRounds; round++ {
		if round > 1 {
			s = startServer(t, e)
			etags = current(s)
		}
		// One ledger per round, based on the states read at its start: the check of the
		// round before has proved those states descend from every write acknowledged
		// earlier, so the rounds chain into one proof. It also keeps every item to at most
		// one write of unknown outcome per ledger (each writer has one write in flight
		// when the server dies, on an item of its own).
		led := ledger.New()
		for k, etag := range etags {
			led.Base(k, etag)
		}
		client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: nWriters}}
		writers := make([]*faultWriter, nWriters)
		for w := range writers {
			writers[w] = &faultWriter{n: w, etags: map[ledger.Key]string{}}
		}
		i := 0
		for k, etag := range etags {
			fw := writers[i%nWriters]
			fw.keys = append(fw.keys, k)
			fw.etags[k] = etag
			i++
		}
		var acked, unknown atomic.Int64
		var killed atomic.Bool
		var unexpected []string
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := time.Now()
		for _, fw := range writers {
			wg.Go(func() {
				for n := 0; ; n++ {
					k := fw.keys[n%len(fw.keys)]
					before := fw.etags[k]
					comment := fmt.Sprintf("round %d writer %d write %d", round, fw.n, n)
					fields := ledger.Fields{"comment": comment}
					b, _ := json.Marshal(map[string]any{"comment": comment})
					req, err := http.NewRequest(http.MethodPut, s.base+putPrefix+ds+"/"+k.Bucket+"/"+k.ID, bytes.NewReader(b))
					if err != nil {
						panic(err)
					}
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("If-Match", before)
					res, err := client.Do(req)
					var body map[string]any
					if err == nil {
						err = json.NewDecoder(res.Body).Decode(&body)
						res.Body.Close()
					}
					if err != nil {
						// The answer never came (or came cut): the write may or may not have
						// landed.
						led.Unknown(k, before, fields)
						unknown.Add(1)
						if !killed.Load() {
							mu.Lock()
							unexpected = append(unexpected, fmt.Sprintf("%s before the kill: %v", k, err))
							mu.Unlock()
						}
						return
					}
					if res.StatusCode != http.StatusOK {
						mu.Lock()
						unexpected = append(unexpected, fmt.Sprintf("%s: %d %v", k, res.StatusCode, body))
						mu.Unlock()
						return
					}
					after := body["_etag"].(string)
					led.Ack(k, before, after, fields)
					v, _ := ackedAfter.LoadOrStore(k, []string(nil))
					ackedAfter.Store(k, append(v.([]string), after)) // each key has one writer
					fw.etags[k] = after
					acked.Add(1)
				}
			})
		}
		for acked.Load() < perRound {
			select {
			case <-s.done:
				t.Fatalf("round %d: the server exited during the writes (%v); log:\n%s", round, s.err, s.stderr.String())
			case <-time.After(2 * time.Millisecond):
			}
			mu.Lock()
			stop := len(unexpected) > 0
			mu.Unlock()
			if stop {
				break
			}
		}
		killed.Store(true)
		require.NoError(t, s.cmd.Process.Signal(syscall.SIGKILL))
		writeTime := time.Since(start)
		<-s.done
		wg.Wait()
		client.CloseIdleConnections()
		require.Empty(t, unexpected, "round %d: every write before the kill is answered 200", round)
		t.Logf("round %d: %d writes acknowledged in %s (%.0f/s), %d cut by the SIGKILL",
			round, acked.Load(), writeTime.Round(time.Millisecond), float64(acked.Load())/writeTime.Seconds(), unknown.Load())

		t0 := time.Now()
		s = startServer(t, e)
		t.Logf("round %d: restart after SIGKILL: %s from start to the first /readyz 200", round, time.Since(t0).Round(time.Millisecond))

		report, err := led.Check(context.Background(), func(ctx context.Context, k ledger.Key) (ledger.Current, error) {
			res, err := http.Get(s.base + putPrefix + k.Dataset + "/" + k.Bucket + "/" + k.ID)
			if err != nil {
				return ledger.Current{}, err
			}
			defer res.Body.Close()
			if res.StatusCode == http.StatusNotFound {
				return ledger.Current{Found: false}, nil
			}
			if res.StatusCode != http.StatusOK {
				return ledger.Current{}, fmt.Errorf("GET %s: status %d", k, res.StatusCode)
			}
			var doc map[string]any
			if err := json.NewDecoder(res.Body).Decode(&doc); err != nil {
				return ledger.Current{}, err
			}
			etag, _ := doc["_etag"].(string)
			return ledger.Current{Found: true, ETag: etag, Doc: doc}, nil
		})
		require.NoError(t, err)
		t.Logf("round %d: ledger: %d items, %d acknowledged writes, %d of unknown outcome, %d of those landed, %d problems",
			round, report.Items, report.Acked, report.Unknown, report.UnknownKept, len(report.Problems))
		for _, p := range report.Problems {
			t.Errorf("round %d: %s", round, p)
		}
		assert.Equal(t, nItems, report.Items)
		checkRevisions(t, s.base, etags, &ackedAfter)

		afterRound(round, s)
	}
}

// checkRevisions reads the history of every item and checks it against the writes: the
// revisions are numbered 1 to the item's revision without a gap, each starts from the ETag the
// one before ended with, the newest ends with the item's current ETag, and the ETag of every
// acknowledged write (acked) ends some revision.
func checkRevisions(t *testing.T, base string, items map[ledger.Key]string, acked *sync.Map) {
	t.Helper()
	for k := range items {
		cur := getJSON(t, base+"/v1/ground-truths/"+k.Dataset+"/"+k.Bucket+"/"+k.ID)
		var revs []map[string]any
		for cursor := ""; ; {
			u := base + "/v1/ground-truths/" + k.Dataset + "/" + k.Bucket + "/" + k.ID + "/history?limit=7" // several pages per item
			if cursor != "" {
				u += "&cursor=" + url.QueryEscape(cursor)
			}
			page := getJSON(t, u)
			for _, r := range page["revisions"].([]any) {
				revs = append(revs, r.(map[string]any))
			}
			next, _ := page["nextCursor"].(string)
			if next == "" {
				break
			}
			cursor = next
		}
		n := int64(cur["revision"].(float64))
		if !assert.Len(t, revs, int(n), "%s: one revision per write", k) {
			continue
		}
		after := map[string]bool{}
		for i, r := range revs {
			assert.Equal(t, float64(n-int64(i)), r["revision"], "%s: newest first, no gap", k)
			after[r["etagAfter"].(string)] = true
			if i > 0 {
				assert.Equal(t, r["etagAfter"], revs[i-1]["etagBefore"], "%s: revision %v starts where %v ended", k, revs[i-1]["revision"], r["revision"])
			}
		}
		assert.Equal(t, cur["_etag"], revs[0]["etagAfter"], "%s: the newest revision ends with the item", k)
		if v, ok := acked.Load(k); ok {
			for _, etag := range v.([]string) {
				assert.True(t, after[etag], "%s: the acknowledged write that made %s has its revision", k, etag)
			}
		}
	}
}
