// The fuzz builds (scripts/fuzz.sh, -tags fuzzing) leave these tests out: they run on the
// SQLite store (sqlite_test.go), which a fuzz build would instrument. The race-detector build
// leaves them out with the parquet formatter (parquet.go); scripts/test.sh runs them without it.

//go:build !fuzzing && !race

package export

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
)

// pqFile is what the independent reader (tools/test-servers/read-parquet.mjs, on hyparquet)
// prints for a Parquet file.
type pqFile struct {
	Schema []struct {
		Name, Type, LogicalType, Repetition string
		NumChildren                         int
	}
	KeyValueMetadata map[string]string
	RowGroups        []struct {
		NumRows int
		Codecs  []string
	}
	Rows []map[string]any // INT64 values as decimal strings
}

// readParquet reads a Parquet file with hyparquet, a reader that shares no code with the
// writer. GTC_TEST_PARQUET_READER names the reader script (scripts/test.sh sets it after
// installing tools/test-servers); without it the test is skipped.
func readParquet(t *testing.T, data []byte) pqFile {
	t.Helper()
	script := os.Getenv("GTC_TEST_PARQUET_READER")
	if script == "" {
		t.Skip("GTC_TEST_PARQUET_READER is not set: set it to tools/test-servers/read-parquet.mjs after " +
			"npm ci --prefix tools/test-servers (scripts/test.sh does both) to read the files back with hyparquet")
	}
	node, err := exec.LookPath("node")
	require.NoError(t, err, "GTC_TEST_PARQUET_READER is set but node is not on PATH")
	path := filepath.Join(t.TempDir(), "export.parquet")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	var stderr bytes.Buffer
	cmd := exec.Command(node, script, path)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "hyparquet could not read the file: %s", stderr.String())
	var f pqFile
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&f))
	return f
}

// jsonlRows writes recs with the jsonl formatter and decodes the lines again, numbers as
// json.Number: what a reader of the jsonl export sees.
func jsonlRows(t *testing.T, recs []Record) []map[string]any {
	t.Helper()
	data, err := FormatAll(JSONL{}, testHeader, recs)
	require.NoError(t, err)
	return decodeLines(t, data)
}

func decodeLines(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	var rows []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		rows = append(rows, decodeJSONText(t, sc.Text()).(map[string]any))
	}
	require.NoError(t, sc.Err())
	return rows
}

func decodeJSONText(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v), "%q", s)
	require.False(t, dec.More(), "one value: %q", s)
	return v
}

// assertSchema checks the file's schema: the columns in order, each with its kind's type,
// all nullable.
func assertSchema(t *testing.T, f pqFile, cols []Column) {
	t.Helper()
	require.NotEmpty(t, f.Schema)
	require.Equal(t, len(cols), f.Schema[0].NumChildren, "top-level columns")
	s := f.Schema[1:]
	for _, c := range cols {
		require.NotEmpty(t, s, "column %s is missing", c.Name)
		el := s[0]
		assert.Equal(t, c.Name, el.Name)
		assert.Equal(t, "OPTIONAL", el.Repetition, "%s is nullable", c.Name)
		switch c.Kind {
		case ColumnString, ColumnJSON:
			assert.Equal(t, []string{"BYTE_ARRAY", "STRING"}, []string{el.Type, el.LogicalType}, c.Name)
			s = s[1:]
		case ColumnInt:
			assert.Equal(t, []string{"INT64", "INTEGER"}, []string{el.Type, el.LogicalType}, c.Name)
			s = s[1:]
		case ColumnStringList:
			require.GreaterOrEqual(t, len(s), 3, c.Name)
			assert.Equal(t, "LIST", el.LogicalType, c.Name)
			assert.Equal(t, []string{"list", "REPEATED"}, []string{s[1].Name, s[1].Repetition}, c.Name)
			assert.Equal(t, []string{"element", "REQUIRED", "BYTE_ARRAY", "STRING"}, []string{s[2].Name, s[2].Repetition, s[2].Type, s[2].LogicalType}, c.Name)
			s = s[3:]
		}
	}
	assert.Empty(t, s, "no other columns")
}

