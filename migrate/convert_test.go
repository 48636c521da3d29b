package migrate_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
	"github.com/gtc-dev/gtc/migrate"
	"github.com/gtc-dev/gtc/tagging"
)

// runStart is Env.Now of every test: the value "now" takes in the mapping.
var runStart = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func strp(s string) *string { return &s }

// testEnv builds the Env the job builds: the default registry, the default groups with the
// default validators (exclusive_group, dependency), and the tag map the tag-map fixture uses.
func testEnv(t testing.TB) migrate.Env {
	t.Helper()
	reg, err := tagging.NewDefaultRegistry()
	require.NoError(t, err)
	groups, err := tagging.LoadGroups("")
	require.NoError(t, err)
	validators, err := tagging.NewValidators(nil, groups.Schema())
	require.NoError(t, err)
	return migrate.Env{
		Tagger:     tagging.NewPipeline(reg, validators, nil),
		IsComputed: reg.IsComputed,
		TagMap: map[string]*string{
			"LegacySME":  strp("Source:SME"),
			"drop-me":    nil,
			"rewrite:me": strp("topic:install"),
			"old topic":  strp("bare thing"),
		},
		Now: runStart,
	}
}

// decode reads JSON the way the job reads stored documents: numbers as json.Number.
func decode(t testing.TB, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	require.NoError(t, dec.Decode(v))
}

// pretty renders a value as indented JSON with sorted keys, for readable diffs.
func pretty(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}

// want is a fixture's expected result, written by hand.
type want struct {
	Kind         migrate.Kind      `json:"kind"`
	Legacy       bool              `json:"legacy"`
	NewKey       *gtc.Key          `json:"newKey"`
	Summary      string            `json:"summary"`
	Warnings     []migrate.Warning `json:"warnings"`
	ChangedPaths []string          `json:"changedPaths"`
	Body         map[string]any    `json:"body"`
	Error        *migrate.DocError `json:"error"`
}

type fixture struct {
	name string
	in   []byte
	want want
}

func loadFixtures(t testing.TB) []fixture {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "legacy", "*.in.json"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	var out []fixture
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".in.json")
		in, err := os.ReadFile(p)
		require.NoError(t, err)
		wb, err := os.ReadFile(filepath.Join("testdata", "legacy", name+".want.json"))
		require.NoError(t, err, "every fixture has its expected output")
		f := fixture{name: name, in: in}
		decode(t, wb, &f.want)
		out = append(out, f)
	}
	return out
}

func (f fixture) raw(t testing.TB) map[string]any {
	var m map[string]any
	decode(t, f.in, &m)
	return m
}

func changedPaths(cs []migrate.Change) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.Path)
	}
	return out
}

// TestConvertFixtures checks every fixture's exact result: the stored document, the kind of
// write, the new key, the warnings, the changed keys and the dry-run description.
func TestConvertFixtures(t *testing.T) {
	env := testEnv(t)
	for _, f := range loadFixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			res, err := migrate.Convert(f.raw(t), env)
			if f.want.Error != nil {
				var de *migrate.DocError
				require.ErrorAs(t, err, &de)
				assert.Equal(t, *f.want.Error, *de)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, f.want.Kind, res.Kind, "kind")
			assert.Equal(t, f.want.Legacy, res.Legacy, "legacy")
			assert.Equal(t, f.want.NewKey, res.NewKey, "new key")
			assert.Equal(t, f.want.Summary, res.Summary, "summary")
			wantWarnings := f.want.Warnings
			if wantWarnings == nil {
				wantWarnings = []migrate.Warning{}
			}
			gotWarnings := res.Warnings
			if gotWarnings == nil {
				gotWarnings = []migrate.Warning{}
			}
			assert.Equal(t, wantWarnings, gotWarnings, "warnings")
			assert.Equal(t, f.want.ChangedPaths, changedPaths(res.Changes), "changed paths")
			assert.Equal(t, pretty(f.want.Body), pretty(res.Body), "stored document")
			require.NotNil(t, res.Item)
			var fromItem map[string]any
			decode(t, codec.ItemStoredJSON(res.Item), &fromItem)
			assert.Equal(t, pretty(res.Body), pretty(fromItem), "Item and Body agree")
		})
	}
}

