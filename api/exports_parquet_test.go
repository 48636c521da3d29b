// Left out of the fuzz builds with the rest of package api_test (see harness_test.go), and
// out of the race-detector build, which has no parquet formatter (export/parquet.go);
// scripts/test.sh runs these tests without it.

//go:build !fuzzing && !race

package api_test

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A parquet export, as an attachment (the default delivery) and as a stream: a Parquet file
// of the split turns, the processor's columns last.
func TestParquetExportModes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.storeItems(4, "alpha")
	for _, mode := range []string{"attachment", "stream"} {
		res := h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths/snapshot", Body: map[string]any{
			"format": "parquet", "processors": []any{"split_turns"}, "delivery": map[string]any{"mode": mode},
		}})
		require.Equal(t, http.StatusOK, res.Status, "%s: %s", mode, res.Body)
		assert.Equal(t, "application/vnd.apache.parquet", res.Header.Get("Content-Type"), mode)
		assert.Equal(t, `attachment; filename="ground-truth-items-20250102T100000Z.parquet"`, res.Header.Get("Content-Disposition"), mode)
		if mode == "attachment" {
			assert.Equal(t, fmt.Sprint(len(res.Body)), res.Header.Get("Content-Length"))
		}
		require.Greater(t, len(res.Body), 8, mode)
		assert.Equal(t, "PAR1", string(res.Body[:4]), "%s: a Parquet file starts with its magic bytes", mode)
		assert.Equal(t, "PAR1", string(res.Body[len(res.Body)-4:]), "%s: and ends with them, after the footer", mode)
		pf, err := file.NewParquetReader(bytes.NewReader(res.Body))
		require.NoError(t, err, mode)
		assert.EqualValues(t, 4, pf.NumRows(), "%s: 2 approved items × 2 exchanges", mode)
		sc := pf.MetaData().Schema
		var last []string
		for i := sc.NumColumns() - 4; i < sc.NumColumns(); i++ {
			last = append(last, sc.Column(i).Name())
		}
		assert.Equal(t, []string{"sourceItemId", "turnIndex", "turnCount", "precedingHistory"}, last, "split_turns' columns come last")
		require.NoError(t, pf.Close())
	}

}

func TestParquetSnapshotFile(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.storeItems(3, "alpha")
	res := h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths/snapshot", Body: map[string]any{
		"format": "parquet", "delivery": map[string]any{"mode": "artifact"}}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	m := h.get("/v1/exports/20250102T100000Z").Object(t)
	f := m["files"].([]any)[0].(map[string]any)
	assert.Equal(t, "ground-truth-items.parquet", f["name"])
	assert.Equal(t, "application/vnd.apache.parquet", f["contentType"])

	res = h.get("/v1/exports/20250102T100000Z/files/ground-truth-items.parquet")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, "application/vnd.apache.parquet", res.Header.Get("Content-Type"))
	assert.Equal(t, "ground-truth-items.parquet", filenameOf(t, res))
	assert.Equal(t, fmt.Sprint(f["bytes"]), res.Header.Get("Content-Length"))
	assert.Equal(t, "PAR1", string(res.Body[:4]))
	assert.Equal(t, "PAR1", string(res.Body[len(res.Body)-4:]))
}