// assertSameRows compares every value of every row of the Parquet file with the jsonl rows
// of the same records: strings and string lists equal, integers with the same digits, JSON
// columns equal once parsed, null exactly where the jsonl record has no value.
func assertSameRows(t *testing.T, want []map[string]any, got pqFile, cols []Column) {
	t.Helper()
	require.Len(t, got.Rows, len(want), "one row per record")
	names := map[string]bool{}
	for _, c := range cols {
		names[c.Name] = true
	}
	for i, w := range want {
		g := got.Rows[i]
		for k := range w {
			assert.True(t, names[k], "row %d: the record's key %s has no column", i, k)
		}
		for k := range g {
			assert.True(t, names[k], "row %d: column %s is not in the schema", i, k)
		}
		for _, c := range cols {
			wv, gv := w[c.Name], g[c.Name]
			if wv == nil {
				assert.Nil(t, gv, "row %d (%v): %s", i, w["id"], c.Name)
				continue
			}
			switch c.Kind {
			case ColumnString, ColumnStringList:
				assert.Equal(t, wv, gv, "row %d (%v): %s", i, w["id"], c.Name)
			case ColumnInt:
				assert.Equal(t, string(wv.(json.Number)), gv, "row %d (%v): %s", i, w["id"], c.Name)
			case ColumnJSON:
				s, ok := gv.(string)
				if assert.True(t, ok, "row %d (%v): %s is a JSON string, not %T", i, w["id"], c.Name, gv) {
					assert.Equal(t, wv, decodeJSONText(t, s), "row %d (%v): %s", i, w["id"], c.Name)
					// Compact text, as the jsonl record has it.
					text, err := AppendJSON(nil, wv)
					require.NoError(t, err)
					assert.Equal(t, string(text), s, "row %d (%v): %s", i, w["id"], c.Name)
				}
			}
		}
	}
}

// parquetShapes are records of every shape the columns must carry.
func parquetShapes(t *testing.T) []Record {
	var out []Record
	var scratch bytes.Buffer
	add := func(it *gtc.Item) {
		r, err := BuildRecord(it, &scratch)
		require.NoError(t, err)
		require.NoError(t, project(r))
		out = append(out, r)
	}
	add(fixtureItem("dataset_a", 1, gtc.StatusApproved))
	add(oddItem())
	add(gtc.NewItem("d", "new"))
	r := rand.New(rand.NewPCG(21, 22))
	for i := 0; i < 200; i++ {
		add(randomItem(r, i))
	}
	out = append(out,
		// Non-ASCII, controls and separators in scalars, tags and JSON.
		rec(`{"id":"ünï 漢字 🙂 \u202e rtl","datasetName":"ds é","comment":"a\u0000b\tc\n\u2028 \"q\" \\ ","manualTags":["é","🙂",""],"computedTags":[],"tags":["é"],"metadata":{"k é":"v 🙂","\u0000":"\u001f"}}`),
		// Empty lists and objects, explicit nulls in scalar, list and JSON columns.
		rec(`{"id":"empties","datasetName":"d","manualTags":[],"computedTags":[],"tags":[],"history":[],"contextEntries":[],"toolCalls":[],"feedback":[],"metadata":{},"plugins":{},"traceIds":{}}`),
		Record{"id": "nulls", "datasetName": "d", "comment": nil, "revision": nil, "tags": nil, "metadata": nil, "history": nil},
		// Numbers: beyond int64 and float64 in JSON columns, the int64 range in integer ones.
		rec(`{"id":"numbers","datasetName":"d","revision":9223372036854775807,"totalReferences":-9223372036854775808,"metadata":{"big":123456789012345678901234567890,"neg":-98765432109876543210,"exp":1.5e-300,"huge":1e400,"zero":-0.0,"f":0.1}}`),
		// Only an id.
		rec(`{"id":"bare"}`),
		// Invalid UTF-8 in a record built by hand: written as the JSON formats write it.
		Record{"id": "bad \xff utf8", "datasetName": "d", "manualTags": []any{"x\xc3"}},
	)
	return out
}

func TestParquetReadsBackAsJSONL(t *testing.T) {
	sets := map[string][]Record{"shapes": parquetShapes(t)}
	for name, recs := range goldenFixtures(t) {
		sets[name] = recs
	}
	for name, recs := range sets {
		t.Run(name, func(t *testing.T) {
			data, err := FormatAll(Parquet{}, testHeader, recs)
			require.NoError(t, err)
			assert.Equal(t, "PAR1", string(data[:4]))
			assert.Equal(t, "PAR1", string(data[len(data)-4:]))
			f := readParquet(t, data)
			assertSchema(t, f, ParquetColumns)
			assertSameRows(t, jsonlRows(t, recs), f, ParquetColumns)
			assert.Equal(t, map[string]string{"gtc.schemaVersion": "v2", "gtc.snapshotAt": "20260116T000000Z",
				"gtc.filters": `{"status":"approved"}`}, f.KeyValueMetadata)
			for _, rg := range f.RowGroups {
				assert.Equal(t, []string{"SNAPPY"}, rg.Codecs)
			}
		})
	}
}