// TestConvertIsIdempotent: converting a converted document changes nothing and finds nothing
// to warn about; the converted document is never legacy (Convert(Convert(x)) == Convert(x)).
func TestConvertIsIdempotent(t *testing.T) {
	env := testEnv(t)
	for _, f := range loadFixtures(t) {
		if f.want.Error != nil {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			first, err := migrate.Convert(f.raw(t), env)
			require.NoError(t, err)
			assertSecondPassIsNoOp(t, env, first)
		})
	}
}

func assertSecondPassIsNoOp(t *testing.T, env migrate.Env, first migrate.Result) {
	t.Helper()
	assert.False(t, migrate.IsLegacy(first.Body), "a converted document is not legacy")
	second, err := migrate.Convert(first.Body, env)
	require.NoError(t, err, "the converted document converts again")
	assert.Equal(t, migrate.KindNone, second.Kind, "second pass: %s", second.Summary)
	assert.False(t, second.Legacy)
	assert.Nil(t, second.NewKey)
	assert.Empty(t, second.Warnings)
	assert.Empty(t, second.Changes)
	assert.Equal(t, pretty(first.Body), pretty(second.Body))
}

// TestConvertLeavesTheInputAlone: the job keeps the document it read (for the conditional
// write and the report), so Convert must not edit it.
func TestConvertLeavesTheInputAlone(t *testing.T) {
	env := testEnv(t)
	for _, f := range loadFixtures(t) {
		raw := f.raw(t)
		before := pretty(raw)
		_, _ = migrate.Convert(raw, env)
		assert.Equal(t, before, pretty(raw), f.name)
	}
}

// specExampleOutput is the single-turn worked example's stored form, written by hand. It shows
// null keys and second-precision times; the stored form omits null top-level keys and writes
// microseconds, which the test accounts for.
const specExampleOutput = `{"id": "gt-17", "datasetName": "support", "bucket": "6f1c2d3e-0a1b-4c5d-8e9f-001122334455",
 "status": "approved", "docType": "ground-truth-item", "schemaVersion": "v2",
 "manualTags": ["custom:long_doc", "source:sme", "topic:security"],
 "computedTags": ["dataset:support", "question_length:short", "reference_type:helpcenter",
                  "retrieval_behavior:single", "turns:singleturn"],
 "comment": "", "assignedTo": null, "assignedAt": null,
 "updatedAt": "2025-05-01T10:00:00Z", "updatedBy": "alice@example.com",
 "reviewedAt": "2025-05-01T10:00:00Z", "scenarioId": "",
 "history": [{"role": "user", "msg": "Which form do I use to renew my parking permit?"},
             {"role": "assistant", "msg": "Use form P-12 from the permits page."}],
 "contextEntries": [], "traceIds": null, "toolCalls": [],
 "expectedTools": {"required": [], "optional": [], "notNeeded": []}, "feedback": [],
 "metadata": {"legacyV1": {"synthQuestion": "Which form renews a parking permit?",
                           "modelUsedForGeneration": "gpt-x"}},
 "plugins": {"rag-compat": {"kind": "rag-compat", "version": "1.0",
             "data": {"references": [{"url": "https://support.example.com/help/parking-permits",
                                      "title": "Parking permits", "bonus": false}]}}},
 "createdBy": null, "createdAt": null, "tracePayload": {}}`

