// Left out of the fuzz builds with the rest of package api_test (see harness_test.go).

//go:build !fuzzing

package api_test

import (
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc/api"
)

const staticIndex = "<!doctype html><title>curator</title><div id=app></div>"

// staticSite writes a small built SPA into a fresh directory and returns it. Beside the
// directory lies secret.txt, which no request may ever read.
func staticSite(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "site")
	files := map[string]string{
		"index.html":                 staticIndex,
		"assets/app-3f2a9c.js":       "console.log('app')",
		"assets/app-3f2a9c.css":      "body{margin:0}",
		"assets/logo.svg":            "<svg xmlns='http://www.w3.org/2000/svg'/>",
		"assets/font.woff2":          "wOF2",
		"assets/app-3f2a9c.js.map":   `{"version":3}`,
		"favicon.ico":                "ico",
		"data/blob.bin7":             "raw",
		"robots.txt":                 "User-agent: *",
		"v1/config":                  "static file shadowing the API",
		"v1/static-only.js":          "never served",
		"healthz":                    "static healthz",
		"readyz/x.js":                "static readyz",
		"mcp":                        "static mcp",
		"docs/index.html":            "static docs",
		"swagger":                    "static swagger",
		"deep/nested/route/page.txt": "deep",
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(base, "secret.txt"), []byte("TOP SECRET"), 0o644))
	// A symbolic link that points out of the directory.
	require.NoError(t, os.Symlink(filepath.Join(base, "secret.txt"), filepath.Join(dir, "leak.txt")))
	require.NoError(t, os.Symlink("../secret.txt", filepath.Join(dir, "leak2")))
	return dir
}

func staticHarness(t *testing.T, mods ...func(*api.Options)) *harness {
	t.Helper()
	h := newHarness(t, mods...)
	require.NoError(t, h.api.EnableStatic(api.StaticOptions{Dir: staticSite(t), CacheSeconds: 120}))
	return h
}

func staticGet(h *harness, method, path string) *response {
	return h.do(req{Method: method, Path: path, NoCheck: true})
}

func requireRouteNotFound(t *testing.T, res *response, path string) {
	t.Helper()
	require.Equal(t, http.StatusNotFound, res.Status, "%s: %s", path, res.Body)
	assert.Equal(t, "ROUTE_NOT_FOUND", res.Object(t)["code"], path)
	assert.Equal(t, "Not Found", res.Object(t)["detail"], path)
	assert.NotContains(t, res.Header.Get("Cache-Control"), "public", "%s: a 404 is not cached like a file", path)
}

func TestStaticFilesHaveTypeAndCacheHeaders(t *testing.T) {
	t.Parallel()
	h := staticHarness(t)
	for _, tc := range []struct{ path, ctype, body string }{
		{"/assets/app-3f2a9c.js", "text/javascript; charset=utf-8", "console.log('app')"},
		{"/assets/app-3f2a9c.css", "text/css; charset=utf-8", "body{margin:0}"},
		{"/assets/logo.svg", "image/svg+xml", "<svg xmlns='http://www.w3.org/2000/svg'/>"},
		{"/assets/font.woff2", "font/woff2", "wOF2"},
		{"/assets/app-3f2a9c.js.map", "application/json", `{"version":3}`},
		{"/favicon.ico", "image/x-icon", "ico"},
		{"/robots.txt", "text/plain; charset=utf-8", "User-agent: *"},
		{"/data/blob.bin7", "application/octet-stream", "raw"},
		{"/deep/nested/route/page.txt", "text/plain; charset=utf-8", "deep"},
		{"/deep/./nested/../nested/route/page.txt", "text/plain; charset=utf-8", "deep"},
	} {
		res := staticGet(h, http.MethodGet, tc.path)
		require.Equal(t, http.StatusOK, res.Status, "%s: %s", tc.path, res.Body)
		assert.Equal(t, tc.body, string(res.Body), tc.path)
		assert.Equal(t, tc.ctype, res.Header.Get("Content-Type"), tc.path)
		assert.Equal(t, "public, max-age=120", res.Header.Get("Cache-Control"), tc.path)
		assert.Equal(t, strconv.Itoa(len(tc.body)), res.Header.Get("Content-Length"), tc.path)
		assert.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"), tc.path)
	}
}

