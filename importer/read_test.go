package importer

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func elements(t *testing.T, name, format, in string) ([]string, error) {
	t.Helper()
	var out []string
	err := ReadElements(strings.NewReader(in), name, format, func(b []byte) error {
		out = append(out, string(b))
		return nil
	})
	return out, err
}

// Every shape gtc export writes gives its elements' JSON text, in order.
func TestReadElementsShapes(t *testing.T) {
	for _, tc := range []struct{ name, format, in string }{
		{"items.json", "auto", "\xef\xbb\xbf [ {\"id\":\"a\"} , {\"id\":\"b\"} ]\n"},
		{"payload.json", "auto", `{"format":"json_snapshot_payload","items":[{"id":"a"},{"id":"b"}],"count":2}`},
		{"records", "auto", "{\"id\":\"a\"}\n\n{\"id\":\"b\"}\n"},
		{"x.ndjson", "auto", "{\"id\":\"a\"}\n{\"id\":\"b\"}"},
		{"stdin", "jsonl", "{\"id\":\"a\"}\r\n{\"id\":\"b\"}\r\n"},
	} {
		got, err := elements(t, tc.name, tc.format, tc.in)
		require.NoError(t, err, tc.name)
		assert.Equal(t, []string{`{"id":"a"}`, `{"id":"b"}`}, got, tc.name)
	}
	got, err := elements(t, "empty.json", "auto", " \n")
	require.NoError(t, err)
	assert.Empty(t, got)
}

// Input that is not the JSON it should be is a BadInputError naming the place; the elements
// before it were emitted.
func TestReadElementsBadInput(t *testing.T) {
	got, err := elements(t, "items.json", "auto", `[{"id":"a"},{"id":`)
	var bad BadInputError
	require.True(t, errors.As(err, &bad), "%v", err)
	assert.Contains(t, err.Error(), "invalid JSON near byte")
	assert.Equal(t, []string{`{"id":"a"}`}, got)

	_, err = elements(t, "items.json", "auto", `[{"id":"a"}] [`)
	assert.ErrorContains(t, err, "unexpected data after the JSON document")

	_, err = elements(t, "items.csv", "auto", "id,question\n")
	require.True(t, errors.As(err, &bad))
	assert.ErrorContains(t, err, "expected a JSON array, a JSON object or JSON lines")
}