// TestWorkedExampleSingleTurn is the single-turn worked example against its hand-written
// stored form (specExampleOutput).
func TestWorkedExampleSingleTurn(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "legacy", "legacy-example-single-turn.in.json"))
	require.NoError(t, err)
	var raw, spec map[string]any
	decode(t, in, &raw)
	decode(t, []byte(specExampleOutput), &spec)
	for k, v := range spec {
		switch {
		case v == nil:
			delete(spec, k)
		case k == "updatedAt" || k == "reviewedAt":
			tm, err := gtc.ParseTime(v.(string))
			require.NoError(t, err)
			spec[k] = gtc.FormatStoredTime(tm)
		}
	}

	res, err := migrate.Convert(raw, testEnv(t))
	require.NoError(t, err)
	assert.Equal(t, pretty(spec), pretty(res.Body))
	assert.Equal(t, migrate.KindMigrate, res.Kind)
	assert.Nil(t, res.NewKey, "a canonical bucket is kept")
	assert.Equal(t, []migrate.Warning{
		{Code: migrate.WarnLegacyTagConverted, Message: "'long_doc' → 'custom:long_doc'"},
		{Code: migrate.WarnComputedTagsStripped, Message: "Removed computed tags from manualTags: dataset:support, question_length:short"},
	}, res.Warnings)
	assert.Equal(t, []string{"custom:long_doc"}, res.ConvertedTags, "the tag the conversion made, not the ones the document had")
}

// TestWorkedExampleMultiTurn is the multi-turn worked example: the blank last
// turn is dropped, the history tags removed, the turn reference gets the turn's index.
func TestWorkedExampleMultiTurn(t *testing.T) {
	raw := map[string]any{}
	decode(t, []byte(`{"id": "gt-18", "datasetName": "network-diagnostics",
	  "history": [{"role":"user","msg":"Q1"}, {"role":"assistant","msg":"A1","refs":[{"url":"https://kb.example.com/CS42"}]},
	              {"role":"user","content":"Q2","tags":["x:y"]}, {"role":"assistant","msg":"  "}]}`), &raw)
	res, err := migrate.Convert(raw, testEnv(t))
	require.NoError(t, err)

	var want map[string]any
	decode(t, []byte(`{
	  "history": [{"role": "user", "msg": "Q1"}, {"role": "assistant", "msg": "A1"}, {"role": "user", "msg": "Q2"}],
	  "references": [{"url":"https://kb.example.com/CS42","messageIndex":1,"bonus":false}],
	  "computedTags": ["dataset:network-diagnostics", "question_length:short", "reference_type:article",
	                   "retrieval_behavior:single", "turns:multiturn"]}`), &want)
	data := res.Body["plugins"].(map[string]any)["rag-compat"].(map[string]any)["data"].(map[string]any)
	assert.Equal(t, pretty(want["history"]), pretty(res.Body["history"]))
	assert.Equal(t, pretty(want["references"]), pretty(data["references"]))
	assert.Equal(t, pretty(want["computedTags"]), pretty(res.Body["computedTags"]))
	var codes []string
	for _, w := range res.Warnings {
		codes = append(codes, w.Code)
	}
	assert.ElementsMatch(t, []string{migrate.WarnHistoryEntryDropped, migrate.WarnHistoryTagsRemoved}, codes)
	assertSecondPassIsNoOp(t, testEnv(t), res)
}

