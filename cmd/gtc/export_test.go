package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/gtc-dev/gtc/storage/storetest/testenv"
)

// deleteContainerAtCleanup deletes a test container when the test ends.
func deleteContainerAtCleanup(t *testing.T, cs, container string) {
	t.Cleanup(func() {
		c, err := azblob.NewClientFromConnectionString(cs, nil)
		if err == nil {
			_, err = c.DeleteContainer(context.Background(), container, nil)
		}
		if err != nil {
			t.Logf("cleanup of container %s: %v", container, err)
		}
	})
}

func TestExportCommand(t *testing.T) {
	dir := t.TempDir()
	e := env(dir)
	_, stderr, code := runGTC(t, e, "seed", "--items", "60", "--datasets", "2")
	require.Equal(t, 0, code, stderr)

	// A file: the default format, approved items only, written whole.
	out := filepath.Join(dir, "snapshot.json")
	stdout, stderr, code := runGTC(t, e, "export", "--out", out, "--json")
	require.Equal(t, 0, code, stderr)
	var summary map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &summary), stdout)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	var payload struct {
		Count int              `json:"count"`
		Items []map[string]any `json:"items"`
	}
	require.NoError(t, json.Unmarshal(data, &payload))
	assert.Positive(t, payload.Count)
	assert.Equal(t, float64(payload.Count), summary["count"])
	for _, it := range payload.Items {
		assert.Equal(t, "approved", it["status"])
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".snapshot.json.tmp-*"))
	assert.Empty(t, leftovers)

	// Stdout, every status, one dataset, a chain.
	stdout, stderr, code = runGTC(t, e, "export", "--format", "jsonl", "--status", "", "--dataset", "customer-support", "--processors", "strip_internal", "--out", "-")
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	assert.Equal(t, 30, len(lines), "half of the 60 items are in customer-support")
	for _, l := range lines {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &rec))
		assert.Equal(t, "customer-support", rec["datasetName"])
		assert.NotContains(t, rec, "_etag")
	}

	stdout, stderr, code = runGTC(t, e, "export", "--format", "csv", "--processors", "split_turns", "--out", "-")
	require.Equal(t, 0, code, stderr)
	rows, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	require.NoError(t, err)
	assert.Equal(t, "turnCount", rows[0][len(rows[0])-1])

	// parquet to a file: a whole Parquet file (magic bytes at both ends) of the approved items.
	pq := filepath.Join(dir, "items.parquet")
	_, stderr, code = runGTC(t, e, "export", "--format", "parquet", "--out", pq)
	require.Equal(t, 0, code, stderr)
	pqData, err := os.ReadFile(pq)
	require.NoError(t, err)
	require.Greater(t, len(pqData), 8)
	assert.Equal(t, "PAR1", string(pqData[:4]))
	assert.Equal(t, "PAR1", string(pqData[len(pqData)-4:]))

	// Usage errors: the API's messages, exit 2, nothing written.
	bad := filepath.Join(dir, "bad.json")
	for _, args := range [][]string{
		{"--format", "xml", "--out", bad},
		{"--processors", "anonymize", "--out", bad},
		{"--status", "done", "--out", bad},
		{"--out", bad, "--artifact"},
		{},
		{"--processors", "merge_tags", "--no-processors", "--out", bad},
	} {
		_, stderr, code = runGTC(t, e, append([]string{"export"}, args...)...)
		assert.Equal(t, 2, code, "%v: %s", args, stderr)
	}
	_, stderr, _ = runGTC(t, e, "export", "--format", "xml", "--out", bad)
	assert.Contains(t, stderr, "Unknown export format 'xml' (known: csv, json_items, json_snapshot_payload, jsonl, parquet)")
	assert.NoFileExists(t, bad)

	// Artifacts, then the snapshot commands.
	stdout, stderr, code = runGTC(t, e, "export", "--artifact", "--format", "jsonl", "--actor", "ci-bot")
	require.Equal(t, 0, code, stderr)
	var art map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &art))
	id := art["snapshotId"].(string)
	assert.FileExists(t, filepath.Join(dir, "exports", "snapshots", id, "manifest.json"), "local storage defaults to the data directory")

	stdout, stderr, code = runGTC(t, e, "export", "list")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, id)
	assert.Contains(t, stdout, "ci-bot")

	// The snapshot commands do not need the item store: with a Cosmos DB store that cannot be
	// reached they still list the snapshots of the local export storage.
	unreachable := append(slices.Clone(e), "GTC_REPO_BACKEND=cosmos", "GTC_COSMOS_ENDPOINT=http://127.0.0.1:9/",
		"GTC_COSMOS_KEY="+base64.StdEncoding.EncodeToString([]byte("not-a-real-key")))
	stdout, stderr, code = runGTC(t, unreachable, "export", "list")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, id)

	stdout, stderr, code = runGTC(t, e, "export", "show", id)
	require.Equal(t, 0, code, stderr)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &m))
	assert.Equal(t, "ci-bot", m["createdBy"])

	got := filepath.Join(dir, "got.jsonl")
	_, stderr, code = runGTC(t, e, "export", "get", id, "ground-truth-items.jsonl", "--out", got)
	require.Equal(t, 0, code, stderr)
	stored, err := os.ReadFile(filepath.Join(dir, "exports", "snapshots", id, "ground-truth-items.jsonl"))
	require.NoError(t, err)
	fetched, err := os.ReadFile(got)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(stored, fetched))

	_, stderr, code = runGTC(t, e, "export", "get", id, "../../gtc.db", "--out", "-")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "File not found")
	_, _, code = runGTC(t, e, "export", "show", "20990101T000000Z")
	assert.Equal(t, 2, code)

	// An incomplete leftover is pruned; complete snapshots stay.
	leftover := filepath.Join(dir, "exports", "snapshots", "20200101T000000Z")
	require.NoError(t, os.MkdirAll(leftover, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(leftover, ".reserved"), nil, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(leftover, "ground-truth-x.json"), []byte("{}"), 0o600))
	stdout, stderr, code = runGTC(t, e, "export", "prune", "--incomplete", "--older-than", "0s", "--dry-run")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "would delete incomplete snapshot 20200101T000000Z")
	assert.DirExists(t, leftover)
	stdout, stderr, code = runGTC(t, e, "export", "prune", "--incomplete", "--older-than", "0s")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "deleted 1 snapshots")
	assert.NoDirExists(t, leftover)
	assert.DirExists(t, filepath.Join(dir, "exports", "snapshots", id))
	_, _, code = runGTC(t, e, "export", "prune", "--complete")
	assert.Equal(t, 2, code, "--complete needs --older-than")
}

