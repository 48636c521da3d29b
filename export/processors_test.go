// The fuzz builds (scripts/fuzz.sh, -tags fuzzing) leave these tests out: they run on the
// SQLite store (sqlite_test.go), which a fuzz build would instrument.

//go:build !fuzzing

package export

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
)

type namedProcessor string

func (n namedProcessor) Name() string { return string(n) }
func (namedProcessor) Process(_ context.Context, r Record, emit func(Record) error) error {
	return emit(r)
}

func TestProcessorRegistry(t *testing.T) {
	r := NewProcessorRegistry()
	require.NoError(t, r.Register(namedProcessor("zeta")))
	require.NoError(t, r.Register(namedProcessor("alpha_2")))
	assert.EqualError(t, r.Register(namedProcessor("zeta")), `duplicate export processor "zeta"`)
	for _, bad := range []string{"", "Upper", "1abc", "has-dash", "sp ace", "a" + strings.Repeat("b", 64)} {
		assert.EqualError(t, r.Register(namedProcessor(bad)), fmt.Sprintf("invalid export processor name %q", bad))
	}
	assert.Equal(t, []string{"alpha_2", "zeta"}, r.Names())

	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 100 {
				_, ok := r.Lookup("zeta")
				assert.True(t, ok)
			}
		})
	}
	wg.Wait()

	_, err := r.Resolve([]string{"zeta", "nope", "zeta", "alpha_2", "other"})
	var errs NameErrors
	require.ErrorAs(t, err, &errs)
	require.Len(t, errs, 3)
	assert.Equal(t, 1, errs[0].Index)
	assert.Equal(t, "Unknown export processor 'nope' (known: alpha_2, zeta)", errs[0].Error())
	assert.Equal(t, "Export processor 'zeta' is listed more than once", errs[1].Error())
	assert.Equal(t, 4, errs[2].Index)
}

func TestFormatterRegistry(t *testing.T) {
	r := NewFormatterRegistry()
	require.NoError(t, r.Register(JSONL{}))
	assert.EqualError(t, r.Register(JSONL{}), `duplicate export formatter "jsonl"`)
	_, fr := Builtins(nil)
	assert.Equal(t, builtinFormats(), fr.Names())
}

// builtinFormats are the names of the built-in formatters, in order. The race-detector build
// of the tests has no parquet formatter (parquet.go).
func builtinFormats() []string {
	names := []string{"csv", "json_items", "json_snapshot_payload", "jsonl"}
	if !raceEnabled {
		names = append(names, "parquet")
	}
	return names
}

func TestParseProcessorOrder(t *testing.T) {
	pr, _ := Builtins(nil)
	for in, want := range map[string][]string{
		"":                               nil,
		" ":                              nil,
		",,,":                            nil,
		"merge_tags":                     {"merge_tags"},
		" merge_tags , strip_internal ,": {"merge_tags", "strip_internal"},
		"merge_tags,\tsplit_turns\n":     {"merge_tags", "split_turns"},
	} {
		got, err := ParseProcessorOrder(in)
		require.NoError(t, err)
		assert.Equal(t, want, got, "%q", in)
		assert.NoError(t, CheckProcessorOrder(pr, got))
	}
	names, _ := ParseProcessorOrder("merge_tags,merge_tags")
	assert.EqualError(t, CheckProcessorOrder(pr, names), `GTC_EXPORT_PROCESSOR_ORDER: export processor "merge_tags" is listed more than once`)
	names, _ = ParseProcessorOrder("Merge_Tags")
	assert.EqualError(t, CheckProcessorOrder(pr, names), `GTC_EXPORT_PROCESSOR_ORDER: unknown export processor "Merge_Tags" (registered: merge_tags, split_turns, strip_internal)`)

	_, err := New(Config{Items: newSQLite(t).Items(), Processors: pr, Formatters: NewFormatterRegistry(), DefaultChain: []string{"anonymize"}})
	assert.ErrorContains(t, err, `unknown export processor "anonymize"`)
}

func TestParseInternalFields(t *testing.T) {
	got, err := ParseInternalFields(DefaultInternalFields)
	require.NoError(t, err)
	assert.Equal(t, []string{"_etag", "docType", "assignedTo", "assignedAt", "updatedBy", "createdBy", "comment", "tracePayload"}, got)
	got, err = ParseInternalFields(" a ,, b ")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, got)
	for _, bad := range []string{"id", "x,datasetName"} {
		_, err = ParseInternalFields(bad)
		assert.EqualError(t, err, "GTC_EXPORT_INTERNAL_FIELDS cannot remove id or datasetName")
	}
}

func run1(t *testing.T, p Processor, in ...Record) []Record {
	t.Helper()
	out, err := ApplyAll(context.Background(), []Processor{p}, in)
	require.NoError(t, err)
	return out
}