// TestParquetExports runs whole exports in both formats and compares them: the default
// chain (records on the fast path), strip_internal with merge_tags, and split_turns (records
// as maps, with its extra columns).
func TestParquetExports(t *testing.T) {
	st := newSQLite(t)
	fill(t, st, []string{"a", "b"}, 40)
	it := oddItem()
	it.Metadata = json.RawMessage(`{"z":1,"a":{"y":null,"x":[3.25,-1e-7,123456789012345678901234567890]},"s":"<tag>&\u2028"}`)
	it.History = append(it.History, gtc.HistoryEntry{Role: "user", Msg: "unanswered"})
	_, err := st.Items().Create(context.Background(), it)
	require.NoError(t, err)
	pr, fr := Builtins(strings.Split(DefaultInternalFields, ","))
	x, err := New(Config{Items: st.Items(), Processors: pr, Formatters: fr, PageSize: 7, TempDir: t.TempDir(),
		Clock: gtc.NewFakeClock(fixtureNow)})
	require.NoError(t, err)
	export := func(format string, chain []string) []byte {
		st := ""
		plan, err := x.Resolve(&gtc.ExportRequest{Format: &format, Status: &st, Processors: &chain, Mode: gtc.DeliveryStream}, "tester")
		require.NoError(t, err)
		var out bytes.Buffer
		res, err := x.Stream(context.Background(), plan, &out, nil)
		require.NoError(t, err)
		assert.Equal(t, "ground-truth-items-20260116T093000Z."+fr.mustExt(format), res.FileName)
		return out.Bytes()
	}
	for _, chain := range [][]string{{}, {"strip_internal", "merge_tags"}, {"split_turns"}} {
		t.Run(strings.Join(append([]string{"chain"}, chain...), "_"), func(t *testing.T) {
			cols := ParquetColumns
			if len(chain) == 1 && chain[0] == "split_turns" {
				cols = append(append([]Column(nil), ParquetColumns...), splitTurnsTypedColumns...)
			}
			want := decodeLines(t, export("jsonl", chain))
			require.GreaterOrEqual(t, len(want), 41)
			f := readParquet(t, export("parquet", chain))
			assertSchema(t, f, cols)
			assertSameRows(t, want, f, cols)
		})
	}
}

func (r *FormatterRegistry) mustExt(name string) string {
	f, ok := r.Lookup(name)
	if !ok {
		panic(name)
	}
	return f.Extension()
}

// TestParquetFastPathMatchesRecordPath holds the file written from raw records (the
// default chain's path) to the one written from decoded records, byte for byte.
func TestParquetFastPathMatchesRecordPath(t *testing.T) {
	pr, _ := Builtins([]string{"_etag", "comment", "plugins"})
	items := variedItems(20, 500, rand.New(rand.NewPCG(31, 32)))
	for _, chain := range [][]Processor{nil, {mustLookup(pr, "strip_internal"), MergeTags{}}} {
		p := Parquet{MaxRowGroupRows: 100}
		var viaRecords, viaRaw bytes.Buffer
		encRec, err := p.NewEncoder(&viaRecords, testHeader)
		require.NoError(t, err)
		encRaw, err := p.NewEncoder(&viaRaw, testHeader)
		require.NoError(t, err)
		var c canon
		for _, it := range items {
			var scratch bytes.Buffer
			rec, err := BuildRecord(it, &scratch)
			require.NoError(t, err)
			out, err := ApplyAll(context.Background(), chain, []Record{rec})
			require.NoError(t, err)
			require.NoError(t, project(out[0]))
			require.NoError(t, encRec.Encode(out[0]))

			raw, err := buildDirect(it, &c)
			require.NoError(t, err)
			for _, p := range chain {
				require.NoError(t, p.(fieldProcessor).apply(raw, it.ID))
			}
			require.NoError(t, raw.projectRaw())
			require.NoError(t, encRaw.(rawEncoder).encodeRaw(raw))
		}
		require.NoError(t, encRec.Close())
		require.NoError(t, encRaw.Close())
		assert.Equal(t, len(items), encRaw.Count())
		require.True(t, bytes.Equal(viaRecords.Bytes(), viaRaw.Bytes()), "the two paths write different files")
	}
}

// rowGroupSizes lists the rows of each row group, as the file's footer records them.
func rowGroupSizes(t *testing.T, data []byte) []int {
	t.Helper()
	rd, err := file.NewParquetReader(bytes.NewReader(data))
	require.NoError(t, err)
	defer rd.Close()
	var out []int
	for i := 0; i < rd.NumRowGroups(); i++ {
		out = append(out, int(rd.RowGroup(i).NumRows()))
	}
	return out
}