// TestIsLegacy covers each legacy condition of IsLegacy on an otherwise current
// document.
func TestIsLegacy(t *testing.T) {
	current := func() map[string]any {
		var m map[string]any
		in, err := os.ReadFile(filepath.Join("testdata", "legacy", "current-unchanged.in.json"))
		require.NoError(t, err)
		decode(t, in, &m)
		return m
	}
	require.False(t, migrate.IsLegacy(current()))

	for _, tc := range []struct {
		name   string
		edit   func(m map[string]any)
		legacy bool
	}{
		{"a top-level tags key", func(m map[string]any) { m["tags"] = []any{} }, true},
		{"a null top-level tags key", func(m map[string]any) { m["tags"] = nil }, true},
		{"synthQuestion", func(m map[string]any) { m["synthQuestion"] = "q" }, true},
		{"a null answer key", func(m map[string]any) { m["answer"] = nil }, true},
		{"questionLength", func(m map[string]any) { m["questionLength"] = json.Number("3") }, true},
		{"weight", func(m map[string]any) { m["weight"] = json.Number("0.5") }, true},
		{"manualTags missing", func(m map[string]any) { delete(m, "manualTags") }, true},
		{"computedTags missing", func(m map[string]any) { delete(m, "computedTags") }, true},
		{"history missing", func(m map[string]any) { delete(m, "history") }, true},
		{"history null", func(m map[string]any) { m["history"] = nil }, true},
		{"a history entry with content", func(m map[string]any) {
			m["history"] = []any{map[string]any{"role": "user", "content": "q"}}
		}, true},
		{"a history entry with refs", func(m map[string]any) {
			m["history"] = []any{map[string]any{"role": "user", "msg": "q", "refs": []any{}}}
		}, true},
		{"rag-compat data.retrievals", func(m map[string]any) {
			m["plugins"] = map[string]any{"rag-compat": map[string]any{"kind": "rag-compat", "data": map[string]any{"retrievals": map[string]any{}}}}
		}, true},
		{"rag-compat data.totalReferences", func(m map[string]any) {
			m["plugins"] = map[string]any{"rag-compat": map[string]any{"kind": "rag-compat", "data": map[string]any{"totalReferences": json.Number("1")}}}
		}, true},
		{"legacy keys in another plugin slot are not read", func(m map[string]any) {
			m["plugins"] = map[string]any{"other": map[string]any{"kind": "other", "data": map[string]any{"refs": []any{}}}}
		}, false},
		{"schemaVersion v1 alone", func(m map[string]any) { m["schemaVersion"] = "v1" }, false},
		{"an unknown top-level key", func(m map[string]any) { m["reviewNotes"] = "x" }, false},
		{"history entry keys of v2", func(m map[string]any) {
			m["history"] = []any{map[string]any{"role": "user", "msg": "q", "turnId": "t", "stepId": "s", "expectedBehavior": []any{}}}
		}, false},
		{"another docType", func(m map[string]any) { m["docType"] = "tags"; delete(m, "manualTags") }, false},
		{"no docType but a datasetName", func(m map[string]any) { delete(m, "docType"); delete(m, "manualTags") }, true},
		{"neither docType nor datasetName", func(m map[string]any) {
			delete(m, "docType")
			delete(m, "datasetName")
			delete(m, "manualTags")
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := current()
			tc.edit(m)
			assert.Equal(t, tc.legacy, migrate.IsLegacy(m))
		})
	}
}

// TestConvertChangesTellAbsentFromNull: the report must show a key the canonical form drops
// (a null assignedTo) and a key it adds, not "null → null".
func TestConvertChangesTellAbsentFromNull(t *testing.T) {
	var raw map[string]any
	in, err := os.ReadFile(filepath.Join("testdata", "legacy", "current-reindex.in.json"))
	require.NoError(t, err)
	decode(t, in, &raw)
	res, err := migrate.Convert(raw, testEnv(t))
	require.NoError(t, err)
	byPath := map[string]migrate.Change{}
	for _, c := range res.Changes {
		byPath[c.Path] = c
	}
	assert.Equal(t, migrate.Change{Path: "assignedTo", Removed: true}, byPath["assignedTo"])
	assert.Equal(t, migrate.Change{Path: "docType", After: gtc.DocTypeItem, Added: true}, byPath["docType"])
	assert.Equal(t, migrate.Change{Path: "updatedAt", Before: "2025-05-01T10:00:00Z", After: "2025-05-01T10:00:00.000000Z"}, byPath["updatedAt"])
	b, err := json.Marshal(byPath["assignedTo"])
	require.NoError(t, err)
	assert.JSONEq(t, `{"path":"assignedTo","before":null,"after":null,"removed":true}`, string(b))
}

// TestConvertNeedsATagger: a missing pipeline is a programming error, not a document error.
func TestConvertNeedsATagger(t *testing.T) {
	_, err := migrate.Convert(map[string]any{"id": "x", "datasetName": "d", "tags": []any{}}, migrate.Env{})
	require.Error(t, err)
	var de *migrate.DocError
	assert.False(t, errors.As(err, &de))
}