func TestStaticHead(t *testing.T) {
	t.Parallel()
	h := staticHarness(t)
	res := staticGet(h, http.MethodHead, "/assets/app-3f2a9c.js")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Empty(t, res.Body)
	assert.Equal(t, "text/javascript; charset=utf-8", res.Header.Get("Content-Type"))
	assert.Equal(t, "public, max-age=120", res.Header.Get("Cache-Control"))
	assert.Equal(t, strconv.Itoa(len("console.log('app')")), res.Header.Get("Content-Length"))

	res = staticGet(h, http.MethodHead, "/foo/bar")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Empty(t, res.Body)
	assert.Equal(t, "text/html; charset=utf-8", res.Header.Get("Content-Type"))
	assert.Equal(t, "no-cache", res.Header.Get("Cache-Control"))
	assert.Equal(t, strconv.Itoa(len(staticIndex)), res.Header.Get("Content-Length"))

	// A HEAD answer has no body, so this one bypasses the harness's error-body check.
	hr, err := http.NewRequest(http.MethodHead, h.srv.URL+"/missing.js", nil)
	require.NoError(t, err)
	raw, err := http.DefaultClient.Do(hr)
	require.NoError(t, err)
	raw.Body.Close()
	assert.Equal(t, http.StatusNotFound, raw.StatusCode)
	assert.Equal(t, "application/json", raw.Header.Get("Content-Type"))
}

func TestStaticIndexFallback(t *testing.T) {
	t.Parallel()
	h := staticHarness(t)
	for _, p := range []string{
		"/", "/foo", "/foo/bar", "/curate/support/3f0e9a57/gt-001", "/assets", "/assets/",
		"/.auth/logout", "/.auth/logout/complete", "/index.html", "/foo/../index.html",
		"/v1x/explorer", // only the prefix itself and what lies below it are reserved
	} {
		res := staticGet(h, http.MethodGet, p)
		require.Equal(t, http.StatusOK, res.Status, "%s: %s", p, res.Body)
		assert.Equal(t, staticIndex, string(res.Body), p)
		assert.Equal(t, "text/html; charset=utf-8", res.Header.Get("Content-Type"), p)
		assert.Equal(t, "no-cache", res.Header.Get("Cache-Control"), "%s: the index is never cached", p)
	}
}

func TestStaticMissingAssetIs404(t *testing.T) {
	t.Parallel()
	h := staticHarness(t)
	for _, p := range []string{"/missing.js", "/assets/app-000000.js", "/foo/bar.v2", "/.env", "/assets/missing.css"} {
		requireRouteNotFound(t, staticGet(h, http.MethodGet, p), p)
	}
}

func TestStaticNeverLeavesTheDirectory(t *testing.T) {
	t.Parallel()
	h := staticHarness(t)
	for _, p := range []string{
		"/../secret.txt",
		"/%2e%2e/secret.txt",
		"/%2E%2E/secret.txt",
		"/assets/%2e%2e/%2e%2e/secret.txt",
		"/..%2fsecret.txt",
		"/assets/..%2f..%2fsecret.txt",
		"/%2e%2e/site/index.html", // it would come back in, but it left first
		"/..",
		"/%2e%2e",
		"/%2e%2e/", // a fallback-looking path still may not climb
		"/leak.txt",
		"/leak2",
	} {
		res := staticGet(h, http.MethodGet, p)
		assert.NotContains(t, string(res.Body), "TOP SECRET", p)
		if p == "/leak2" {
			// A link that leaves the directory is no file: its name has no ".", so the
			// client-side route fallback answers.
			assert.Equal(t, staticIndex, string(res.Body))
			continue
		}
		requireRouteNotFound(t, res, p)
	}
}