func TestMergeTags(t *testing.T) {
	out := run1(t, MergeTags{}, rec(`{"id":"a","manualTags":["t:b","t:a","t:b"],"computedTags":["t:c","t:a"],"tags":["stale"]}`))
	require.Len(t, out, 1)
	assert.Equal(t, []any{"t:a", "t:b", "t:c"}, out[0]["tags"])
	assert.Equal(t, []any{"t:b", "t:a", "t:b"}, out[0]["manualTags"], "the source lists stay as they are")

	out = run1(t, MergeTags{}, rec(`{"id":"a","computedTags":["x:y"]}`))
	assert.Equal(t, []any{"x:y"}, out[0]["tags"], "a missing list counts as empty")

	_, err := ApplyAll(context.Background(), []Processor{MergeTags{}}, []Record{rec(`{"id":"bad","manualTags":[1]}`)})
	var re *RecordError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "merge_tags: record 'bad': manualTags must be a list of strings", err.Error())
}

func TestStripInternal(t *testing.T) {
	fields, err := ParseInternalFields(DefaultInternalFields)
	require.NoError(t, err)
	out := run1(t, NewStripInternal(fields), rec(`{"id":"a","datasetName":"d","_etag":"e","docType":"ground-truth-item","assignedTo":"x@y","assignedAt":"t","updatedBy":"u@y","createdBy":"c@y","comment":"note","tracePayload":{},"history":[],"metadata":{"comment":"kept"}}`))
	assert.Equal(t, rec(`{"id":"a","datasetName":"d","history":[],"metadata":{"comment":"kept"}}`), out[0])
}

func turns(roles ...string) string {
	var hs []map[string]any
	for i, r := range roles {
		hs = append(hs, map[string]any{"role": r, "msg": r + "-" + string(rune('0'+i)), "turnId": "t" + string(rune('0'+i))})
	}
	b, _ := json.Marshal(hs)
	return string(b)
}

func TestSplitTurns(t *testing.T) {
	base := func(history string) Record {
		return rec(`{"id":"gt-1","datasetName":"d","history":` + history + `,"toolCalls":[{"id":"c1"}],"metadata":{"k":1}}`)
	}
	num := func(n string) json.Number { return json.Number(n) }

	t.Run("no answered exchange passes the record on", func(t *testing.T) {
		out := run1(t, SplitTurns{}, base(turns("user")))
		require.Len(t, out, 1)
		assert.Equal(t, "gt-1", out[0]["id"])
		assert.Equal(t, "gt-1", out[0]["sourceItemId"])
		assert.Equal(t, num("0"), out[0]["turnIndex"])
		assert.Equal(t, num("0"), out[0]["turnCount"])
		assert.Equal(t, []any{}, out[0]["precedingHistory"])
		assert.Len(t, out[0]["history"], 1)
	})
	t.Run("one answered exchange keeps the id", func(t *testing.T) {
		out := run1(t, SplitTurns{}, base(turns("system", "user", "assistant", "tool")))
		require.Len(t, out, 1)
		assert.Equal(t, "gt-1", out[0]["id"])
		assert.Equal(t, num("1"), out[0]["turnIndex"])
		assert.Equal(t, num("1"), out[0]["turnCount"])
		assert.Len(t, out[0]["history"], 3, "the user turn and every agent turn after it")
		assert.Equal(t, []any{map[string]any{"role": "system", "msg": "system-0", "turnId": "t0"}}, out[0]["precedingHistory"], "the preamble precedes")
	})
	t.Run("two answered exchanges", func(t *testing.T) {
		out := run1(t, SplitTurns{}, base(turns("user", "assistant", "user", "assistant")))
		require.Len(t, out, 2)
		assert.Equal(t, "gt-1__t1", out[0]["id"])
		assert.Equal(t, "gt-1__t2", out[1]["id"])
		assert.Equal(t, num("2"), out[1]["turnIndex"])
		assert.Equal(t, num("2"), out[1]["turnCount"])
		assert.Len(t, out[1]["precedingHistory"], 2)
		assert.Equal(t, "user-2", out[1]["history"].([]any)[0].(map[string]any)["msg"])
		// Whole-conversation keys are copied, not shared.
		out[0]["metadata"].(map[string]any)["k"] = "changed"
		assert.Equal(t, num("1"), out[1]["metadata"].(map[string]any)["k"])
	})
	t.Run("three answered, an unanswered one in between and an unanswered final question", func(t *testing.T) {
		out := run1(t, SplitTurns{}, base(turns("user", "assistant", "user", "User", "assistant", "user", "assistant", "user")))
		require.Len(t, out, 3)
		for k, r := range out {
			assert.Equal(t, num(string(rune('1'+k))), r["turnIndex"])
			assert.Equal(t, num("3"), r["turnCount"])
			assert.Equal(t, "gt-1", r["sourceItemId"])
		}
		assert.Len(t, out[1]["precedingHistory"], 3, "the unanswered exchange is part of what precedes")
		assert.Equal(t, "User-3", out[1]["history"].([]any)[0].(map[string]any)["msg"])
		assert.Len(t, out[2]["history"], 2)
	})
	t.Run("history must be a list", func(t *testing.T) {
		_, err := ApplyAll(context.Background(), []Processor{SplitTurns{}}, []Record{rec(`{"id":"x","history":{"role":"user"}}`)})
		assert.EqualError(t, err, "split_turns: record 'x': history must be a list of turns")
		_, err = ApplyAll(context.Background(), []Processor{SplitTurns{}}, []Record{rec(`{"id":"x","history":["user"]}`)})
		assert.EqualError(t, err, "split_turns: record 'x': history[0] must be an object")
	})
	t.Run("verbatim turns", func(t *testing.T) {
		out := run1(t, SplitTurns{}, rec(`{"id":"v","history":[{"role":"user","msg":"q","turnId":"1","stepId":"s","expectedBehavior":["a"]},{"role":"assistant","msg":"a"}]}`))
		assert.Equal(t, map[string]any{"role": "user", "msg": "q", "turnId": "1", "stepId": "s", "expectedBehavior": []any{"a"}}, out[0]["history"].([]any)[0])
	})
}

