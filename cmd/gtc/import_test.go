package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/sqlite"
)

// runGTCWithStdin is runGTC with the given text on stdin.
func runGTCWithStdin(t *testing.T, environ []string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(gtcBin, args...)
	cmd.Env = environ
	cmd.Stdin = strings.NewReader(stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return o.String(), e.String(), code
}

// importSummaryOf decodes the --json summary and checks that it is the only thing on stdout.
func importSummaryOf(t *testing.T, stdout string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(stdout))
	var sum map[string]any
	require.NoError(t, dec.Decode(&sum), stdout)
	_, err := dec.Token()
	require.ErrorIs(t, err, io.EOF, "stdout holds exactly one JSON object: %s", stdout)
	assert.Equal(t, "import", sum["command"])
	return sum
}

// exportedItems exports every item of the store of environ and returns the records by
// (datasetName, id), without the _etag a new store issues anew.
func exportedItems(t *testing.T, environ []string) map[string]map[string]any {
	t.Helper()
	out, stderr, code := runGTC(t, environ, "export", "--status", "", "--format", "jsonl", "--no-processors", "--out", "-")
	require.Equal(t, 0, code, stderr)
	items := map[string]map[string]any{}
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		delete(rec, "_etag")
		items[rec["datasetName"].(string)+"/"+rec["id"].(string)] = rec
	}
	return items
}

func TestImportRoundTripsEveryExportFormat(t *testing.T) {
	src := t.TempDir()
	srcEnv := env(src)
	_, stderr, code := runGTC(t, srcEnv, "seed", "--items", "40", "--datasets", "2")
	require.Equal(t, 0, code, stderr)
	want := exportedItems(t, srcEnv)
	require.Len(t, want, 40)

	files := map[string]string{}
	for _, format := range []string{"json_snapshot_payload", "json_items", "jsonl"} {
		files[format] = filepath.Join(src, "export-"+format+".out") // no extension: auto reads the first byte
		_, stderr, code := runGTC(t, srcEnv, "export", "--status", "", "--format", format, "--out", files[format])
		require.Equal(t, 0, code, stderr)
	}
	// A snapshot in export storage: one file per record.
	out, stderr, code := runGTC(t, srcEnv, "export", "--status", "", "--artifact")
	require.Equal(t, 0, code, stderr)
	var art map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &art))
	snapshotID := art["snapshotId"].(string)

	for _, tc := range []struct {
		name string
		args []string
	}{
		{"json_snapshot_payload", []string{files["json_snapshot_payload"]}},
		{"json_items", []string{files["json_items"]}},
		{"jsonl", []string{files["jsonl"], "--input-format", "jsonl"}},
		{"snapshot", []string{"--from-snapshot", snapshotID}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := env(t.TempDir(), "GTC_EXPORT_LOCAL_DIR="+src)
			out, stderr, code := runGTC(t, dst, append([]string{"import", "--json", "--batch-size", "7"}, tc.args...)...)
			require.Equal(t, 0, code, stderr)
			sum := importSummaryOf(t, out)
			assert.Equal(t, 40.0, sum["total"])
			assert.Equal(t, 40.0, sum["imported"])
			assert.Equal(t, 0.0, sum["failed"])
			assert.Equal(t, 0.0, sum["exitCode"])
			assert.Equal(t, want, exportedItems(t, dst), "the imported items are the exported ones")

			// Importing the same export again is a no-op.
			out, stderr, code = runGTC(t, dst, append([]string{"import", "--json"}, tc.args...)...)
			require.Equal(t, 0, code, stderr)
			sum = importSummaryOf(t, out)
			assert.Equal(t, 40.0, sum["skipped"])
			assert.Equal(t, 0.0, sum["imported"])
			assert.Equal(t, want, exportedItems(t, dst))
		})
	}
}

