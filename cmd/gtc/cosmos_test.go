package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/config"
	"github.com/gtc-dev/gtc/storage/cosmos"
	"github.com/gtc-dev/gtc/storage/cosmos/cosmostest"
	"github.com/gtc-dev/gtc/storage/storetest"
	"github.com/gtc-dev/gtc/storage/storetest/testenv"
)

// TestCosmosOptionsMatchTheStore checks that the settings' defaults are the store's own
// defaults, so an unset variable and an omitted option mean the same.
func TestCosmosOptionsMatchTheStore(t *testing.T) {
	cfg := config.Default()
	o := cosmosOptions(cfg)
	assert.Equal(t, cosmos.DefaultDatabase, o.Database)
	assert.Equal(t, cosmos.DefaultContainers(), o.Containers)
	assert.Equal(t, cosmos.DefaultMaxConns, o.MaxConnsPerHost)
	assert.Equal(t, cosmos.DefaultRequestTimeout, o.RequestTimeout)
	assert.Equal(t, cosmos.DefaultRetryAttempts, o.RetryAttempts)
	assert.Equal(t, cosmos.DefaultRetryDelay, o.RetryDelay)
	assert.Equal(t, cosmos.DefaultPageSize, o.PageSize)
	assert.Equal(t, cosmos.RebuildAuto, o.RebuildRegistry)
	assert.Equal(t, float64(cosmos.DefaultSlowQueryRU), o.SlowQueryRU)
	assert.True(t, o.SlowQueriesOnly)
	assert.False(t, o.LogQueryMetrics)
	assert.False(t, o.CreateContainers)
	assert.Zero(t, o.AutoscaleMaxThroughput)
	assert.Equal(t, "true", o.VerifyTLS)
	assert.Empty(t, o.Key, "authentication is chosen by openStore")

	cfg.CosmosSlowQueryRUThreshold = 0
	assert.Equal(t, math.SmallestNonzeroFloat64, cosmosOptions(cfg).SlowQueryRU, "0 logs every query, not the store's default of 10")

	assert.Equal(t, "entra id", cosmosAuth(cfg))
	cfg.UseCosmosEmulator = true
	assert.Equal(t, "emulator key", cosmosAuth(cfg))
	cfg.CosmosKey = "a2V5"
	assert.Equal(t, "key", cosmosAuth(cfg), "a key wins over the emulator key")
}

// TestCosmosSettingsAreChecked needs no server: invalid Cosmos settings stop every command
// before any connection, and the key never appears in a message or in --print-config.
func TestCosmosSettingsAreChecked(t *testing.T) {
	const key = "s3cret+not/base64"
	_, stderr, code := runGTC(t, env(t.TempDir(), "GTC_REPO_BACKEND=cosmos", "GTC_COSMOS_KEY="+key, "GTC_COSMOS_REBUILD_REGISTRY=weekly"), "serve")
	assert.Equal(t, 3, code)
	assert.Contains(t, stderr, "GTC_REPO_BACKEND=cosmos needs GTC_COSMOS_ENDPOINT")
	assert.Contains(t, stderr, "GTC_COSMOS_KEY=***: must be valid base64")
	assert.Contains(t, stderr, `GTC_COSMOS_REBUILD_REGISTRY="weekly": must be one of auto, always, never`)
	assert.NotContains(t, stderr, key)

	_, stderr, code = runGTC(t, env(t.TempDir(), "GTC_REPO_BACKEND=cosmos", "GTC_COSMOS_ENDPOINT=http://127.0.0.1:9/"), "seed")
	assert.Equal(t, 3, code)
	assert.Contains(t, stderr, "uses http://: Entra ID tokens are only sent over https")

	out, _, code := runGTC(t, env(t.TempDir(), "GTC_REPO_BACKEND=cosmos", "GTC_COSMOS_ENDPOINT=https://acct.documents.azure.com:443/",
		"GTC_COSMOS_KEY="+testenv.EmulatorKey), "serve", "--print-config")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "GTC_REPO_BACKEND=cosmos\n")
	assert.Contains(t, out, "GTC_COSMOS_KEY=***\n")
	assert.NotContains(t, out, testenv.EmulatorKey[:16])
}