func TestResolve(t *testing.T) {
	pr, fr := Builtins(nil)
	x, err := New(Config{Items: newSQLite(t).Items(), Processors: pr, Formatters: fr, DefaultChain: []string{"merge_tags"}})
	require.NoError(t, err)
	s := func(v string) *string { return &v }
	list := func(v ...string) *[]string { return &v }

	p, err := x.Resolve(&gtc.ExportRequest{}, "alice")
	require.NoError(t, err)
	assert.Equal(t, "json_snapshot_payload", p.Formatter.Name())
	assert.Equal(t, []string{"merge_tags"}, p.ProcessorNames(), "absent processors take the configured default")
	assert.Equal(t, []gtc.Status{gtc.StatusApproved}, p.Statuses)
	assert.Equal(t, map[string]any{"status": "approved"}, p.FiltersEcho)
	assert.Equal(t, gtc.DeliveryAttachment, p.Mode)

	p, err = x.Resolve(&gtc.ExportRequest{Processors: list(), Status: s(""), DatasetNames: list("b", "a", "b")}, "alice")
	require.NoError(t, err)
	assert.Empty(t, p.Processors, "[] runs no processor")
	assert.Empty(t, p.Statuses, `"" is every status`)
	assert.Equal(t, []string{"a", "b"}, p.DatasetNames)
	assert.Equal(t, map[string]any{"status": "", "datasetNames": []any{"b", "a", "b"}}, p.FiltersEcho)

	_, err = x.Resolve(&gtc.ExportRequest{Format: s("xml"), Processors: list("merge_tags", "anonymize", "merge_tags"), Status: s("done"), DatasetNames: list("ok", " ")}, "alice")
	ge, ok := gtc.AsError(err)
	require.True(t, ok)
	assert.Equal(t, gtc.CodeUnknownFormat, ge.Code)
	assert.Equal(t, "Unknown export format 'xml'", ge.Message)
	assert.Equal(t, []gtc.FieldError{
		{Field: "format", Message: "Unknown export format 'xml' (known: " + strings.Join(builtinFormats(), ", ") + ")"},
		{Field: "processors[1]", Message: "Unknown export processor 'anonymize' (known: merge_tags, split_turns, strip_internal)"},
		{Field: "processors[2]", Message: "Export processor 'merge_tags' is listed more than once"},
		{Field: "filters.status", Message: "Invalid status value 'done'"},
		{Field: "filters.datasetNames[1]", Message: "datasetNames entries must not be blank"},
	}, ge.Fields)

	_, err = x.Resolve(&gtc.ExportRequest{Processors: list("strip_internal", "strip_internal")}, "alice")
	ge, _ = gtc.AsError(err)
	assert.Equal(t, gtc.CodeDuplicateProcessor, ge.Code)
	_, err = x.Resolve(&gtc.ExportRequest{Status: s("Approved")}, "alice")
	ge, _ = gtc.AsError(err)
	assert.Equal(t, gtc.CodeInvalidStatus, ge.Code)
}

func TestProjection(t *testing.T) {
	r := rec(`{"id":"p","plugins":{"rag-compat":{"kind":"rag-compat","data":{"references":[1,{"url":" https://a.example/x "},{"url":""},{"url":3},{"title":"t"},{"url":"https://b.example","title":"B"}]}},"other":{"data":{"references":[{"url":"https://ignored"}]}}}}`)
	require.NoError(t, project(r))
	assert.Equal(t, json.Number("2"), r["totalReferences"])
	assert.Equal(t, []any{map[string]any{"url": "https://a.example/x"}, map[string]any{"url": "https://b.example", "title": "B"}}, r["references"])
	assert.Contains(t, r["plugins"].(map[string]any), "rag-compat", "plugins stays")

	none := rec(`{"id":"q","plugins":{}}`)
	require.NoError(t, project(none))
	assert.Equal(t, json.Number("0"), none["totalReferences"])
	assert.NotContains(t, none, "references", "only when there is at least one")
}