func TestStaticNeverServesReservedPaths(t *testing.T) {
	t.Parallel()
	h := staticHarness(t)

	// The API wins over a file of the same name.
	res := h.get("/v1/config")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, "application/json", res.Header.Get("Content-Type"))
	assert.Contains(t, res.Object(t), "selfServeLimit")
	assert.Equal(t, "no-store", res.Header.Get("Cache-Control"))

	res = h.get("/healthz")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, map[string]any{"status": "ok"}, res.Object(t))

	// Unknown paths under the prefix are the API's 404, never a file and never the index.
	for _, p := range []string{
		"/v1/static-only.js", "/v1/unknown", "/v1/nope/a/b", "/v1", "/v1/",
		"/readyz/x.js", "/healthz/extra", "/mcp/session",
		"/foo/../v1/static-only.js", "/v1/../index.html",
	} {
		res := staticGet(h, http.MethodGet, p)
		requireRouteNotFound(t, res, p)
	}
	// /mcp is the MCP server, which takes POST only.
	res = staticGet(h, http.MethodGet, "/mcp")
	assert.Equal(t, http.StatusMethodNotAllowed, res.Status, "%s", res.Body)
	assert.Equal(t, "METHOD_NOT_ALLOWED", res.Object(t)["code"])
	// /docs is gtc's API reference, and below it and /swagger there is nothing: neither
	// the directory's file nor the index.
	res = staticGet(h, http.MethodGet, "/docs")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, string(res.Body), "API reference")
	assert.NotContains(t, string(res.Body), "static docs")
	for _, p := range []string{"/docs/index.html", "/swagger"} {
		requireRouteNotFound(t, staticGet(h, http.MethodGet, p), p)
	}
}

// Static paths take GET and HEAD only. Other methods get 404 ROUTE_NOT_FOUND, not 405:
// the routing rules give the SPA only GET and HEAD on other paths and make everything beyond
// that 404, and a 405 would claim that every path exists (the index fallback makes every
// path "found" for GET), which no client can act on. Known API paths keep their 405.
func TestStaticOtherMethods(t *testing.T) {
	t.Parallel()
	h := staticHarness(t)
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		for _, p := range []string{"/index.html", "/assets/app-3f2a9c.js", "/foo/bar", "/"} {
			res := h.do(req{Method: m, Path: p, Body: `{}`, NoCheck: true})
			requireRouteNotFound(t, res, m+" "+p)
			assert.Empty(t, res.Header.Get("Allow"), m+" "+p)
		}
	}
	res := h.do(req{Method: http.MethodOptions, Path: "/foo", NoCheck: true})
	requireRouteNotFound(t, res, "OPTIONS /foo")

	// The static handler does not swallow the 405 of known paths.
	res = h.do(req{Method: http.MethodPost, Path: "/healthz", NoCheck: true})
	require.Equal(t, http.StatusMethodNotAllowed, res.Status, string(res.Body))
	assert.Equal(t, "GET", res.Header.Get("Allow"))
	res = h.do(req{Method: http.MethodPatch, Path: "/v1/ground-truths", NoCheck: true})
	require.Equal(t, http.StatusMethodNotAllowed, res.Status, string(res.Body))
	assert.Equal(t, "METHOD_NOT_ALLOWED", res.Object(t)["code"])
}

func TestStaticNeedsIdentityInEasyAuth(t *testing.T) {
	t.Parallel()
	h := staticHarness(t, func(o *api.Options) { o.Auth = api.AuthOptions{EasyAuth: true} })
	res := staticGet(h, http.MethodGet, "/foo/bar")
	require.Equal(t, http.StatusUnauthorized, res.Status)
	assert.Equal(t, "UNAUTHENTICATED", res.Object(t)["code"])
	res = staticGet(h, http.MethodGet, "/assets/app-3f2a9c.js")
	require.Equal(t, http.StatusUnauthorized, res.Status)

	principal := base64.StdEncoding.EncodeToString([]byte(`{"claims":[{"typ":"preferred_username","val":"alice@example.com"}]}`))
	res = h.do(req{Method: http.MethodGet, Path: "/foo/bar", Header: map[string]string{"X-MS-CLIENT-PRINCIPAL": principal}, NoCheck: true})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	assert.Equal(t, staticIndex, string(res.Body))
}

func TestStaticUnsetServesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	require.NoError(t, h.api.EnableStatic(api.StaticOptions{}))
	for _, p := range []string{"/index.html", "/foo/bar"} {
		requireRouteNotFound(t, staticGet(h, http.MethodGet, p), p)
	}
	requireFrontDoor(t, staticGet(h, http.MethodGet, "/"), "/ without a frontend")
}

// requireFrontDoor checks that res is gtc's own front door, not a file.
func requireFrontDoor(t *testing.T, res *response, what string) {
	t.Helper()
	require.Equal(t, http.StatusOK, res.Status, "%s: %s", what, res.Body)
	assert.Equal(t, "text/html; charset=utf-8", res.Header.Get("Content-Type"), what)
	assert.Contains(t, string(res.Body), "<title>gtc — Ground Truth Curator</title>", what)
}

func TestStaticStartupCheck(t *testing.T) {
	t.Parallel()
	dir := staticSite(t)
	require.NoError(t, api.ValidateStatic(api.StaticOptions{}), "unset: nothing to check")
	require.NoError(t, api.ValidateStatic(api.StaticOptions{Dir: dir}))
	require.NoError(t, api.ValidateStatic(api.StaticOptions{Dir: dir, Index: "docs/index.html"}))

	err := api.ValidateStatic(api.StaticOptions{Dir: dir, Index: "app.html"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not contain GTC_FRONTEND_INDEX=app.html")
	err = api.ValidateStatic(api.StaticOptions{Dir: dir, Index: "assets"})
	require.ErrorContains(t, err, "not a regular file")
	err = api.ValidateStatic(api.StaticOptions{Dir: dir, Index: "../secret.txt"})
	require.Error(t, err, "the index may not lie outside the directory")
	err = api.ValidateStatic(api.StaticOptions{Dir: filepath.Join(dir, "nope")})
	require.ErrorContains(t, err, "GTC_FRONTEND_DIR=")
	err = api.ValidateStatic(api.StaticOptions{Dir: filepath.Join(dir, "index.html")})
	require.Error(t, err, "a file is not a directory")

	h := newHarness(t)
	require.Error(t, h.api.EnableStatic(api.StaticOptions{Dir: t.TempDir()}), "an empty directory has no index")
	requireFrontDoor(t, staticGet(h, http.MethodGet, "/"), "/ after a refused EnableStatic")
}

func TestStaticCustomIndex(t *testing.T) {
	t.Parallel()
	dir := staticSite(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "app.html"), []byte("custom index"), 0o644))
	h := newHarness(t)
	require.NoError(t, h.api.EnableStatic(api.StaticOptions{Dir: dir, Index: "app.html", CacheSeconds: 0}))
	res := staticGet(h, http.MethodGet, "/route")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, "custom index", string(res.Body))
	assert.Equal(t, "text/html; charset=utf-8", res.Header.Get("Content-Type"))
	assert.Equal(t, "no-cache", res.Header.Get("Cache-Control"))
	res = staticGet(h, http.MethodGet, "/app.html")
	assert.Equal(t, "no-cache", res.Header.Get("Cache-Control"))
	res = staticGet(h, http.MethodGet, "/robots.txt")
	assert.Equal(t, "public, max-age=0", res.Header.Get("Cache-Control"))
	res = staticGet(h, http.MethodGet, "/index.html")
	assert.Equal(t, "text/html; charset=utf-8", res.Header.Get("Content-Type"))
	assert.Equal(t, "public, max-age=0", res.Header.Get("Cache-Control"), "index.html is an ordinary file when it is not the index")
}
