package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/sqlite"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// legacyFixture is a v1 document as the reference backend stored it.
func legacyFixture(i int) map[string]any {
	doc := map[string]any{
		"id": fmt.Sprintf("gt-%05d", i), "datasetName": "support", "status": "approved",
		"synthQuestion": fmt.Sprintf("Which form renews parking permit %d?", i),
		"answer":        "Use form P-12 from the permits page.",
		"refs":          []any{map[string]any{"url": "https://support.example.com/help/parking", "title": "Parking"}},
		"tags":          []any{"Source:SME", "long_doc"},
		"updatedAt":     "2025-05-01T10:00:00Z", "reviewedAt": "2025-05-01T10:00:00Z",
	}
	if i%2 == 0 {
		doc["bucket"] = i % 5 // numeric: moves to its derived bucket
	} else {
		doc["bucket"] = gtc.DeriveBucket("support", doc["id"].(string))
	}
	return doc
}

// seedLegacy writes n legacy documents into the SQLite store of data.
func seedLegacy(t *testing.T, data string, n int) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(data, "gtc.db")})
	require.NoError(t, err)
	defer st.Close()
	docs := make([]map[string]any, 0, 1000)
	for i := range n {
		docs = append(docs, legacyFixture(i))
		if len(docs) == cap(docs) || i == n-1 {
			require.NoError(t, st.InsertRawBatch(context.Background(), docs))
			docs = docs[:0]
		}
	}
}

func decodeSummary(t *testing.T, out string) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	require.NoError(t, dec.Decode(&m), "stdout: %s", out)
	assert.False(t, dec.More(), "--json prints exactly one object")
	return m
}

func TestMigrateCommand(t *testing.T) {
	data := t.TempDir()
	seedLegacy(t, data, 40)
	e := env(data)

	_, errOut, code := runGTC(t, e, "migrate", "--batch-size", "0")
	assert.Equal(t, 2, code, errOut)
	assert.Contains(t, errOut, "--batch-size 0: must be between 1 and 1000")
	_, _, code = runGTC(t, e, "migrate", "--no-such-flag")
	assert.Equal(t, 2, code)
	_, errOut, code = runGTC(t, e, "migrate", "--dry-run", "--check")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--dry-run and --check exclude each other")
	badMap := filepath.Join(t.TempDir(), "map.json")
	require.NoError(t, os.WriteFile(badMap, []byte(`{"long_doc": 3}`), 0o600))
	_, errOut, code = runGTC(t, e, "migrate", "--dry-run", "--tag-map", badMap)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `the value of "long_doc" must be a string or null`)

	out, errOut, code := runGTC(t, e, "migrate", "--check", "--json")
	assert.Equal(t, 4, code, errOut)
	sum := decodeSummary(t, out)
	assert.Equal(t, 40.0, sum["migrated"])
	assert.Equal(t, true, sum["check"])
	assert.Equal(t, 4.0, sum["exitCode"])

	out, errOut, code = runGTC(t, e, "migrate", "--dry-run", "--progress", "none")
	assert.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	assert.Regexp(t, `^~ support/0/gt-00000  legacy → v2`, lines[0])
	assert.Contains(t, out, "    warning LEGACY_TAG_CONVERTED: ")
	assert.Contains(t, out, "migrate: 40 documents examined, would migrate 40 (0 re-indexed, 20 moved), 0 already current, 0 failed")

	report := filepath.Join(t.TempDir(), "run.jsonl")
	metricsFile := filepath.Join(t.TempDir(), "migrate.prom")
	out, errOut, code = runGTC(t, e, "migrate", "--json", "--report", report, "--metrics-file", metricsFile)
	require.Equal(t, 0, code, errOut)
	sum = decodeSummary(t, out)
	assert.Equal(t, 40.0, sum["migrated"])
	assert.Equal(t, 20.0, sum["moved"])
	prom, err := os.ReadFile(metricsFile)
	require.NoError(t, err, "--metrics-file writes the run's counters")
	fams := parseMetrics(t, string(prom))
	assert.Equal(t, 40.0, value(fams, "gtc_migrate_documents_total", map[string]string{"result": "migrated"}))
	assert.Equal(t, 20.0, value(fams, "gtc_migrate_documents_total", map[string]string{"result": "moved"}))
	assert.Equal(t, 0.0, value(fams, "gtc_migrate_documents_total", map[string]string{"result": "failed"}))
	assert.Equal(t, 0.0, value(fams, "gtc_migrate_last_run", map[string]string{"field": "exit_code"}))
	assert.Equal(t, 1.0, value(fams, "gtc_build_info", map[string]string{"version": "9.9.9-test"}))
	_, hasProcess := fams["process_resident_memory_bytes"]
	assert.False(t, hasProcess, "the file holds the run's series, not those of a process that has ended")
	assert.Equal(t, map[string]any{"markerWritten": true}, sum["registry"])
	assert.Nil(t, sum["resumedFrom"])
	f, err := os.Open(report)
	require.NoError(t, err)
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); n++ {
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
		assert.Contains(t, []any{"migrate", "move"}, line["action"])
		assert.NotEmpty(t, line["changes"])
	}
	assert.Equal(t, 40, n, "the report has one line per changed document")

	out, errOut, code = runGTC(t, e, "migrate", "--check")
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "migrate: 40 documents examined, would migrate 0")
}