// cosmosEnv is the environment of a gtc process on a fresh database of the Cosmos DB test
// server, which is dropped when the test ends (after the processes it started are stopped).
func cosmosEnv(t *testing.T, dataDir string, kv ...string) (environ []string, database string) {
	t.Helper()
	ce := testenv.Cosmos(t)
	var b [8]byte
	_, _ = rand.Read(b[:])
	database = "t_" + hex.EncodeToString(b[:])
	t.Logf("database %s at %s", database, ce.Endpoint)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cred, err := azcosmos.NewKeyCredential(ce.Key)
		require.NoError(t, err)
		c, err := azcosmos.NewClientWithKey(ce.Endpoint, cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: ce.HTTP}})
		require.NoError(t, err)
		defer c.Close()
		db, err := c.NewDatabase(database)
		require.NoError(t, err)
		if _, err := db.Delete(ctx, nil); err != nil {
			var re *azcore.ResponseError
			if !(errors.As(err, &re) && re.StatusCode == http.StatusNotFound) {
				t.Errorf("drop database %s: %v", database, err)
			}
		}
	})
	kv = append([]string{
		"GTC_REPO_BACKEND=cosmos", "GTC_COSMOS_ENDPOINT=" + ce.Endpoint, "GTC_COSMOS_KEY=" + ce.Key,
		"GTC_COSMOS_DB_NAME=" + database,
	}, kv...)
	if u, _ := url.Parse(ce.Endpoint); u.Scheme == "https" && ce.Flavor != testenv.FlavorAzure {
		// An emulator on this machine serves a self-signed certificate.
		kv = append(kv, "GTC_COSMOS_CONNECTION_VERIFY=false")
	}
	return env(dataDir, kv...), database
}

// TestCosmosMissingContainersStopStartup: without GTC_COSMOS_CREATE_CONTAINERS, startup
// stops with a message naming the missing containers and exit code 3.
func TestCosmosMissingContainersStopStartup(t *testing.T) {
	e, db := cosmosEnv(t, t.TempDir())
	_, stderr, code := runGTC(t, e, "serve")
	assert.Equal(t, 3, code, stderr)
	assert.Contains(t, stderr, "Cosmos DB container(s) missing in database '"+db+"': ground_truth, assignments, tags, tag_definitions, meta, agent-operations. Create them, or set GTC_COSMOS_CREATE_CONTAINERS=true.")
	assert.Contains(t, stderr, `"msg":"item store is Azure Cosmos DB"`)
}

