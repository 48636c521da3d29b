// Left out of the fuzz builds with the rest of package api_test (see harness_test.go).

//go:build !fuzzing

package api_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A body with hundreds of thousands of problems answers a 422 that lists the first 100 and
// counts the others; the answer validates against the document (the harness checks it).
func TestHugeErrorListsAreCapped(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.importItems(basicItem("ds", "a"))
	k := h.key("ds", "a")
	etag := h.item("ds", "a")["_etag"].(string)
	const n = 300_000
	numbers := "[" + strings.Repeat("1,", n-1) + "1]"

	for _, tc := range []struct {
		name  string
		r     req
		first string
	}{
		{"import of numbers", req{Method: http.MethodPost, Path: "/v1/ground-truths", Body: numbers}, "[0]"},
		{"PUT history of numbers", req{Method: http.MethodPut, Path: itemPath(k), Body: `{"history":` + numbers + `}`,
			Header: map[string]string{"If-Match": etag}}, "history[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := h.do(tc.r)
			require.Equal(t, http.StatusUnprocessableEntity, res.Status)
			body := res.Object(t)
			errs := body["errors"].([]any)
			require.Len(t, errs, 100)
			assert.Equal(t, map[string]any{"field": tc.first, "message": "expected object"}, errs[0])
			assert.Equal(t, strconv.Itoa(n-100), string(body["moreErrors"].(json.Number)))
			assert.Equal(t, "Request validation failed: "+tc.first+": expected object (and "+strconv.Itoa(n-1)+" more)", body["detail"])
			assert.Less(t, len(res.Body), 10_000, "the answer does not grow with the body")
		})
	}
	assert.Equal(t, etag, h.item("ds", "a")["_etag"], "nothing was stored")

	// A short list is answered as it always was, byte for byte, with no moreErrors.
	res := h.do(req{Method: http.MethodPut, Path: itemPath(k), Body: `{"answer":1,"history":[{"role":2}]}`, Header: map[string]string{"If-Match": etag}})
	require.Equal(t, http.StatusUnprocessableEntity, res.Status)
	assert.Equal(t, `{"detail":"Request validation failed: answer: unknown field (and 1 more)","status":422,"code":"VALIDATION_ERROR",`+
		`"errors":[{"field":"answer","message":"unknown field"},{"field":"history[0].role","message":"expected string"}]}`, string(res.Body))
}