// TestMigrateKilledMidRunResumes: a run killed with SIGKILL (no chance to clean up) is
// resumed by the next run from its checkpoint; at the end every document is migrated once.
func TestMigrateKilledMidRunResumes(t *testing.T) {
	data := t.TempDir()
	// 5,000 documents are 50 batches: the kill lands after the third, and the 46 or so
	// batches still to write leave the poll below ample time to catch the run mid-way.
	const n = 5000
	seedLegacy(t, data, n)
	e := env(data, "GTC_SQLITE_SYNCHRONOUS=FULL")

	cmd := exec.Command(gtcBin, "migrate", "--batch-size", "100", "--progress", "none", "--json")
	cmd.Env = e
	require.NoError(t, cmd.Start())
	// Kill it once the checkpoint shows a few finished batches.
	var cp map[string]any
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		matches, _ := filepath.Glob(filepath.Join(data, "migrate-*.checkpoint.json"))
		if len(matches) == 1 {
			if b, err := os.ReadFile(matches[0]); err == nil && json.Unmarshal(b, &cp) == nil {
				if c, _ := cp["counters"].(map[string]any); c != nil && c["total"].(float64) >= 300 {
					break
				}
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	require.NotNil(t, cp, "the checkpoint was written during the run")
	require.Equal(t, "items", cp["phase"], "killed while converting items")
	done := int(cp["counters"].(map[string]any)["total"].(float64))
	require.Less(t, done, n, "killed before the end")

	out, errOut, code := runGTC(t, e, "migrate", "--batch-size", "100", "--progress", "none", "--json")
	require.Equal(t, 0, code, errOut)
	sum := decodeSummary(t, out)
	assert.Equal(t, cp["runId"], sum["resumedFrom"])
	// The documents the killed run converted in its last, unrecorded batch are not counted
	// by either run (at most one batch); every other document is counted exactly once.
	total := sum["total"].(float64)
	t.Logf("killed after %d documents; the resumed run: total %v, migrated %v, skipped %v", done, total, sum["migrated"], sum["skipped"])
	assert.LessOrEqual(t, total, float64(n))
	assert.GreaterOrEqual(t, total, float64(n-100))
	assert.Equal(t, total, sum["migrated"].(float64)+sum["skipped"].(float64))
	assert.LessOrEqual(t, sum["skipped"].(float64), 100.0, "only the batch in flight at the kill is seen again")
	assert.Equal(t, map[string]any{"markerWritten": true}, sum["registry"])

	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(data, "gtc.db")})
	require.NoError(t, err)
	defer st.Close()
	count, err := st.Items().Count(context.Background(), gtc.Filter{})
	require.NoError(t, err)
	assert.Equal(t, n, count, "every document is a visible item")
	status, err := st.Status(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 0, status.Pending)
	assert.True(t, status.IndexComplete)
}

// TestMigrateConvertThenImport is the path from a reference container dump to any store:
// gtc migrate convert writes importable records (a bad document is reported and left out),
// and gtc import takes them without warnings.
func TestMigrateConvertThenImport(t *testing.T) {
	dir := t.TempDir()
	bad := legacyFixture(2)
	bad["toolCalls"] = []any{map[string]any{"name": ""}}
	dump, err := json.Marshal([]any{legacyFixture(0), legacyFixture(1), bad})
	require.NoError(t, err)
	in, out := filepath.Join(dir, "dump.json"), filepath.Join(dir, "items.jsonl")
	require.NoError(t, os.WriteFile(in, dump, 0o600))
	e := env(filepath.Join(dir, "data"))

	_, errOut, code := runGTC(t, e, "migrate", "convert", "--in", in, "--out", out)
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, errOut, "document 2 (support/2/gt-00002): INVALID_DOCUMENT: toolCalls[0].name cannot be empty")
	assert.Contains(t, errOut, "migrate convert: 2 documents converted, 1 failed")
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 2)
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &rec))
	assert.NotContains(t, rec, "bucket", "a numeric bucket is left for import to assign")
	assert.Equal(t, []any{"custom:long_doc", "source:sme"}, rec["manualTags"])

	broken, brokenOut := filepath.Join(dir, "broken.json"), filepath.Join(dir, "broken.jsonl")
	require.NoError(t, os.WriteFile(broken, []byte(`[{"id": "a", "datasetName": "support"}, {"id": `), 0o600))
	_, errOut, code = runGTC(t, e, "migrate", "convert", "--in", broken, "--out", brokenOut)
	assert.Equal(t, 2, code, errOut)
	assert.Contains(t, errOut, "nothing was written")
	assert.NoFileExists(t, brokenOut, "a failed conversion leaves no partial file")

	stdout, errOut, code := runGTC(t, e, "import", out, "--register-tags", "--json", "--progress", "none")
	require.Equal(t, 0, code, errOut)
	sum := decodeSummary(t, stdout)
	assert.Equal(t, 2.0, sum["imported"])
	assert.Empty(t, sum["warningCounts"], "a conversion imports without warnings")
}