func TestServeChecksExportSettings(t *testing.T) {
	dir := t.TempDir()
	_, stderr, code := runGTC(t, env(dir, "GTC_EXPORT_PROCESSOR_ORDER=merge_tags,merge_tags"), "serve")
	assert.Equal(t, 3, code)
	assert.Contains(t, stderr, `GTC_EXPORT_PROCESSOR_ORDER: export processor "merge_tags" is listed more than once`)
	_, stderr, code = runGTC(t, env(dir, "GTC_EXPORT_PROCESSOR_ORDER=Merge_Tags"), "serve")
	assert.Equal(t, 3, code)
	assert.Contains(t, stderr, `unknown export processor "Merge_Tags" (registered: merge_tags, split_turns, strip_internal)`)
	_, stderr, code = runGTC(t, env(dir, "GTC_EXPORT_INTERNAL_FIELDS=_etag,id"), "serve")
	assert.Equal(t, 3, code)
	assert.Contains(t, stderr, "GTC_EXPORT_INTERNAL_FIELDS cannot remove id or datasetName")
	_, stderr, code = runGTC(t, env(dir, "GTC_EXPORT_STORAGE_BACKEND=s3"), "serve")
	assert.Equal(t, 3, code)
	assert.Contains(t, stderr, `GTC_EXPORT_STORAGE_BACKEND="s3": must be one of local, blob`)
}

