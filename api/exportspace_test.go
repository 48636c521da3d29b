// Left out of the fuzz builds with the rest of package api_test (see harness_test.go).

//go:build !fuzzing

package api_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc/api"
	"github.com/gtc-dev/gtc/export"
	"github.com/gtc-dev/gtc/storage/localfs"
)

// An artifact export is refused with 507 before anything is written while local export
// storage has less than the configured free space; other delivery modes are not affected.
func TestArtifactExportRefusedBelowMinFreeSpace(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.storeItems(3, "alpha")
	root := t.TempDir()
	local, err := localfs.Open(root)
	require.NoError(t, err)
	t.Cleanup(func() { _ = local.Close() })
	if _, err := local.FreeBytes(); err != nil {
		t.Skipf("free space is not measured here: %v", err)
	}
	pr, fr := export.Builtins(nil)
	exp, err := export.New(export.Config{Items: h.store.Items(), Artifacts: local, Clock: h.clock, Processors: pr, Formatters: fr,
		TempDir: filepath.Join(root, "tmp"), MinFreeBytes: 1 << 62})
	require.NoError(t, err)
	full := *h
	full.srv = serve(t, api.New(api.Deps{Curator: h.cur, Exporter: exp}, api.Options{Prefix: "/v1", RequestTimeout: time.Minute,
		Auth: api.AuthOptions{DevUserID: "anonymous"}}))

	res := full.do(req{Method: http.MethodPost, Path: "/v1/ground-truths/snapshot", Body: `{"delivery":{"mode":"artifact"}}`})
	require.Equal(t, http.StatusInsufficientStorage, res.Status, string(res.Body))
	body := res.Object(t)
	assert.Equal(t, "INSUFFICIENT_STORAGE", body["code"])
	assert.Regexp(t, `^Export storage has [0-9.]+ [KMGTP]?i?B free, less than the 4.0 EiB kept free for the server`, body["detail"])
	_, err = os.Stat(filepath.Join(root, "exports"))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing was written")

	res = full.do(req{Method: http.MethodPost, Path: "/v1/ground-truths/snapshot", Body: `{"format":"jsonl","delivery":{"mode":"stream"}}`})
	assert.Equal(t, http.StatusOK, res.Status, "a stream writes nothing to export storage")
}
