package export

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
)

var update = flag.Bool("update", false, "rewrite the golden files of the formatters")

var testHeader = Header{SchemaVersion: "v2", SnapshotAt: "20260116T000000Z", Filters: map[string]any{"status": "approved"}}

// goldenFixtures are the record sets the golden files pin: empty, one item, and a mixed set
// with non-ASCII text, large integers, nested nulls and a record without history.
func goldenFixtures(t *testing.T) map[string][]Record {
	build := func(items ...*gtc.Item) []Record {
		var out []Record
		var scratch bytes.Buffer
		for _, it := range items {
			it.ETag = "etag-" + it.ID
			r, err := BuildRecord(it, &scratch)
			require.NoError(t, err)
			require.NoError(t, project(r))
			out = append(out, r)
		}
		return out
	}
	one := fixtureItem("dataset_a", 1, gtc.StatusApproved)
	mixed := build(fixtureItem("dataset_a", 2, gtc.StatusApproved), oddItem(), fixtureItem("datasét_b", 3, gtc.StatusDraft))
	noHistory := rec(`{"id":"custom-1","datasetName":"dataset_a","manualTags":["a:b"],"metadata":{"n":null,"big":98765432109876543210},"totalReferences":0}`)
	mixed = append(mixed, noHistory)
	return map[string][]Record{"empty": nil, "one": build(one), "mixed": mixed}
}

func TestFormattersGolden(t *testing.T) {
	_, fr := Builtins(nil)
	for name, recs := range goldenFixtures(t) {
		for _, fname := range fr.Names() {
			f, _ := fr.Lookup(fname)
			got, err := FormatAll(f, testHeader, recs)
			require.NoError(t, err)
			// parquet is binary: TestParquetReadsBackAsJSONL reads back what it holds.
			if fname != "parquet" {
				path := filepath.Join("testdata", "golden", name+"."+fname+"."+f.Extension())
				if *update {
					require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
					require.NoError(t, os.WriteFile(path, got, 0o644))
				}
				want, err := os.ReadFile(path)
				require.NoError(t, err, "run go test ./export -run Golden -update to create the golden files")
				assert.Equal(t, string(want), string(got), "%s in %s", name, fname)
			}

			// Streaming through small writes gives the same bytes.
			var streamed bytes.Buffer
			enc, err := f.NewEncoder(&chunkWriter{w: &streamed}, testHeader)
			require.NoError(t, err)
			for _, r := range recs {
				require.NoError(t, enc.Encode(r))
			}
			require.NoError(t, enc.Close())
			assert.Equal(t, string(got), streamed.String())
			assert.Equal(t, len(recs), enc.Count())
		}
	}
}

type chunkWriter struct{ w *bytes.Buffer }

func (c *chunkWriter) Write(p []byte) (int, error) {
	n0 := len(p)
	for len(p) > 0 {
		n := min(len(p), 7)
		c.w.Write(p[:n])
		p = p[n:]
	}
	return n0, nil
}

func TestSnapshotPayloadShape(t *testing.T) {
	recs := goldenFixtures(t)["mixed"]
	h := testHeader
	h.Filters = map[string]any{"status": "approved", "datasetNames": []any{"dataset_a"}}
	out, err := FormatAll(SnapshotPayload{}, h, recs)
	require.NoError(t, err)

	dec := json.NewDecoder(bytes.NewReader(out))
	_, err = dec.Token()
	require.NoError(t, err)
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		require.NoError(t, err)
		keys = append(keys, k.(string))
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip))
	}
	assert.Equal(t, []string{"schemaVersion", "snapshotAt", "filters", "items", "count", "datasetNames"}, keys, "written in one pass, in this order")

	var doc struct {
		SchemaVersion string
		SnapshotAt    string
		Filters       map[string]any
		Items         []map[string]any
		Count         int
		DatasetNames  []string
	}
	require.NoError(t, json.Unmarshal(out, &doc))
	assert.Equal(t, "v2", doc.SchemaVersion)
	assert.Equal(t, "20260116T000000Z", doc.SnapshotAt)
	assert.Equal(t, map[string]any{"status": "approved", "datasetNames": []any{"dataset_a"}}, doc.Filters)
	assert.Equal(t, 4, doc.Count)
	assert.Len(t, doc.Items, 4)
	assert.Equal(t, []string{"dataset_a", "datasét_b", "ds<&>"}, doc.DatasetNames, "the datasets of what was written, sorted")
	assert.Contains(t, string(out), `"datasetName":"ds<&>"`, "no HTML escaping")

	empty, err := FormatAll(SnapshotPayload{}, testHeader, nil)
	require.NoError(t, err)
	assert.JSONEq(t, `{"schemaVersion":"v2","snapshotAt":"20260116T000000Z","filters":{"status":"approved"},"items":[],"count":0,"datasetNames":[]}`, string(empty))
}

