package main

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStoreFromBeforeHistoryUpgradesInPlace opens a SQLite store written by the release
// before item history (testdata/upgrade/before-history.db.gz: `gtc seed --items 6
// --datasets 2` with that release, vacuumed and gzipped). Its items have no revisions; the
// first write of one records its baseline (the item as it was) and then the change, so the
// item's history starts where it was found.
func TestStoreFromBeforeHistoryUpgradesInPlace(t *testing.T) {
	data := t.TempDir()
	f, err := os.Open(filepath.Join("testdata", "upgrade", "before-history.db.gz"))
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	out, err := os.Create(filepath.Join(data, "gtc.db"))
	require.NoError(t, err)
	_, err = io.Copy(out, zr)
	require.NoError(t, err)
	require.NoError(t, out.Close())

	s := startServer(t, env(data))
	defer faultStop(t, s)
	var items []map[string]any
	for _, ds := range []string{"customer-support", "billing-agent"} {
		res, err := http.Get(s.base + "/v1/ground-truths/" + ds)
		require.NoError(t, err)
		var page []map[string]any
		require.NoError(t, json.NewDecoder(res.Body).Decode(&page))
		res.Body.Close()
		items = append(items, page...)
	}
	require.Len(t, items, 6, "every item of the old store is read")
	old := items[0]
	assert.Equal(t, float64(0), old["revision"], "an item written before history has no revision yet")
	path := s.base + "/v1/ground-truths/" + old["datasetName"].(string) + "/" + old["bucket"].(string) + "/" + old["id"].(string)
	assert.Empty(t, getJSON(t, path+"/history")["revisions"])

	req, err := http.NewRequest(http.MethodPut, path, strings.NewReader(`{"comment":"checked after the upgrade"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("If-Match", old["_etag"].(string))
	req.Header.Set("X-User-Id", "alice@example.com")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)

	revs := getJSON(t, path+"/history")["revisions"].([]any)
	require.Len(t, revs, 2)
	change, base := revs[0].(map[string]any), revs[1].(map[string]any)
	assert.Equal(t, float64(2), change["revision"])
	assert.Equal(t, "api", change["source"])
	assert.Equal(t, "alice@example.com", change["actor"])
	assert.Contains(t, change["paths"], "/comment")
	assert.Equal(t, float64(1), base["revision"])
	assert.Equal(t, "baseline", base["source"])
	updated, err := time.Parse(time.RFC3339Nano, old["updatedAt"].(string))
	require.NoError(t, err)
	at, err := time.Parse(time.RFC3339Nano, base["at"].(string))
	require.NoError(t, err)
	assert.True(t, updated.Equal(at), "the baseline is dated when the item was last written: %s, %s", updated, at)
	assert.Equal(t, old["_etag"], base["etagAfter"])

	// The baseline is the item exactly as the old release served it.
	was := getJSON(t, path+"/history/1")
	for k, v := range old {
		if k == "revision" {
			continue
		}
		assert.Equal(t, v, was[k], "key %s of the item as it was", k)
	}
	assert.Equal(t, float64(1), was["revision"])
}

// TestHistoryRetentionKeepsTheNewestRevisions: with GTC_HISTORY_MAX_REVISIONS=3 an item
// written six times keeps its three newest revisions; the oldest kept says where the history
// now starts, and the versions before it are gone.
func TestHistoryRetentionKeepsTheNewestRevisions(t *testing.T) {
	s := startServer(t, env(t.TempDir(), "GTC_HISTORY_MAX_REVISIONS=3"))
	defer faultStop(t, s)
	res, err := http.Post(s.base+"/v1/ground-truths", "application/json",
		strings.NewReader(`[{"id":"r1","datasetName":"kept","history":[{"role":"user","msg":"How do I rotate keys?"}]}]`))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	var list []map[string]any
	res, err = http.Get(s.base + "/v1/ground-truths/kept")
	require.NoError(t, err)
	require.NoError(t, json.NewDecoder(res.Body).Decode(&list))
	res.Body.Close()
	path := s.base + "/v1/ground-truths/kept/" + list[0]["bucket"].(string) + "/r1"
	etag := list[0]["_etag"].(string)
	for i := range 5 {
		req, err := http.NewRequest(http.MethodPut, path, strings.NewReader(`{"comment":"pass `+strconv.Itoa(i)+`"}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("If-Match", etag)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var it map[string]any
		require.NoError(t, json.NewDecoder(res.Body).Decode(&it))
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode, it)
		etag = it["_etag"].(string)
	}
	revs := getJSON(t, path+"/history")["revisions"].([]any)
	require.Len(t, revs, 3)
	oldest := revs[2].(map[string]any)
	assert.Equal(t, float64(4), oldest["revision"])
	assert.Equal(t, float64(4), oldest["prunedBefore"], "the oldest kept revision says where the history starts")
	assert.Equal(t, "pass 2", getJSON(t, path+"/history/4")["comment"], "the oldest kept version is rebuilt")
	res, err = http.Get(path + "/history/3")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusNotFound, res.StatusCode, "a pruned revision is gone")
}