// TestConvertMissingUpdatedAtOfCurrentDocument: a current document without updatedAt gets the
// run's start time, as a legacy one does, and is rewritten.
func TestConvertMissingUpdatedAtOfCurrentDocument(t *testing.T) {
	var raw map[string]any
	in, err := os.ReadFile(filepath.Join("testdata", "legacy", "current-unchanged.in.json"))
	require.NoError(t, err)
	decode(t, in, &raw)
	delete(raw, "updatedAt")
	res, err := migrate.Convert(raw, testEnv(t))
	require.NoError(t, err)
	assert.Equal(t, migrate.KindReindex, res.Kind)
	assert.Equal(t, "2025-06-01T12:00:00.000000Z", res.Body["updatedAt"])
	assertSecondPassIsNoOp(t, testEnv(t), res)
}

// TestConvertUnknownKeyCollision: an unknown key of a current document whose name is already
// taken under metadata.legacyV1 cannot be kept; existing keys win (as for legacy keys) and the loss
// is reported, never silent.
func TestConvertUnknownKeyCollision(t *testing.T) {
	var raw map[string]any
	in, err := os.ReadFile(filepath.Join("testdata", "legacy", "current-unknown-key.in.json"))
	require.NoError(t, err)
	decode(t, in, &raw)
	raw["metadata"] = map[string]any{"legacyV1": map[string]any{"reviewNotes": "an earlier note"}}
	res, err := migrate.Convert(raw, testEnv(t))
	require.NoError(t, err)
	assert.Equal(t, migrate.KindMigrate, res.Kind)
	assert.Equal(t, "unknown keys dropped: reviewNotes", res.Summary)
	assert.Equal(t, []migrate.Warning{{Code: migrate.WarnLegacyFieldDropped,
		Message: "metadata.legacyV1.reviewNotes already holds another value; the document's reviewNotes dropped"}}, res.Warnings)
	assert.Equal(t, map[string]any{"legacyV1": map[string]any{"reviewNotes": "an earlier note"}}, res.Body["metadata"])
	assertSecondPassIsNoOp(t, testEnv(t), res)
}

// FuzzConvertIdempotent converts legacy documents built from the fuzz input (or, when the
// input is a JSON object, that object): Convert never panics, fails only with a *DocError,
// never returns a legacy document, and converting its result again changes nothing.
func FuzzConvertIdempotent(f *testing.F) {
	for _, fx := range loadFixtures(f) {
		f.Add(fx.in)
	}
	for _, seed := range []string{"", "\x00", "\x01\x02\x03\x04\x05\x06\x07\x08", "legacy document", "\xff\xfe\xfd\xfc\xfb\xfa"} {
		f.Add([]byte(seed))
	}
	env := testEnv(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		raw := fuzzDocument(data)
		res, err := migrate.Convert(raw, env)
		if err != nil {
			var de *migrate.DocError
			require.ErrorAs(t, err, &de, "only document errors")
			assert.Equal(t, migrate.CodeInvalidDocument, de.Code)
			return
		}
		assertSecondPassIsNoOp(t, env, res)
	})
}

// fuzzDocument is data itself when it is a JSON object, else a legacy document whose keys
// and values are chosen by data.
func fuzzDocument(data []byte) map[string]any {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if dec.Decode(&m) == nil && m != nil {
		return m
	}
	g := &docGen{b: data}
	doc := map[string]any{
		// Mostly valid identities, so that most documents get converted.
		"id": g.pick("gt-1", "gt-2", "gt-3", "a b", "ünï", "gt-4", "gt-6", "gt-7", "gt-8", "gt-9", "gt-10",
			"gt-11", "gt-12", " gt-5", "x/y", ""),
		"datasetName": g.pick("support", "DS One", "network-diagnostics", "CamelCase", "ops", "sales", "hr", "  "),
	}
	// Always at least one legacy marker.
	marker := g.pick("tags", "synthQuestion", "refs", "totalReferences", "weight", "answer")
	doc[marker] = g.value(marker, 0)
	for n := g.next() % 14; n > 0; n-- {
		k := g.pick(fuzzKeys...)
		doc[k] = g.value(k, 0)
	}
	return doc
}