func TestLineFormats(t *testing.T) {
	recs := goldenFixtures(t)["mixed"]
	out, err := FormatAll(JSONL{}, testHeader, recs)
	require.NoError(t, err)
	lines := strings.Split(string(out), "\n")
	require.Len(t, lines, 5, "every line ends in a newline, the last included")
	assert.Equal(t, "", lines[4])
	for i, l := range lines[:4] {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), "line %d", i)
		assert.Equal(t, recs[i].ID(), m["id"])
	}
	empty, err := FormatAll(JSONL{}, testHeader, nil)
	require.NoError(t, err)
	assert.Empty(t, empty)

	arr, err := FormatAll(JSONItems{}, testHeader, recs)
	require.NoError(t, err)
	var items []map[string]any
	require.NoError(t, json.Unmarshal(arr, &items))
	assert.Len(t, items, 4)
	empty, err = FormatAll(JSONItems{}, testHeader, nil)
	require.NoError(t, err)
	assert.Equal(t, "[]", string(empty))
}

func TestCSVFormat(t *testing.T) {
	recs := goldenFixtures(t)["mixed"]
	out, err := FormatAll(CSV{}, testHeader, recs)
	require.NoError(t, err)
	assert.False(t, bytes.HasPrefix(out, []byte("\xef\xbb\xbf")), "no BOM")
	assert.Contains(t, string(out), "\r\n")
	rows, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 5)
	assert.Equal(t, CSVColumns, rows[0])
	col := func(row []string, name string) string {
		for i, c := range rows[0] {
			if c == name {
				return row[i]
			}
		}
		t.Fatalf("no column %s", name)
		return ""
	}
	odd := rows[2]
	assert.Equal(t, "gt/é 42", col(odd, "id"))
	assert.Equal(t, strings.TrimSpace(oddItem().History[len(oddItem().History)-2].Msg), col(odd, "question"))
	assert.Equal(t, strings.TrimSpace(oddItem().History[len(oddItem().History)-1].Msg), col(odd, "answer"))
	assert.Equal(t, "", col(odd, "assignedTo"), "a missing key is an empty cell")
	assert.JSONEq(t, `{"a":{"x":[3.25,-1e-7,123456789012345678901234567890],"y":null},"bad":"\ufffd","s":"<tag>&\u2028","z":1}`, col(odd, "metadata"))
	assert.Contains(t, col(odd, "metadata"), "123456789012345678901234567890", "numbers keep their text")
	var urls []string
	require.NoError(t, json.Unmarshal([]byte(col(rows[1], "referenceUrls")), &urls))
	for _, u := range urls {
		assert.Equal(t, strings.TrimSpace(u), u, "urls are trimmed")
	}
	assert.Equal(t, "", col(rows[4], "question"), "no history, no question")
	assert.Equal(t, "0", col(rows[4], "totalReferences"))

	empty, err := FormatAll(CSV{}, testHeader, nil)
	require.NoError(t, err)
	assert.Equal(t, strings.Join(CSVColumns, ",")+"\r\n", string(empty), "an empty export is the header row")

	h := testHeader
	h.ExtraColumns = splitTurnsColumns
	split, err := FormatAll(CSV{}, h, []Record{rec(`{"id":"a__t2","sourceItemId":"a","turnIndex":2,"turnCount":3}`)})
	require.NoError(t, err)
	rows, err = csv.NewReader(bytes.NewReader(split)).ReadAll()
	require.NoError(t, err)
	assert.Equal(t, []string{"sourceItemId", "turnIndex", "turnCount"}, rows[0][len(CSVColumns):])
	assert.Equal(t, []string{"a", "2", "3"}, rows[1][len(CSVColumns):])
}

func TestRawEncodersMatch(t *testing.T) {
	_, fr := Builtins(nil)
	items := []*gtc.Item{oddItem(), fixtureItem("a", 1, gtc.StatusApproved)}
	for _, fname := range []string{"json_snapshot_payload", "json_items", "jsonl"} {
		f, _ := fr.Lookup(fname)
		var viaRecord, viaRaw bytes.Buffer
		e1, err := f.NewEncoder(&viaRecord, testHeader)
		require.NoError(t, err)
		e2, err := f.NewEncoder(&viaRaw, testHeader)
		require.NoError(t, err)
		for _, it := range items {
			var scratch bytes.Buffer
			r, err := BuildRecord(it, &scratch)
			require.NoError(t, err)
			require.NoError(t, project(r))
			require.NoError(t, e1.Encode(r))
			var c canon
			raw, err := buildDirect(it, &c)
			require.NoError(t, err)
			require.NoError(t, raw.projectRaw())
			require.NoError(t, e2.(rawEncoder).encodeRaw(raw))
		}
		require.NoError(t, e1.Close())
		require.NoError(t, e2.Close())
		assert.Equal(t, viaRecord.String(), viaRaw.String(), fname)
	}
}
