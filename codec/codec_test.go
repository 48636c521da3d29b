package codec

import (
	"encoding/json"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
)

func TestCanonicalRoundTrip(t *testing.T) {
	entries, err := DecodeImport([]byte(`[{"id":"a","datasetName":"d","bucket":"3f0e9a57-55c1-5d0b-9a3e-6b1f9f2d7c10",
		"comment":"<b>&</b>","traceIds":{"z":"1","a":"2"},"metadata":{"n":123456789012345678901234567890,"s":"x"},
		"history":[{"role":"user","msg":"q","expectedBehavior":[]},{"role":"agent","msg":"a","turnId":null}],
		"toolCalls":[{"name":"t","arguments":null,"response":{"k":[1,2]}}],
		"expectedTools":{"optional":["a",{"name":"b","arguments":"s"}]},
		"feedback":[{"source":null}],"plugins":{"p":{"kind":"p"}},"assignedTo":"","createdAt":"2025-01-01T00:00:00.1234567Z"}]`))
	require.NoError(t, err)
	it := entries[0].Item
	assert.Nil(t, it.AssignedTo, "an empty assignee is unassigned")
	doc := ItemStoredJSON(it)
	back, err := DecodeStoredItem(doc)
	require.NoError(t, err)
	assert.Equal(t, string(doc), string(ItemStoredJSON(back)), "the stored form is a fixed point")
	assert.Contains(t, string(doc), `"comment":"<b>&</b>"`, "no HTML escaping")
	assert.Contains(t, string(doc), `123456789012345678901234567890`)
	assert.Contains(t, string(doc), `"createdAt":"2025-01-01T00:00:00.123456Z"`)
	assert.NotContains(t, string(doc), `"assignedTo"`, "null top-level keys are left out of the stored form")
	assert.NotContains(t, string(doc), `"tags"`)
	assert.NotContains(t, string(doc), `"_etag"`)
	wire := ItemAPIJSON(back)
	var m map[string]any
	require.NoError(t, json.Unmarshal(wire, &m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	assert.Equal(t, []string{"_etag", "assignedAt", "assignedTo", "bucket", "comment", "computedTags", "contextEntries", "createdAt",
		"createdBy", "datasetName", "docType", "expectedTools", "feedback", "history", "id", "manualTags", "metadata", "plugins",
		"reviewedAt", "revision", "scenarioId", "schemaVersion", "status", "tags", "toolCalls", "traceIds", "tracePayload", "updatedAt", "updatedBy"}, keys,
		"every key of the item is present in API output")
	assert.Equal(t, []any{map[string]any{"role": "user", "msg": "q", "expectedBehavior": []any{}}, map[string]any{"role": "agent", "msg": "a"}}, m["history"])
	assert.Equal(t, map[string]any{"kind": "p", "version": "1.0", "data": map[string]any{}}, m["plugins"].(map[string]any)["p"])
}

// FuzzDecodeImport feeds arbitrary bodies to the import decoder: it never panics, and every
// item it accepts encodes to a stored form that reads back to itself.
func FuzzDecodeImport(f *testing.F) {
	for _, s := range []string{`[]`, `[{"id":"a","datasetName":"d"}]`, `[{"id":"","datasetName":"d","manualTags":"a:b, c:d"}]`,
		`[{"id":"a","datasetName":"d","history":[{"role":"user","msg":"q","expectedBehavior":["x"]}],"toolCalls":[{"name":"t","stepNumber":3}]}]`,
		`[{"id":"a","datasetName":"d","plugins":{"rag-compat":{"kind":"rag-compat","data":{"references":[{"url":"u"}]}}}}]`,
		`{"x":1}`, `[{"id":"a","datasetName":"d","expectedTools":{"required":["a"],"optional":["a"]}}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		entries, err := DecodeImport(body)
		if err != nil {
			if _, ok := gtc.AsError(err); !ok {
				t.Fatalf("decoder error is not a user error: %v", err)
			}
			return
		}
		for _, e := range entries {
			e.Item.Bucket = gtc.DeriveBucket(e.Item.DatasetName, e.Item.ID)
			doc := ItemStoredJSON(e.Item)
			if !json.Valid(doc) {
				t.Fatalf("invalid stored form %q", doc)
			}
			back, err := DecodeStoredItem(doc)
			require.NoError(t, err)
			require.Equal(t, string(doc), string(ItemStoredJSON(back)))
		}
	})
}

// TestEscaping pins the one escaping every item form uses.
func TestEscaping(t *testing.T) {
	it := gtc.NewItem("d", "a")
	it.Comment = "q\"\\\b\f\n\r\t\x01<>&\u2028é\xff"
	want := `"comment":"q\"\\\b\f\n\r\t\u0001<>&` + "\u2028é\uFFFD" + `"`
	assert.Contains(t, string(ItemAPIJSON(it)), want)
	assert.Contains(t, string(ItemStoredJSON(it)), want)
}