var fuzzKeys = []string{"bucket", "status", "docType", "schemaVersion", "synthQuestion", "editedQuestion", "answer",
	"refs", "tags", "manualTags", "computedTags", "comment", "history", "contextSource", "weight", "samplingBucket",
	"totalReferences", "questionLength", "assignedTo", "assignedAt", "updatedAt", "updatedBy", "reviewedAt", "plugins",
	"metadata", "scenarioId", "toolCalls", "expectedTools", "traceIds", "createdAt", "createdBy", "contextEntries",
	"feedback", "tracePayload", "unknownKey", "_etag", "gtcIndex"}

// docGen turns bytes into choices; past the end every choice is the first option.
type docGen struct {
	b []byte
	i int
}

func (g *docGen) next() int {
	if g.i >= len(g.b) {
		return 0
	}
	g.i++
	return int(g.b[g.i-1])
}

func (g *docGen) pick(options ...string) string { return options[g.next()%len(options)] }

var fuzzTexts = []string{"", "  ", "Q?", "A.", "NO_ANSWER", "Source:SME", "long doc", "x:", ":y", "a,b:c",
	"turns:multiturn", "dataset:other", "topic:install, Intent:Action", "source:sme", "source:synthetic",
	"https://kb.example.com/CS42", "https://kb.example.com/help/x", "  https://a.example/1 ",
	"6f1c2d3e-0a1b-4c5d-8e9f-001122334455", "6F1C2D3E0A1B4C5D8E9F001122334455", "{6f1c2d3e-0a1b-4c5d-8e9f-001122334455}",
	"2025-05-01T10:00:00Z", "2025-05-01T10:00:00", "2025-13-01T00:00:00Z", "approved", "draft", "deleted", "skipped",
	"bogus", "ground-truth-item", "v1", "user", "assistant", " User ", "tc1", "drop-me", "LegacySME", "\u2028", "ü"}

func (g *docGen) text() string { return fuzzTexts[g.next()%len(fuzzTexts)] }

func (g *docGen) number() json.Number {
	return json.Number(g.pick("0", "1", "2", "-1", "3", "0.25", "1.50", "12345678901234567890", "1e3"))
}

// value returns a value for key: usually of a plausible shape, sometimes of any shape.
func (g *docGen) value(key string, depth int) any {
	if depth > 3 {
		return g.text()
	}
	if g.next()%8 == 0 {
		return g.any(depth)
	}
	switch key {
	case "tags", "manualTags", "computedTags", "refs", "toolCalls", "contextEntries", "feedback":
		var list []any
		for n := g.next() % 5; n > 0; n-- {
			list = append(list, g.element(key, depth+1))
		}
		return list
	case "history":
		var list []any
		for n := g.next() % 5; n > 0; n-- {
			e := map[string]any{}
			for m := g.next() % 5; m > 0; m-- {
				k := g.pick("role", "msg", "content", "refs", "tags", "turnId", "stepId", "expectedBehavior", "extra")
				e[k] = g.value(k, depth+1)
			}
			list = append(list, e)
		}
		return list
	case "plugins":
		data := map[string]any{}
		for n := g.next() % 4; n > 0; n-- {
			k := g.pick("references", "refs", "retrievals", "historyAnnotations", "totalReferences", "answer", "other")
			switch k {
			case "retrievals":
				data[k] = map[string]any{g.pick("tc1", "tc2"): map[string]any{"candidates": g.value("refs", depth+1)}}
			case "references":
				data[k] = g.value("refs", depth+1)
			default:
				data[k] = g.value(k, depth+1)
			}
		}
		return map[string]any{"rag-compat": map[string]any{"kind": g.pick("rag-compat", ""), "data": data}}
	case "metadata", "tracePayload", "traceIds", "expectedTools", "gtcIndex":
		m := map[string]any{}
		for n := g.next() % 3; n > 0; n-- {
			k := g.pick("legacyV1", "required", "traceId", "note")
			m[k] = g.value(k, depth+1)
		}
		return m
	case "weight", "samplingBucket", "totalReferences", "questionLength", "stepNumber", "messageIndex":
		return g.number()
	case "docType":
		return g.pick(gtc.DocTypeItem, gtc.DocTypeItem, gtc.DocTypeItem, "tags")
	case "status":
		return g.pick("draft", "approved", "skipped", "deleted", "bogus")
	case "bucket":
		return g.pick("6f1c2d3e-0a1b-4c5d-8e9f-001122334455", "6F1C2D3E0A1B4C5D8E9F001122334455",
			"{6f1c2d3e-0a1b-4c5d-8e9f-001122334455}", "b-7", "")
	case "assignedAt", "updatedAt", "reviewedAt", "createdAt":
		return g.pick("2025-05-01T10:00:00Z", "2025-05-01T10:00:00", "2025-05-01T10:00:00.1234567+02:00",
			"2025-05-01T10:00:00.000000Z", "2025-13-01T00:00:00Z")
	default:
		return g.text()
	}
}