func TestImportFailsBadItemsAlone(t *testing.T) {
	dir := t.TempDir()
	e := env(dir)
	input := `[
	  {"id": "ok-1", "datasetName": "support", "history": [{"role": "user", "msg": "How do I reset?"}, {"role": "assistant", "msg": "Mail help@example.com"}]},
	  {"id": "bad-schema", "datasetName": "support", "history": [{"role": "user", "msg": "  "}], "synthetic": true},
	  {"id": "bad-tag", "datasetName": "support", "manualTags": ["nocolon"]},
	  {"id": "unknown-tag", "datasetName": "support", "manualTags": ["nosuch:tag"]},
	  "not an object",
	  {"id": "ok-2", "datasetName": "support", "manualTags": [], "tags": ["a:b"], "history": [{"role": "user", "msg": "q"}]}
	]`
	file := filepath.Join(dir, "items.json")
	require.NoError(t, os.WriteFile(file, []byte(input), 0o600))
	report := filepath.Join(dir, "report.jsonl")
	out, stderr, code := runGTC(t, e, "import", file, "--json", "--report", report)
	assert.Equal(t, 1, code, "an item failed: %s", stderr)
	sum := importSummaryOf(t, out)
	assert.Equal(t, 6.0, sum["total"])
	assert.Equal(t, 2.0, sum["imported"], "the good items land")
	assert.Equal(t, 4.0, sum["failed"])
	assert.Equal(t, 1.0, sum["exitCode"])
	assert.Equal(t, map[string]any{"OUTPUT_FIELDS_IGNORED": 1.0}, sum["warningCounts"])
	assert.Equal(t, 2.0, sum["piiWarnings"], "the address is found in history.answer and in history[1].msg")

	byID := map[string]map[string]any{}
	for _, s := range sum["errorSamples"].([]any) {
		e := s.(map[string]any)
		id, _ := e["itemId"].(string)
		byID[id] = e
	}
	assert.Equal(t, map[string]any{
		"input": file, "index": 1.0, "itemId": "bad-schema", "field": "[1].history[0].msg", "code": "VALIDATION_ERROR",
		"message": "Request validation failed: [1].history[0].msg: history fields cannot be empty (and 1 more)",
		"fields": []any{
			map[string]any{"field": "[1].history[0].msg", "message": "history fields cannot be empty"},
			map[string]any{"field": "[1].synthetic", "message": "unknown field"},
		},
	}, byID["bad-schema"])
	assert.Equal(t, "Request validation failed: [2].manualTags[0]: Invalid tag format (expected group:value): 'nocolon'", byID["bad-tag"]["message"])
	assert.Equal(t, "INVALID_TAG", byID["unknown-tag"]["code"])
	assert.Equal(t, "Unknown tag 'nosuch:tag'.", byID["unknown-tag"]["message"])
	assert.Equal(t, "Request validation failed: [4]: expected object", byID[""]["message"])

	items := exportedItems(t, e)
	assert.Len(t, items, 2)
	assert.Contains(t, items, "support/ok-1")
	assert.Contains(t, items, "support/ok-2")

	// The report has a line for every item that was imported, failed or warned.
	data, err := os.ReadFile(report)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	require.Len(t, lines, 6)
	var first, last map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
	require.NoError(t, json.Unmarshal([]byte(lines[5]), &last))
	assert.Equal(t, "imported", first["action"])
	assert.Len(t, first["piiWarnings"], 2)
	assert.Equal(t, "Ignored output-only fields: tags", last["warnings"].([]any)[0].(map[string]any)["message"])

	// The human summary lists the errors.
	out, _, code = runGTC(t, e, "import", file)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "import: 6 read, imported 0, skipped 2 (already present), failed 4")
	assert.Contains(t, out, "#1 bad-schema: VALIDATION_ERROR: Request validation failed: [1].history[0].msg: history fields cannot be empty")
}

