package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
	"github.com/gtc-dev/gtc/storage/observed"
	"github.com/gtc-dev/gtc/storage/sqlite"
)

// backupItem is what a restore must give back of an item.
type backupItem struct {
	ETag     string
	Status   gtc.Status
	Manual   []string
	Computed []string
	Doc      string // the stored document
}

// backupView is everything a restore must give back of a store.
type backupView struct {
	Items       map[string]backupItem
	Counts      map[gtc.Status]int
	Curation    map[string]gtc.CurationInstructions
	Tags        []string
	Definitions []*gtc.TagDefinition
}

// viewStore opens the SQLite file at path (no server may be running on it) and reads every
// item, the curation instructions of datasets, the tag store and the tag definitions.
func viewStore(t *testing.T, path string, datasets []string) backupView {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Options{Path: path})
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	v := backupView{Items: map[string]backupItem{}, Curation: map[string]gtc.CurationInstructions{}}
	cursor := ""
	for {
		page, err := st.Items().Scan(ctx, gtc.ScanSpec{}, cursor, 500)
		require.NoError(t, err)
		for _, it := range page.Items {
			v.Items[it.DatasetName+"/"+it.ID] = backupItem{ETag: it.ETag, Status: it.Status, Manual: it.ManualTags,
				Computed: it.ComputedTags, Doc: string(codec.ItemStoredJSON(it))}
		}
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	v.Counts, err = st.Items().CountByStatus(ctx)
	require.NoError(t, err)
	for _, ds := range datasets {
		cur, err := st.Curation().Get(ctx, ds)
		require.NoError(t, err, "curation instructions of %s", ds)
		v.Curation[ds] = *cur
	}
	v.Tags, err = st.TagStore().List(ctx)
	require.NoError(t, err)
	v.Definitions, err = st.TagDefinitions().List(ctx)
	require.NoError(t, err)
	return v
}

// exportWithETags is every item of the store of environ as gtc export writes it, _etag kept.
func exportWithETags(t *testing.T, environ []string) string {
	t.Helper()
	out, stderr, code := runGTC(t, environ, "export", "--status", "", "--format", "jsonl", "--no-processors", "--out", "-")
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		require.Contains(t, l, `"_etag"`)
	}
	return out
}

func copyTo(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(to), 0o700))
	require.NoError(t, os.WriteFile(to, data, 0o600))
}