// element returns one element of a list key.
func (g *docGen) element(key string, depth int) any {
	switch key {
	case "refs":
		r := map[string]any{}
		for n := g.next() % 4; n > 0; n-- {
			k := g.pick("url", "title", "bonus", "messageIndex", "chunk", "toolCallId")
			r[k] = g.value(k, depth+1)
		}
		return r
	case "toolCalls":
		return map[string]any{"id": g.pick("tc1", "tc2"), "name": g.text(), "stepNumber": g.number()}
	case "contextEntries":
		return map[string]any{"key": g.text(), "value": g.any(depth + 1)}
	case "feedback":
		return map[string]any{"source": g.text(), "values": map[string]any{}}
	default:
		return g.text()
	}
}

// any returns a value of any JSON shape.
func (g *docGen) any(depth int) any {
	switch g.next() % 7 {
	case 0:
		return nil
	case 1:
		return g.next()%2 == 0
	case 2:
		return g.number()
	case 3:
		if depth < 3 {
			return []any{g.any(depth + 1), g.text()}
		}
	case 4:
		if depth < 3 {
			return map[string]any{g.text(): g.any(depth + 1)}
		}
	}
	return g.text()
}

// TestConvertRefusesNamesNoItemMayHave: the name rules of the import apply to stored and
// legacy documents alike; such a document is a document error, never written.
func TestConvertRefusesNamesNoItemMayHave(t *testing.T) {
	env := testEnv(t)
	for _, tc := range []struct{ id, ds, want string }{
		{"gt-1", "..", "datasetName cannot be '.' or '..'"},
		{"gt-1", ".", "datasetName cannot be '.' or '..'"},
		{"..", "support", "id cannot be '.' or '..'"},
		{"gt\u200b1", "support", "id contains an invisible format character (U+200B), which is not allowed"},
		{"gt-1", "sup\u202eport", "datasetName contains an invisible format character (U+202E), which is not allowed"},
	} {
		for _, legacy := range []bool{true, false} {
			doc := map[string]any{"id": tc.id, "datasetName": tc.ds, "history": []any{}, "manualTags": []any{}, "computedTags": []any{}}
			if legacy {
				doc = map[string]any{"id": tc.id, "datasetName": tc.ds, "synthQuestion": "q", "answer": "a"}
			}
			_, err := migrate.Convert(doc, env)
			var de *migrate.DocError
			require.ErrorAs(t, err, &de, "%q/%q legacy=%v", tc.ds, tc.id, legacy)
			assert.Equal(t, migrate.CodeInvalidDocument, de.Code)
			assert.Contains(t, de.Message, tc.want)
		}
	}
}