func TestImportOnConflictFail(t *testing.T) {
	dir := t.TempDir()
	e := env(dir)
	first := `{"id": "gt-1", "datasetName": "support", "history": [{"role": "user", "msg": "q1"}]}` + "\n"
	_, stderr, code := runGTCWithStdin(t, e, first, "import", "-")
	require.Equal(t, 0, code, stderr)

	// With --batch-size 1 the run stops at the duplicate: the item after it is not read.
	input := first + `{"id": "gt-2", "datasetName": "support", "history": [{"role": "user", "msg": "q2"}]}` + "\n"
	out, stderr, code := runGTCWithStdin(t, e, input, "import", "-", "--on-conflict", "fail", "--batch-size", "1", "--json")
	assert.Equal(t, 1, code, stderr)
	sum := importSummaryOf(t, out)
	assert.Equal(t, 1.0, sum["failed"])
	assert.Equal(t, 0.0, sum["imported"])
	sample := sum["errorSamples"].([]any)[0].(map[string]any)
	assert.Equal(t, "DUPLICATE_ID", sample["code"])
	assert.Equal(t, "Item with id 'gt-1' already exists", sample["message"])
	assert.NotContains(t, exportedItems(t, e), "support/gt-2")
}

func TestImportDryRunWritesNothing(t *testing.T) {
	dir := t.TempDir()
	e := env(dir)
	input := `{"id": "gt-1", "datasetName": "support", "manualTags": ["brand:new"], "history": [{"role": "user", "msg": "q1"}]}
{"id": "", "datasetName": "support", "history": [{"role": "user", "msg": "q2"}]}
{"id": "gt-1", "datasetName": "support"}
`
	out, stderr, code := runGTCWithStdin(t, e, input, "import", "-", "--dry-run", "--register-tags", "--json")
	require.Equal(t, 0, code, stderr)
	sum := importSummaryOf(t, out)
	assert.Equal(t, true, sum["dryRun"])
	assert.Equal(t, 2.0, sum["imported"], "what would be imported")
	assert.Equal(t, 1.0, sum["skipped"], "a duplicate within the input is found without writing")

	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(dir, "gtc.db")})
	require.NoError(t, err)
	defer st.Close()
	n, err := st.Items().Count(context.Background(), gtc.Filter{})
	require.NoError(t, err)
	assert.Zero(t, n, "no item was written")
	tags, err := st.TagStore().List(context.Background())
	require.NoError(t, err)
	assert.NotContains(t, tags, "brand:new", "no tag was registered")
}