// TestServeOnCosmos runs the whole product on the Cosmos DB test server: the maintenance
// commands and the server create, read, update and export items there, and a restart
// without GTC_COSMOS_CREATE_CONTAINERS finds them.
func TestServeOnCosmos(t *testing.T) {
	dir := t.TempDir()
	e, db := cosmosEnv(t, dir, "GTC_COSMOS_CREATE_CONTAINERS=true")
	key := envValue(e, "GTC_COSMOS_KEY")

	out, stderr, code := runGTC(t, e, "seed", "--items", "12", "--datasets", "2")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "seeded 12 items in 2 datasets")
	assert.Contains(t, stderr, `"msg":"item store is Azure Cosmos DB"`)
	assert.Contains(t, stderr, `"database":"`+db+`"`)
	assert.Contains(t, stderr, `"auth":"key"`)
	assert.NotContains(t, stderr, key, "the key is never logged")

	s := startServer(t, e)
	s.logContains(t, `"msg":"gtc is serving"`)
	s.logContains(t, `"store":"cosmos"`)
	body := `[{"id": "gt-cosmos", "datasetName": "cosmos-demo", "manualTags": ["Source: SME"],
		"history": [{"role": "user", "msg": "Where is the installer?"}, {"role": "assistant", "msg": "On the download page."}]}]`
	res, err := http.Post(s.base+"/v1/ground-truths", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)

	res, err = http.Get(s.base + "/v1/ground-truths/cosmos-demo")
	require.NoError(t, err)
	var items []map[string]any
	require.NoError(t, json.NewDecoder(res.Body).Decode(&items))
	res.Body.Close()
	require.Len(t, items, 1)
	it := items[0]
	assert.Equal(t, "gt-cosmos", it["id"])
	assert.Equal(t, []any{"source:sme"}, it["manualTags"])
	itemPath := "/v1/ground-truths/cosmos-demo/" + it["bucket"].(string) + "/gt-cosmos"

	// A conditional write through the API: approve with the item's ETag.
	req, err := http.NewRequest(http.MethodPut, s.base+itemPath, strings.NewReader(`{"status": "approved"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("If-Match", it["_etag"].(string))
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	got := getJSON(t, s.base+itemPath)
	assert.Equal(t, "approved", got["status"])
	assert.NotEqual(t, it["_etag"], got["_etag"])

	stats := getJSON(t, s.base+"/v1/ground-truths/stats")
	total := stats["draft"].(float64) + stats["approved"].(float64) + stats["deleted"].(float64)
	assert.Equal(t, 13.0, total, "the seeded items and the imported one: %v", stats)
	res, err = http.Get(s.base + "/v1/datasets")
	require.NoError(t, err)
	var datasets []string
	require.NoError(t, json.NewDecoder(res.Body).Decode(&datasets))
	res.Body.Close()
	assert.Len(t, datasets, 3, "the two seeded datasets and cosmos-demo, from the registry: %v", datasets)
	assert.Contains(t, datasets, "cosmos-demo")
	require.NoError(t, s.cmd.Process.Kill())
	<-s.done

	// Restart without permission to create containers: they exist now.
	var restart []string
	for _, kv := range e {
		if !strings.HasPrefix(kv, "GTC_COSMOS_CREATE_CONTAINERS=") {
			restart = append(restart, kv)
		}
	}
	s2 := startServer(t, restart)
	assert.Equal(t, "approved", getJSON(t, s2.base+itemPath)["status"])
	assert.NotContains(t, s2.stderr.String(), key)

	// An in-process export reads the same database.
	out, stderr, code = runGTC(t, restart, "export", "--format", "jsonl", "--dataset", "cosmos-demo", "--out", "-")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, `"id":"gt-cosmos"`)
}

// envValue returns the value of name in an environment list.
func envValue(environ []string, name string) string {
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// TestMigrateOnCosmos: documents the reference backend wrote (v1 shape, a numeric bucket,
// unregistered buckets) are invisible until gtc migrate converts them; the run registers
// their buckets, moves the numeric-bucket one, writes the marker, and a second run changes
// nothing.
func TestMigrateOnCosmos(t *testing.T) {
	ce := testenv.Cosmos(t)
	if cosmostest.Gaps(ce).IdentityByFirstKeyPath {
		t.Skip(storetest.SkipIdentityByFirstKeyPath)
	}
	dir := t.TempDir()
	st, _ := cosmostest.Open(t, ce, nil)
	database := st.Database()
	for i := range 6 {
		cosmostest.InsertRaw(t, ce, st, legacyFixture(i))
	}
	require.NoError(t, st.Close())
	e, _ := cosmosEnv(t, dir)
	e = append(e, "GTC_COSMOS_DB_NAME="+database)

	out, stderr, code := runGTC(t, e, "migrate", "--check", "--json")
	require.Equal(t, 4, code, stderr)
	assert.Equal(t, 6.0, decodeSummary(t, out)["migrated"])

	out, stderr, code = runGTC(t, e, "migrate", "--json", "--progress", "none")
	require.Equal(t, 0, code, stderr)
	sum := decodeSummary(t, out)
	assert.Equal(t, 6.0, sum["migrated"])
	assert.Equal(t, 3.0, sum["moved"], "the numeric buckets move")
	reg := sum["registry"].(map[string]any)
	assert.Equal(t, true, reg["markerWritten"])
	buckets := map[string]bool{}
	for i := range 6 {
		buckets[gtc.DeriveBucket("support", fmt.Sprintf("gt-%05d", i))] = true
	}
	assert.Equal(t, float64(len(buckets)), reg["bucketsRegistered"], "each document's bucket is in the registry")
	assert.Equal(t, 0.0, reg["duplicateIds"])

	out, stderr, code = runGTC(t, e, "migrate", "--check", "--json")
	assert.Equal(t, 0, code, stderr)
	assert.Equal(t, 0.0, decodeSummary(t, out)["migrated"], "a second run changes nothing")

	out, stderr, code = runGTC(t, e, "export", "--status", "", "--format", "json_items", "--out", "-")
	require.Equal(t, 0, code, stderr)
	var items []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &items))
	assert.Len(t, items, 6, "every converted document is visible")
}