// TestBackupRestoresIntoAFreshDataDir backs up the store of a serving gtc while it takes
// writes, restores the copy into a new data directory and finds every item (all statuses,
// ETags, computed and manual tags), the curation instructions, the tag store and the
// definitions as they were.
func TestBackupRestoresIntoAFreshDataDir(t *testing.T) {
	data := t.TempDir()
	srcEnv := env(data)
	_, stderr, code := runGTC(t, srcEnv, "seed", "--items", "600", "--datasets", "3")
	require.Equal(t, 0, code, stderr)

	s := startServer(t, srcEnv)
	res, err := http.Get(s.base + "/v1/datasets")
	require.NoError(t, err)
	var datasets []string
	require.NoError(t, json.NewDecoder(res.Body).Decode(&datasets))
	res.Body.Close()
	require.Len(t, datasets, 3, "%v", datasets)
	for _, ds := range datasets {
		code, body, _ := doJSON(t, http.MethodPut, s.base+"/v1/datasets/"+ds+"/curation-instructions",
			map[string]any{"instructions": "# Rules for " + ds + "\n\nCheck every reference."}, nil)
		require.Equal(t, http.StatusCreated, code, "%v", body)
	}
	code, body, _ := doJSON(t, http.MethodPost, s.base+"/v1/tags", map[string]any{"tags": []string{"custom:backup-check"}}, nil)
	require.Equal(t, http.StatusOK, code, "%v", body)
	code, body, _ = doJSON(t, http.MethodPost, s.base+"/v1/tags/definitions",
		map[string]any{"tag_key": "custom:backup-check", "description": "Seen by the backup test"}, nil)
	require.Equal(t, http.StatusCreated, code, "%v", body)

	// gtc backup runs while the server keeps saving the curation instructions of another
	// dataset; every save must succeed.
	out := filepath.Join(t.TempDir(), "gtc-backup.db")
	cmd := exec.Command(gtcBin, "backup", "--out", out, "--json")
	cmd.Env = srcEnv
	var stdout, stderrBuf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderrBuf
	require.NoError(t, cmd.Start())
	backupDone := make(chan error, 1)
	go func() { backupDone <- cmd.Wait() }()
	busyETags := map[string]bool{}
	etag := ""
	var backupErr error
	saves := 0
	for running := true; running; {
		hdr := map[string]string{}
		if etag != "" {
			hdr["If-Match"] = etag
		}
		code, body, _ := doJSON(t, http.MethodPut, s.base+"/v1/datasets/busy/curation-instructions",
			map[string]any{"instructions": fmt.Sprintf("version %d", saves)}, hdr)
		require.Contains(t, []int{http.StatusOK, http.StatusCreated}, code, "a save during the backup: %v", body)
		etag = body["_etag"].(string)
		busyETags[etag] = true
		saves++
		select {
		case backupErr = <-backupDone:
			running = false
		default:
		}
	}
	require.NoError(t, backupErr, "gtc backup failed; stderr:\n%s", stderrBuf.String())
	var sum map[string]any
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &sum), stdout.String())
	fi, err := os.Stat(out)
	require.NoError(t, err)
	assert.Equal(t, "backup", sum["command"])
	assert.Equal(t, out, sum["file"])
	assert.Equal(t, float64(fi.Size()), sum["bytes"], "the summary gives the size of the file written")
	assert.Equal(t, sum["bytes"], sum["pages"].(float64)*sum["pageSize"].(float64))
	t.Logf("gtc backup of 600 items while serving: %.0f bytes, %.0f pages, %.0f ms; %d saves during the run",
		sum["bytes"], sum["pages"], sum["durationMs"], saves)

	// Stop the server; the original is now final.
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-s.done:
		require.NoError(t, s.err, "log:\n%s", s.stderr.String())
	case <-time.After(15 * time.Second):
		t.Fatal("server did not stop after SIGTERM")
	}

	// Restore into a fresh data directory: the copied file alone.
	restored := t.TempDir()
	copyTo(t, out, filepath.Join(restored, "gtc.db"))
	want := viewStore(t, filepath.Join(data, "gtc.db"), datasets)
	got := viewStore(t, filepath.Join(restored, "gtc.db"), datasets)
	require.Len(t, want.Items, 600)
	for _, st := range []gtc.Status{gtc.StatusDraft, gtc.StatusApproved, gtc.StatusSkipped, gtc.StatusDeleted} {
		require.Positive(t, want.Counts[st], "the fixture has %s items", st)
	}
	var manual, computed int
	for _, it := range want.Items {
		manual += len(it.Manual)
		computed += len(it.Computed)
	}
	require.Positive(t, manual, "the fixture has manual tags")
	require.Positive(t, computed, "the fixture has computed tags")
	assert.Equal(t, want.Counts, got.Counts)
	for k, w := range want.Items {
		assert.Equal(t, w, got.Items[k], "item %s", k)
	}
	assert.Len(t, got.Items, len(want.Items))
	assert.Equal(t, want.Curation, got.Curation, "curation instructions, with their ETags")
	assert.Equal(t, want.Tags, got.Tags)
	assert.Contains(t, got.Tags, "custom:backup-check")
	assert.Equal(t, want.Definitions, got.Definitions)

	// The dataset saved during the backup is in the copy as one of the versions the server
	// acknowledged, or not yet there if the backup started before its first save.
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(restored, "gtc.db")})
	require.NoError(t, err)
	cur, err := st.Curation().Get(context.Background(), "busy")
	require.NoError(t, st.Close())
	if err == nil {
		assert.True(t, busyETags[cur.ETag], "the copy holds a version of the busy dataset the server acknowledged (%s)", cur.ETag)
	} else {
		assert.ErrorIs(t, err, gtc.ErrNotFound)
	}

	// The product reads the restored copy the same, from a data directory and from
	// GTC_SQLITE_PATH.
	wantExport := exportWithETags(t, env(data))
	assert.Equal(t, wantExport, exportWithETags(t, env(restored)))
	elsewhere := filepath.Join(t.TempDir(), "restored", "items.db")
	copyTo(t, out, elsewhere)
	assert.Equal(t, wantExport, exportWithETags(t, env(t.TempDir(), "GTC_SQLITE_PATH="+elsewhere)))
}

