package cosmos

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	gtc "github.com/gtc-dev/gtc"
)

// everyFilter returns filters that exercise every clause of the translation table alone and
// all together.
func everyFilter() []gtc.Filter {
	user, none := "u@example.com", ""
	all := gtc.Filter{
		Statuses: []gtc.Status{gtc.StatusDraft, gtc.StatusApproved}, DatasetNames: []string{"a", "b"}, DatasetPrefix: "p",
		AllTags: []string{"x:1", "y:2"}, NoneOfTags: []string{"z:3"}, IDContains: "id", Keyword: "kw",
		RefURLContains: []string{"https://"}, AssignedTo: &user,
	}
	return []gtc.Filter{
		{},
		{Statuses: []gtc.Status{gtc.StatusDraft}},
		{DatasetNames: []string{"ds"}},
		{DatasetPrefix: "ORDER BY"}, // a value that looks like SQL stays a parameter
		{AllTags: []string{"a:b"}},
		{NoneOfTags: []string{"a:b"}},
		{IDContains: "x"},
		{Keyword: "hello"},
		{RefURLContains: []string{"u"}},
		{AssignedTo: &user},
		{AssignedTo: &none},
		all,
	}
}

var allSorts = []gtc.SortKey{gtc.SortReviewedAt, gtc.SortUpdatedAt, gtc.SortID, gtc.SortHasAnswer, gtc.SortTagCount,
	gtc.SortReferences, gtc.SortAssignedAt, gtc.SortRecent}

// TestEveryQueryPassesTheGuard builds every query the adapter can send and runs it through
// checkQuery: a forbidden construct fails here even though the test server would run it.
func TestEveryQueryPassesTheGuard(t *testing.T) {
	p := partition{Dataset: "ds", Bucket: gtc.DeriveBucket("ds", "x")}
	after := "x"
	var qs []sqlQuery
	for _, f := range everyFilter() {
		if q, ok := countQuery(f); assert.True(t, ok) {
			qs = append(qs, q)
		}
		for _, k := range allSorts {
			for _, desc := range []bool{false, true} {
				for _, n := range []int{0, 1, 1000} {
					q, _ := topQuery(p, f, k, desc, n)
					qs = append(qs, q)
				}
				q, _ := fullQuery(p, f, sortField(k), desc, nil)
				qs = append(qs, q)
				q, _ = fullQuery(p, f, "c.id", false, &after)
				qs = append(qs, q)
			}
			q, _ := projectionQuery(f, k)
			qs = append(qs, q)
		}
	}
	qs = append(qs, eligibleQuery(gtc.EligibleSpec{User: "u"}), eligibleQuery(gtc.EligibleSpec{User: "u", DatasetPrefix: "p"}),
		locateQuery("ds", "id", true), locateQuery("ds", "id", false),
		rawQuery("*", nil), rawQuery("*", []string{"a", "b"}), rawQuery("VALUE COUNT(1)", nil), rawQuery("VALUE COUNT(1)", []string{"a"}),
		pendingQuery(), absentKeyQuery([]any{"ds", nil}, "id"), absentKeyQuery([]any{nil, json.Number("3")}, "id"))
	ids, _ := idQuery(p)
	qs = append(qs, ids)
	for _, q := range qs {
		require.NotEmpty(t, q.text)
		assert.NoError(t, checkQuery(q.text, q.pk == nil), q.text)
		if q.pk != nil {
			assert.Contains(t, q.text, pkCond, "single-partition queries repeat their key")
		} else {
			assert.NotContains(t, q.text, "ORDER BY", q.text)
		}
		for _, prm := range q.params {
			if toString(prm.Value) == "" {
				continue
			}
			assert.NotContains(t, q.text, "'"+toString(prm.Value)+"'", "values are parameters, never literals")
		}
		if strings.Contains(q.text, "gtcIndex") || strings.Contains(q.text, "ground-truth-item") {
			continue
		}
		t.Errorf("item query without the visibility rule: %s", q.text)
	}
}

func toString(v any) string {
	s, _ := v.(string)
	return s
}

func TestGuardRefusesWhatTheGatewayCannotServe(t *testing.T) {
	for _, text := range []string{
		"SELECT * FROM c ORDER BY c.id",
		"SELECT TOP 5 * FROM c",
		"SELECT DISTINCT c.datasetName FROM c",
		"SELECT c.status, COUNT(1) FROM c GROUP BY c.status",
		"SELECT VALUE MAX(c.id) FROM c",
		"SELECT * FROM c OFFSET 10 LIMIT 10",
		"SELECT VALUE SUM(c.n) FROM c",
	} {
		assert.Error(t, checkQuery(text, true), "cross-partition: %s", text)
	}
	assert.NoError(t, checkQuery("SELECT VALUE COUNT(1) FROM c WHERE c.docType = 'x'", true))
	assert.NoError(t, checkQuery("SELECT * FROM c WHERE c.name = 'ORDER BY'", true), "literals are not constructs")

	single := "SELECT * FROM c WHERE " + pkCond
	assert.NoError(t, checkQuery(single+" ORDER BY c.id DESC", false))
	assert.NoError(t, checkQuery("SELECT TOP @n c.id FROM c WHERE "+pkCond+" ORDER BY c.id", false))
	for _, text := range []string{
		"SELECT * FROM c WHERE c.id = @id",                 // key not repeated
		single + " OFFSET 1 LIMIT 1",                       // the test server cannot parse it
		single + " AND c.id LIKE 'a%'",                     // idem
		"SELECT DISTINCT c.id FROM c WHERE " + pkCond,      // idem
		single + " ORDER BY c.gtcIndex.sk.updatedAt, c.id", // needs a composite index
	} {
		assert.Error(t, checkQuery(text, false), "single-partition: %s", text)
	}
}

func TestKeywordWithUnitSeparatorMatchesNothingWithoutAQuery(t *testing.T) {
	_, ok := countQuery(gtc.Filter{Keyword: "a\x1fb"})
	assert.False(t, ok)
}

func TestJSNumberFormatting(t *testing.T) {
	for in, want := range map[float64]string{
		1: "1", -1: "-1", 0.5: "0.5", 1e21: "1e+21", 1e20: "100000000000000000000", 1.5e-7: "1.5e-7",
		0.000001: "0.000001", 123456789.125: "123456789.125", 9007199254740992: "9007199254740992",
	} {
		assert.Equal(t, want, jsNumber(in), "%v", in)
	}
	assert.True(t, numbersSurvive([]byte(`{"a":1,"b":[0.5,-2,"9223372036854775807"],"c":1e+21}`)))
	for _, doc := range []string{`{"a":9223372036854775807}`, `{"a":1.0}`, `{"a":3.14159265358979323846}`, `{"a":1E5}`, `{"a":-0}`} {
		assert.False(t, numbersSurvive([]byte(doc)), doc)
	}
}
