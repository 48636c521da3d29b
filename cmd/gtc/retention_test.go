package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// snapshotDir makes a snapshot directory under dir's local export storage whose files were
// last written at when: complete (with a manifest) or only reserved.
func snapshotDir(t *testing.T, dir, id string, complete bool, when time.Time) string {
	t.Helper()
	p := filepath.Join(dir, "exports", "snapshots", id)
	require.NoError(t, os.MkdirAll(p, 0o700))
	files := map[string]string{".reserved": "", "ground-truth-items.jsonl": "{}\n"}
	if complete {
		files["manifest.json"] = `{"snapshotId":"` + id + `","files":[]}`
	}
	for name, body := range files {
		f := filepath.Join(p, name)
		require.NoError(t, os.WriteFile(f, []byte(body), 0o600))
		require.NoError(t, os.Chtimes(f, when, when))
	}
	return p
}

// gtc serve prunes export storage at startup: complete snapshots past GTC_EXPORT_RETENTION,
// incomplete ones older than a day, and logs each one it deleted.
func TestServePrunesOldSnapshots(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	oldComplete := snapshotDir(t, dir, "20200101T000000Z", true, now.Add(-72*time.Hour))
	oldIncomplete := snapshotDir(t, dir, "20200102T000000Z", false, now.Add(-48*time.Hour))
	youngComplete := snapshotDir(t, dir, "20200103T000000Z", true, now.Add(-2*time.Hour))
	youngIncomplete := snapshotDir(t, dir, "20200104T000000Z", false, now.Add(-2*time.Hour))

	s := startServer(t, env(dir, "GTC_EXPORT_RETENTION=1d"))
	s.logContains(t, `"snapshot_id":"20200101T000000Z","complete":true`)
	s.logContains(t, `"snapshot_id":"20200102T000000Z","complete":false`)
	assert.NoDirExists(t, oldComplete)
	assert.NoDirExists(t, oldIncomplete)
	assert.DirExists(t, youngComplete)
	assert.DirExists(t, youngIncomplete, "an export may still be writing it")
	assert.Equal(t, 2, strings.Count(s.stderr.String(), `"msg":"export snapshot pruned"`))
}

// Without a retention complete snapshots are kept, however old; incomplete leftovers still go.
func TestServeKeepsSnapshotsWithoutRetention(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-400 * 24 * time.Hour)
	complete := snapshotDir(t, dir, "20200101T000000Z", true, old)
	incomplete := snapshotDir(t, dir, "20200102T000000Z", false, old)
	s := startServer(t, env(dir))
	s.logContains(t, `"snapshot_id":"20200102T000000Z","complete":false`)
	assert.DirExists(t, complete)
	assert.NoDirExists(t, incomplete)
}

// An artifact export is refused before it writes anything when local export storage has
// less free space than GTC_EXPORT_MIN_FREE_BYTES.
func TestExportArtifactRefusedBelowMinFreeSpace(t *testing.T) {
	dir := t.TempDir()
	e := env(dir)
	_, stderr, code := runGTC(t, e, "seed", "--items", "10", "--datasets", "1")
	require.Equal(t, 0, code, stderr)
	_, stderr, code = runGTC(t, append(e, "GTC_EXPORT_MIN_FREE_BYTES=4EiB"), "export", "--artifact")
	assert.Equal(t, 3, code, stderr)
	assert.Regexp(t, `Export storage has [0-9.]+ [KMGTP]?i?B free, less than the 4.0 EiB kept free for the server \(GTC_EXPORT_MIN_FREE_BYTES\); nothing was written`, stderr)
	entries, _ := os.ReadDir(filepath.Join(dir, "exports", "snapshots"))
	assert.Empty(t, entries, "no snapshot was reserved")

	stdout, stderr, code := runGTC(t, append(e, "GTC_EXPORT_MIN_FREE_BYTES=1MiB"), "export", "--artifact")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, `"status":"ok"`)
}

func TestPrintConfigShowsTheLimits(t *testing.T) {
	out, _, code := runGTC(t, env(t.TempDir(), "GTC_EXPORT_RETENTION=30d", "GTC_EXPORT_MIN_FREE_BYTES=256MiB"), "serve", "--print-config")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "GTC_EXPORT_RETENTION=30d\n")
	assert.Contains(t, out, "GTC_EXPORT_MIN_FREE_BYTES=268435456\n")
	assert.Contains(t, out, "GTC_JOBS_MAX_QUEUED=16\n")
}

// On a real export disk with less room than GTC_EXPORT_MIN_FREE_BYTES (a 4 MiB tmpfs
// against the 1 GiB default), an artifact export is answered 507 at once and leaves not
// even a reservation.
func TestSmallExportDiskRefusesArtifactsBeforeWriting(t *testing.T) {
	exports := faultTmpfs(t, "4m")
	s := startServer(t, env(t.TempDir(), "GTC_EXPORT_LOCAL_DIR="+exports))
	items := []map[string]any{{"id": "ex-1", "datasetName": "exported",
		"history": []map[string]any{{"role": "user", "msg": "question"}, {"role": "assistant", "msg": "answer"}}}}
	code, body, _ := doJSON(t, http.MethodPost, s.base+"/v1/ground-truths", items, nil)
	require.Equal(t, http.StatusOK, code, "%v", body)

	artifact := map[string]any{"format": "jsonl", "filters": map[string]any{"status": ""}, "delivery": map[string]any{"mode": "artifact"}}
	code, body, _ = doJSON(t, http.MethodPost, s.base+"/v1/ground-truths/snapshot", artifact, nil)
	require.Equal(t, http.StatusInsufficientStorage, code, "%v", body)
	assert.Equal(t, "INSUFFICIENT_STORAGE", body["code"])
	assert.Regexp(t, `^Export storage has [0-9.]+ [KM]iB free, less than the 1.0 GiB kept free for the server`, body["detail"])
	assert.Empty(t, faultExportFiles(t, exports), "nothing was written, not even a reservation")
	s.logContains(t, `"msg":"artifact export refused: export storage is low on space"`)
}