func TestParquetRowGroupsAreBounded(t *testing.T) {
	recs := make([]Record, 25)
	for i := range recs {
		recs[i] = rec(`{"id":"r` + strings.Repeat("x", i) + `","datasetName":"d","comment":"` + strings.Repeat("c", 1000) + `"}`)
	}

	// By rows; each full row group reaches w before the next record is encoded.
	var out bytes.Buffer
	enc, err := Parquet{MaxRowGroupRows: 10}.NewEncoder(&out, testHeader)
	require.NoError(t, err)
	written := []int{out.Len()}
	for i, r := range recs {
		require.NoError(t, enc.Encode(r))
		if i%10 == 9 {
			written = append(written, out.Len())
		}
	}
	assert.Equal(t, 4, written[0], "only the magic bytes before the first row group")
	assert.Greater(t, written[1], written[0], "the first row group is written once full")
	assert.Greater(t, written[2], written[1], "the second row group is written once full")
	require.NoError(t, enc.Close())
	assert.Equal(t, []int{10, 10, 5}, rowGroupSizes(t, out.Bytes()))

	// By bytes: a row group ends with the row that reaches 3,000 bytes of values.
	data, err := FormatAll(Parquet{MaxRowGroupBytes: 3000}, testHeader, recs)
	require.NoError(t, err)
	sizes := rowGroupSizes(t, data)
	assert.Equal(t, []int{3, 3, 3, 3, 3, 3, 3, 3, 1}, sizes)

	// The defaults: 25,000 small records make three row groups.
	many := make([]Record, 25_000)
	for i := range many {
		many[i] = Record{"id": strings.Repeat("i", i%50), "datasetName": "d"}
	}
	data, err = FormatAll(Parquet{}, testHeader, many)
	require.NoError(t, err)
	assert.Equal(t, []int{DefaultRowGroupRows, DefaultRowGroupRows, 5000}, rowGroupSizes(t, data))

	t.Run("read back", func(t *testing.T) {
		// hyparquet reads every row of a multi-group file, in order.
		data, err := FormatAll(Parquet{MaxRowGroupRows: 4}, testHeader, recs)
		require.NoError(t, err)
		f := readParquet(t, data)
		require.Len(t, f.RowGroups, 7)
		assertSameRows(t, jsonlRows(t, recs), f, ParquetColumns)
	})
}

func TestParquetRejectsValuesThatDoNotFitTheirColumn(t *testing.T) {
	for _, tc := range []struct {
		rec  Record
		want string
	}{
		{rec(`{"id":"a","revision":"seven"}`), "record 'a': revision must be an integer"},
		{rec(`{"id":"b","totalReferences":1.5}`), "record 'b': totalReferences must be an integer"},
		{rec(`{"id":"c","revision":12345678901234567890}`), "record 'c': revision must be an integer"},
		{rec(`{"id":"d","status":3}`), "record 'd': status must be a string"},
		{rec(`{"id":"e","tags":["x",1]}`), "record 'e': tags must be a list of strings"},
		{rec(`{"id":"f","manualTags":"x"}`), "record 'f': manualTags must be a list of strings"},
	} {
		enc, err := Parquet{}.NewEncoder(&bytes.Buffer{}, testHeader)
		require.NoError(t, err)
		err = enc.Encode(tc.rec)
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
		assert.Equal(t, 0, enc.Count())
		assert.Error(t, enc.Close(), "a failed encoder writes no footer")
	}
}

// A release in jsonl and Parquet: every split's Parquet file holds, value for value, the
// records of its jsonl file (read back by an independent reader), and the dataset card lists
// the Parquet columns as its features and points each split at its Parquet file.
func TestReleaseParquetMatchesJSONL(t *testing.T) {
	h := newReleaseHarness(t, 30)
	_, err := h.release(t, gtc.ReleaseRequest{Name: "pq", Formats: []string{"jsonl", "parquet"},
		Splits: []gtc.Split{{Name: "train", Ratio: 0.7}, {Name: "test", Ratio: 0.3}}})
	require.NoError(t, err)
	card := string(h.releaseFile(t, "pq", "README.md"))
	assert.Contains(t, card, "  - split: train\n    path: \"train.parquet\"\n")
	assert.Contains(t, card, "  - name: \"tags\"\n    sequence: string\n")
	assert.Contains(t, card, "  - name: \"revision\"\n    dtype: int64\n")
	assert.Contains(t, card, `load_dataset("parquet", data_files={"test": "test.parquet", "train": "train.parquet"})`)
	for _, split := range []string{"train", "test"} {
		want := decodeLines(t, h.releaseFile(t, "pq", split+".jsonl"))
		require.NotEmpty(t, want, split)
		got := readParquet(t, h.releaseFile(t, "pq", split+".parquet"))
		assertSameRows(t, want, got, ParquetColumns)
	}
}

// The parquet format is built in, and an export artifact in it holds what the formatter streams.
func TestParquetIsBuiltin(t *testing.T) {
	_, fr := Builtins(nil)
	assert.Equal(t, builtinFormats(), fr.Names())
	assert.Contains(t, fr.Names(), "parquet")
	assertSingleFileEqualsStream(t, newHarness(t, 25), "parquet")
}