func TestBackupUsageAndRefusals(t *testing.T) {
	data := t.TempDir()
	e := env(data)
	_, stderr, code := runGTC(t, e, "seed", "--items", "20", "--datasets", "2")
	require.Equal(t, 0, code, stderr)

	_, stderr, code = runGTC(t, e, "backup")
	assert.Equal(t, 2, code, "missing --out is a usage error")
	assert.Contains(t, stderr, "--out FILE is required")
	_, stderr, code = runGTC(t, e, "backup", "--out", filepath.Join(t.TempDir(), "a.db"), "extra")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `unexpected argument "extra"`)
	_, stderr, code = runGTC(t, e, "backup", "--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, stderr, "usage: gtc backup --out FILE")

	_, stderr, code = runGTC(t, env(t.TempDir(), "GTC_REPO_BACKEND=cosmos", "GTC_COSMOS_ENDPOINT=https://gtc-backup-test.invalid:443/"),
		"backup", "--out", filepath.Join(t.TempDir(), "a.db"))
	assert.Equal(t, 3, code, "a Cosmos DB backend is fatal")
	assert.Contains(t, stderr, "gtc backup copies the embedded SQLite store; back up Cosmos DB with its continuous backup")

	_, stderr, code = runGTC(t, env(t.TempDir(), "GTC_SQLITE_PATH=:memory:"), "backup", "--out", filepath.Join(t.TempDir(), "a.db"))
	assert.Equal(t, 3, code)
	assert.Contains(t, stderr, "there is no file to back up")

	live := filepath.Join(data, "gtc.db")
	_, stderr, code = runGTC(t, e, "backup", "--out", live, "--force")
	assert.Equal(t, 2, code, "the live database is refused")
	assert.Contains(t, stderr, "is the live database")
	_, stderr, code = runGTC(t, e, "backup", "--out", data)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "is a directory")

	dir := t.TempDir()
	existing := filepath.Join(dir, "old.db")
	require.NoError(t, os.WriteFile(existing, []byte("an older backup"), 0o600))
	_, stderr, code = runGTC(t, e, "backup", "--out", existing)
	assert.Equal(t, 2, code, "an existing file needs --force")
	assert.Contains(t, stderr, "add --force to replace it")
	kept, err := os.ReadFile(existing)
	require.NoError(t, err)
	assert.Equal(t, "an older backup", string(kept))

	stdout, stderr, code := runGTC(t, e, "backup", "--out", existing, "--force")
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `^backup: wrote .*old\.db \([0-9.]+ KiB, [0-9]+ pages of [0-9]+ bytes\) in [0-9]+ ms\n$`, stdout)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file beside the copy")
	check, err := sqlite.CheckFile(context.Background(), existing)
	require.NoError(t, err)
	assert.Equal(t, "ok", check)
	assert.Len(t, viewStore(t, existing, nil).Items, 20)
}

// TestBackupFindsTheStoreUnderDecorators: with metrics or tracing on, the app's store is the
// instrumenting decorator; gtc backup still reaches the SQLite store under it.
func TestBackupFindsTheStoreUnderDecorators(t *testing.T) {
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: sqlite.MemoryPath})
	require.NoError(t, err)
	defer st.Close()
	assert.Same(t, st, sqliteStoreOf(st))
	assert.Same(t, st, sqliteStoreOf(observed.Wrap(st, nil)))
	assert.Same(t, st, sqliteStoreOf(observed.Wrap(observed.Wrap(st, nil), nil)))
	assert.Nil(t, sqliteStoreOf(struct{ gtc.Store }{}), "a store that is neither SQLite nor a decorator")
	assert.Nil(t, sqliteStoreOf(nil))
}