// TestServeExportsToBlob runs the server against Azurite: it creates its container at
// startup, writes an artifact export there, lists and serves it.
func TestServeExportsToBlob(t *testing.T) {
	cs := testenv.BlobConnectionString(t)
	dir := t.TempDir()
	_, stderr, code := runGTC(t, env(dir), "seed", "--items", "40", "--datasets", "2")
	require.Equal(t, 0, code, stderr)
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	container := "t-" + hex.EncodeToString(rnd[:])
	e := env(dir, "GTC_EXPORT_STORAGE_BACKEND=blob", "GTC_EXPORT_BLOB_CONNECTION_STRING="+cs,
		"GTC_EXPORT_BLOB_CONTAINER="+container)
	deleteContainerAtCleanup(t, cs, container)

	// Without permission to create it, a missing container stops startup.
	_, stderr, code = runGTC(t, e, "serve")
	assert.Equal(t, 3, code)
	assert.Contains(t, stderr, "export container '"+container+"' does not exist (create it, or set GTC_EXPORT_BLOB_CREATE_CONTAINER=true)")

	s := startServer(t, append(e, "GTC_EXPORT_BLOB_CREATE_CONTAINER=true"))
	s.logContains(t, "created export container")
	res, err := http.Post(s.base+"/v1/ground-truths/snapshot", "application/json", strings.NewReader(`{"format":"jsonl","delivery":{"mode":"artifact"}}`))
	require.NoError(t, err)
	var art map[string]any
	require.NoError(t, json.NewDecoder(res.Body).Decode(&art))
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, "%v", art)
	id := art["snapshotId"].(string)

	list := getJSON(t, s.base+"/v1/exports")
	items := list["items"].([]any)
	require.Len(t, items, 1)
	assert.Equal(t, id, items[0].(map[string]any)["snapshotId"])

	manifest := getJSON(t, s.base+"/v1/exports/"+id)
	file := manifest["files"].([]any)[0].(map[string]any)
	res, err = http.Get(s.base + "/v1/exports/" + id + "/files/ground-truth-items.jsonl")
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	sum := sha256.Sum256(body)
	assert.Equal(t, file["sha256"], hex.EncodeToString(sum[:]))
	assert.Equal(t, `"`+file["sha256"].(string)+`"`, res.Header.Get("ETag"))
	assert.Equal(t, manifest["count"], float64(bytes.Count(body, []byte("\n"))))

	// The CLI reads the same storage.
	stdout, stderr, code := runGTC(t, append(e, "GTC_EXPORT_BLOB_CREATE_CONTAINER=true"), "export", "list")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, id)

	// A release goes to the same container, and its name outlives its deletion there.
	res, err = http.Post(s.base+"/v1/releases", "application/json",
		strings.NewReader(`{"name":"r1","formats":["jsonl","parquet"],"splits":{"train":0.5,"test":0.5}}`))
	require.NoError(t, err)
	var rel map[string]any
	require.NoError(t, json.NewDecoder(res.Body).Decode(&rel))
	res.Body.Close()
	require.Equal(t, http.StatusCreated, res.StatusCode, "%v", rel)
	for _, f := range rel["files"].([]any) {
		f := f.(map[string]any)
		res, err = http.Get(s.base + "/v1/releases/r1/files/" + f["name"].(string))
		require.NoError(t, err)
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode, f["name"])
		sum := sha256.Sum256(body)
		assert.Equal(t, f["sha256"], hex.EncodeToString(sum[:]), f["name"])
		if strings.HasSuffix(f["name"].(string), ".parquet") {
			assert.True(t, bytes.HasPrefix(body, []byte("PAR1")) && bytes.HasSuffix(body, []byte("PAR1")), f["name"])
		}
	}
	stdout, stderr, code = runGTC(t, append(e, "GTC_EXPORT_BLOB_CREATE_CONTAINER=true"), "release", "delete", "r1", "--actor", "ops")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "ops", "the CLI says who deleted the release")
	res, err = http.Get(s.base + "/v1/releases/r1")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusGone, res.StatusCode)
	res, err = http.Post(s.base+"/v1/releases", "application/json", strings.NewReader(`{"name":"r1","formats":["jsonl"]}`))
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusConflict, res.StatusCode, "the tombstone in Blob Storage keeps the name")
}