// TestImportDuplicateWarningsAcrossBatches: a draft is compared with the approved items in
// the store and with those that earlier batches of the same run created, most recently
// updated first.
func TestImportDuplicateWarningsAcrossBatches(t *testing.T) {
	dir := t.TempDir()
	e := env(dir)
	item := func(id, status, q string, extra ...string) string {
		return `{"id": "` + id + `", "datasetName": "support", "status": "` + status + `", "history": [{"role": "user", "msg": "` + q + `"}]` +
			strings.Join(extra, "") + "}\n"
	}
	_, stderr, code := runGTCWithStdin(t, e, item("stored", "approved", "How do I reset my password?"), "import", "-")
	require.Equal(t, 0, code, stderr)

	input := item("d1", "draft", "how do I reset my  password?") +
		item("newer", "approved", "How do I reset my password?") +
		item("older", "approved", "How do I reset my password?", `, "updatedAt": "2020-01-02T03:04:05Z"`) +
		item("d2", "draft", "How do I reset my password?") +
		item("audit", "approved", "Where is the audit log?") +
		item("d3", "draft", "where is the audit log?")
	report := filepath.Join(dir, "report.jsonl")
	out, stderr, code := runGTCWithStdin(t, e, input, "import", "-", "--batch-size", "1", "--json", "--report", report)
	require.Equal(t, 0, code, stderr)
	sum := importSummaryOf(t, out)
	assert.Equal(t, 6.0, sum["imported"])
	assert.Equal(t, 5.0, sum["duplicateWarnings"])

	data, err := os.ReadFile(report)
	require.NoError(t, err)
	dups := map[string][]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		var rec struct {
			ID                string `json:"id"`
			DuplicateWarnings []struct {
				DuplicateID string `json:"duplicateId"`
			} `json:"duplicateWarnings"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		for _, w := range rec.DuplicateWarnings {
			dups[rec.ID] = append(dups[rec.ID], w.DuplicateID)
		}
	}
	assert.Equal(t, map[string][]string{
		"d1": {"stored"},
		"d2": {"newer", "stored", "older"},
		"d3": {"audit"},
	}, dups)
}

func TestImportConvertsLegacyDocuments(t *testing.T) {
	dir := t.TempDir()
	e := env(dir)
	// A legacy single-turn v1 document.
	legacy := `{"id": "gt-17", "datasetName": "support", "bucket": "6f1c2d3e-0a1b-4c5d-8e9f-001122334455",
 "status": "approved", "docType": "ground-truth-item", "schemaVersion": "v1",
 "synthQuestion": "Which form renews a parking permit?",
 "editedQuestion": "Which form do I use to renew my parking permit?",
 "answer": "Use form P-12 from the permits page.",
 "refs": [{"url": "https://support.example.com/help/parking-permits", "title": "Parking permits", "bonus": false}],
 "tags": ["Source:SME", "question_length:short", "dataset:support", "long_doc", "topic:security"],
 "comment": null, "totalReferences": 1, "modelUsedForGeneration": "gpt-x",
 "updatedAt": "2025-05-01T10:00:00Z", "reviewedAt": "2025-05-01T10:00:00Z",
 "updatedBy": "alice@example.com", "_etag": "\"0a00\"", "_ts": 1746093600}`
	input := "[" + legacy + `, {"id": "v2-item", "datasetName": "support", "history": [{"role": "user", "msg": "q"}]}]`
	file := filepath.Join(dir, "legacy.json")
	require.NoError(t, os.WriteFile(file, []byte(input), 0o600))
	report := filepath.Join(dir, "report.jsonl")
	out, stderr, code := runGTC(t, e, "import", file, "--register-tags", "--json", "--report", report)
	require.Equal(t, 0, code, stderr)
	sum := importSummaryOf(t, out)
	assert.Equal(t, 2.0, sum["imported"])
	counts := sum["warningCounts"].(map[string]any)
	assert.Equal(t, 1.0, counts["LEGACY_TAG_CONVERTED"])
	assert.Equal(t, 1.0, counts["COMPUTED_TAGS_STRIPPED"])

	items := exportedItems(t, e)
	got := items["support/gt-17"]
	require.NotNil(t, got)
	assert.Equal(t, []any{"custom:long_doc", "source:sme", "topic:security"}, got["manualTags"])
	assert.Equal(t, []any{
		map[string]any{"role": "user", "msg": "Which form do I use to renew my parking permit?"},
		map[string]any{"role": "assistant", "msg": "Use form P-12 from the permits page."},
	}, got["history"])
	assert.Equal(t, "approved", got["status"])
	assert.Equal(t, "2025-05-01T10:00:00.000Z", got["updatedAt"])
	assert.Equal(t, map[string]any{"legacyV1": map[string]any{"synthQuestion": "Which form renews a parking permit?", "modelUsedForGeneration": "gpt-x"}}, got["metadata"])
	assert.Contains(t, items, "support/v2-item")

	data, err := os.ReadFile(report)
	require.NoError(t, err)
	var line map[string]any
	require.NoError(t, json.Unmarshal([]byte(strings.SplitN(string(data), "\n", 2)[0]), &line))
	assert.Equal(t, "gt-17", line["id"])
	assert.Equal(t, true, line["legacy"])
}

// TestImportLegacyCustomTags: the custom:<name> tags that the conversion of a legacy v1
// document makes from bare tag names are accepted without --register-tags and join the tag
// store, so the imported items export and import again; a custom: tag a user wrote is still
// an unknown tag.
func TestImportLegacyCustomTags(t *testing.T) {
	dir := t.TempDir()
	e := env(dir)
	legacy := func(id string, tags string) string {
		return `{"id": "` + id + `", "datasetName": "support", "synthQuestion": "How do I reset my password?",
 "answer": "Use the reset link.", "tags": ` + tags + `}`
	}
	input := "[" + legacy("gt-1", `["long_doc", "Needs  Review", "Source:SME"]`) + ", " +
		legacy("gt-2", `["long_doc", "custom:mine"]`) + ", " +
		`{"id": "v2", "datasetName": "support", "history": [{"role": "user", "msg": "q"}], "manualTags": ["custom:long_doc", "custom:handwritten"]}` + "]"
	file := filepath.Join(dir, "legacy.json")
	require.NoError(t, os.WriteFile(file, []byte(input), 0o600))
	out, stderr, code := runGTC(t, e, "import", file, "--json")
	require.Equal(t, 1, code, "two elements carry tags their authors wrote: %s", stderr)
	sum := importSummaryOf(t, out)
	assert.Equal(t, 1.0, sum["imported"])
	assert.Equal(t, 2.0, sum["failed"])
	assert.Equal(t, 3.0, sum["warningCounts"].(map[string]any)["LEGACY_TAG_CONVERTED"])
	var errs []string
	for _, e := range sum["errorSamples"].([]any) {
		m := e.(map[string]any)
		errs = append(errs, m["itemId"].(string)+" "+m["code"].(string)+" "+m["message"].(string))
	}
	assert.Equal(t, []string{
		"gt-2 INVALID_TAG Unknown tag 'custom:mine'.",
		"v2 INVALID_TAG Unknown tag 'custom:handwritten'.; Unknown tag 'custom:long_doc'.",
	}, errs, "a custom: tag written in an element is not one the conversion made, even when another element's conversion made it")

	items := exportedItems(t, e)
	require.Contains(t, items, "support/gt-1")
	assert.Equal(t, []any{"custom:long_doc", "custom:needs review", "source:sme"}, items["support/gt-1"]["manualTags"])

	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(dir, "gtc.db")})
	require.NoError(t, err)
	tags, err := st.TagStore().List(context.Background())
	require.NoError(t, err)
	require.NoError(t, st.Close())
	assert.Subset(t, tags, []string{"custom:long_doc", "custom:needs review"}, "the converted tags joined the tag store")
	assert.NotContains(t, tags, "custom:mine")
	assert.NotContains(t, tags, "custom:handwritten")

	// Round trip: the exported v2 record imports again (here under another id) without
	// --register-tags, and the elements that failed now import once their own tags are gone.
	rec := items["support/gt-1"]
	rec["id"] = "gt-1-copy"
	copyFile := filepath.Join(dir, "again.jsonl")
	recJSON, err := json.Marshal(rec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(copyFile, []byte(string(recJSON)+"\n"+strings.ReplaceAll(legacy("gt-2", `["long_doc"]`), "\n", "")+"\n"), 0o600))
	out, stderr, code = runGTC(t, e, "import", copyFile, "--json")
	require.Equal(t, 0, code, stderr)
	sum = importSummaryOf(t, out)
	assert.Equal(t, 2.0, sum["imported"], out)
	assert.Equal(t, []any{"custom:long_doc", "custom:needs review", "source:sme"}, exportedItems(t, e)["support/gt-1-copy"]["manualTags"])
}

// TestImportRefusesDotNames: a dataset name or id of "." or "..", or one with an invisible
// format character, fails its element alone, in a v2 element and in a legacy one.
func TestImportRefusesDotNames(t *testing.T) {
	dir := t.TempDir()
	e := env(dir)
	input := strings.Join([]string{
		`{"id": "a", "datasetName": "..", "history": [{"role": "user", "msg": "q"}]}`,
		`{"id": ".", "datasetName": "support", "history": [{"role": "user", "msg": "q"}]}`,
		`{"id": "b", "datasetName": "sup\u200bport", "history": [{"role": "user", "msg": "q"}]}`,
		`{"id": "c", "datasetName": ".", "synthQuestion": "q", "answer": "a"}`,
		`{"id": "ok", "datasetName": "...", "history": [{"role": "user", "msg": "q"}]}`,
	}, "\n")
	out, stderr, code := runGTCWithStdin(t, e, input, "import", "-", "--json")
	require.Equal(t, 1, code, stderr)
	sum := importSummaryOf(t, out)
	assert.Equal(t, 1.0, sum["imported"], "a name of three dots is an ordinary name")
	assert.Equal(t, 4.0, sum["failed"])
	var msgs []string
	for _, e := range sum["errorSamples"].([]any) {
		m := e.(map[string]any)
		msgs = append(msgs, m["code"].(string)+": "+m["message"].(string))
	}
	assert.Equal(t, []string{
		"VALIDATION_ERROR: Request validation failed: [0].datasetName: datasetName cannot be '.' or '..'",
		"VALIDATION_ERROR: Request validation failed: [1].id: id cannot be '.' or '..'",
		"VALIDATION_ERROR: Request validation failed: [2].datasetName: datasetName contains an invisible format character (U+200B), which is not allowed",
		"INVALID_DOCUMENT: datasetName cannot be '.' or '..'",
	}, msgs)
	assert.Equal(t, []string{".../ok"}, slices.Collect(maps.Keys(exportedItems(t, e))))
}

func TestImportUsageErrors(t *testing.T) {
	dir := t.TempDir()
	e := env(dir)
	good := filepath.Join(dir, "items.json")
	require.NoError(t, os.WriteFile(good, []byte(`[]`), 0o600))
	csv := filepath.Join(dir, "items.csv")
	require.NoError(t, os.WriteFile(csv, []byte("id,datasetName\r\n"), 0o600))
	pq := filepath.Join(dir, "items.parquet")
	require.NoError(t, os.WriteFile(pq, []byte("PAR1PAR1"), 0o600))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus", good}, "flag provided but not defined: -bogus"},
		{[]string{}, "give one or more FILEs"},
		{[]string{good, "--on-conflict", "overwrite"}, `--on-conflict "overwrite"`},
		{[]string{good, "--input-format", "csv"}, `--input-format "csv"`},
		{[]string{good, "--batch-size", "0"}, "--batch-size 0"},
		{[]string{good, "--progress", "fancy"}, `--progress "fancy"`},
		{[]string{filepath.Join(dir, "missing.json")}, "missing.json"},
		{[]string{csv}, "CSV is not accepted"},
		{[]string{pq}, "Parquet is not accepted"},
		{[]string{"-", "-"}, "- (stdin) can be given once"},
		{[]string{"--from-snapshot", "20990101T000000Z"}, "Snapshot not found"},
	} {
		out, stderr, code := runGTC(t, e, append([]string{"import"}, tc.args...)...)
		assert.Equal(t, 2, code, "%v: %s", tc.args, stderr)
		assert.Contains(t, stderr, tc.want, "%v", tc.args)
		assert.Empty(t, out, "%v: nothing was done", tc.args)
	}

	// A Parquet snapshot.
	out, stderr, code := runGTC(t, e, "export", "--artifact", "--format", "parquet")
	require.Equal(t, 0, code, stderr)
	var art map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &art))
	out, stderr, code = runGTC(t, e, "import", "--from-snapshot", art["snapshotId"].(string))
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "the snapshot is Parquet, which import does not accept")
	assert.Empty(t, out)
}
