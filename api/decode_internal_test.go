package api

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec/codectest"
)

func TestPutWithThousandsOfUnknownKeysListsTheFirstHundred(t *testing.T) {
	const n = 3000
	var b strings.Builder
	b.WriteString(`{"comment":7,`)
	for i := range n {
		fmt.Fprintf(&b, `"k%d":1,`, i)
	}
	// Repeated unknown keys are reported once, at their first position.
	b.WriteString(`"k0":2,"k5":3,"status":"draft"}`)
	_, err := decodeItemPatch([]byte(b.String()), false)
	ge := codectest.RequireCapped(t, err, n+1)
	assert.Equal(t, gtc.FieldError{Field: "comment", Message: "expected string"}, ge.Fields[0])
	for i, f := range ge.Fields[1:] {
		require.Equal(t, gtc.FieldError{Field: fmt.Sprintf("k%d", i), Message: "unknown field"}, f)
	}
}

func TestPutWithAHistoryOfNumbersListsTheFirstHundred(t *testing.T) {
	body := append(append([]byte(`{"history":`), codectest.Numbers(200_000)...), '}')
	_, err := decodeItemPatch(body, false)
	ge := codectest.RequireCapped(t, err, 200_000)
	assert.Equal(t, gtc.FieldError{Field: "history[0]", Message: "expected object"}, ge.Fields[0])
	assert.Equal(t, gtc.FieldError{Field: "history[99]", Message: "expected object"}, ge.Fields[99])
}

func TestAShortErrorListIsUnchanged(t *testing.T) {
	_, err := decodeItemPatch([]byte(`{"history":[1,{"role":2}],"answer":1,"metadata":[]}`), false)
	ge, ok := gtc.AsError(err)
	require.True(t, ok)
	assert.Equal(t, &gtc.Error{Code: gtc.CodeValidation,
		Message: "Request validation failed: history[0]: expected object (and 3 more)",
		Fields: []gtc.FieldError{{Field: "history[0]", Message: "expected object"}, {Field: "history[1].role", Message: "expected string"},
			{Field: "answer", Message: "unknown field"}, {Field: "metadata", Message: "expected object"}}}, ge)
}

// FuzzDecodeItemPatch checks the PUT decoder never panics and only returns user errors.
func FuzzDecodeItemPatch(f *testing.F) {
	for _, s := range []string{`{}`, `{"status":null}`, `{"history":[{"role":"u","content":"c","expected_behavior":"x"}]}`, `{"tags":1,"etag":"x"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, err := decodeItemPatch(body, true); err != nil {
			if _, ok := gtc.AsError(err); !ok {
				t.Fatalf("decoder error is not a user error: %v", err)
			}
		}
	})
}

// A repeated key in a PUT body is read once, at its first position, with its last value.
func TestPatchRepeatedKeysKeepFirstPositionAndLastValue(t *testing.T) {
	bodies := []string{
		`{"metadata":{"ab":1,"cd":2,"ab":3,"ef":{"x":1,"y":2,"x":[1,{"q":1,"r":2,"q":3}]},"\u0061b":4},` +
			`"comment":"a","comment":"b","zz":1,"yy":2,"zz":3,"history":[{"role":"u","msg":"m","role":"v","qq":1,"qq":2}]}`,
		"",
		`{"history":[{"role":"user","content":"c","msg":"m","msg":null,"expected_behavior":["a"],"expectedBehavior":null}],` +
			`"status":"draft","etag":"e","status":"approved"}`,
	}
	_, err := decodeItemPatch([]byte(bodies[0]), false)
	ge, _ := gtc.AsError(err)
	require.NotNil(t, ge)
	assert.Equal(t, []gtc.FieldError{{Field: "zz", Message: "unknown field"}, {Field: "yy", Message: "unknown field"}, {Field: "history[0].qq", Message: "unknown field"}},
		ge.Fields, "a repeated unknown key is reported once, at its first position")

	p, err := decodeItemPatch([]byte(bodies[2]), false)
	require.NoError(t, err)
	assert.Equal(t, []string{"history", "status", "etag"}, p.Keys)
	assert.Equal(t, "approved", p.Status.V)
	require.Len(t, p.History.V, 1)
	assert.Equal(t, "c", *p.History.V[0].Msg, "msg is null, so content is the message")
	assert.False(t, p.History.V[0].ExpectedBehaviorSet, "expectedBehavior (null) wins over its alias")
}
