// Left out of the fuzz builds with the rest of package api_test (see harness_test.go).

//go:build !fuzzing

package api_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc/api"
	"github.com/gtc-dev/gtc/api/openapi"
)

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	res := h.get("/healthz")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, map[string]any{"status": "ok"}, res.Object(t))
	assert.Equal(t, "no-store", res.Header.Get("Cache-Control"))

	res = h.get("/readyz")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, map[string]any{"status": "ready", "checks": map[string]any{"store": "ok"}}, res.Object(t))

	h.api.SetDraining()
	res = h.get("/readyz")
	require.Equal(t, http.StatusServiceUnavailable, res.Status)
	assert.Equal(t, map[string]any{"detail": "Server is shutting down", "status": json.Number("503"), "code": "NOT_READY",
		"checks": map[string]any{"store": "error"}}, res.Object(t))

	h2 := newHarness(t)
	require.NoError(t, h2.store.Close())
	res = h2.get("/readyz")
	require.Equal(t, http.StatusServiceUnavailable, res.Status)
	assert.Equal(t, "Store is not reachable", res.Object(t)["detail"])
	res = h2.get("/v1/ground-truths/stats")
	require.Equal(t, http.StatusServiceUnavailable, res.Status, "a store that cannot be reached is a 503: %s", res.Body)
	assert.Equal(t, "STORE_UNAVAILABLE", res.Object(t)["code"])
	assert.NotContains(t, string(res.Body), "sql", "internal errors are not leaked")
	assert.Equal(t, http.StatusOK, h2.get("/healthz").Status, "liveness never touches the store")
}

func TestFrontendConfig(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(o *api.Options) {
		o.Frontend = api.FrontendConfig{RequireReferenceVisit: true, SelfServeLimit: 7, TrustedReferenceDomains: []string{"docs.example.com"}}
	})
	res := h.do(req{Method: http.MethodGet, Path: "/v1/config"})
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, map[string]any{"requireReferenceVisit": true, "requireKeyParagraph": false, "selfServeLimit": json.Number("7"),
		"trustedReferenceDomains": []any{"docs.example.com"}}, res.Object(t))
}

func TestBodyLimitsAndMediaTypes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(o *api.Options) { o.MaxBodyBytes = 2048 })
	h.importItems(basicItem("d", "x"))
	before := h.snapshot()
	big := `[` + strings.Repeat(`{"id":"a","datasetName":"d"},`, 100) + `{"id":"b","datasetName":"d"}]`

	res := h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths", Body: big})
	require.Equal(t, http.StatusRequestEntityTooLarge, res.Status)
	assert.Equal(t, map[string]any{"detail": "Request body exceeds the limit of 2048 bytes", "status": json.Number("413"), "code": "BODY_TOO_LARGE"}, res.Object(t))

	// A chunked body that grows past the limit is refused too.
	hr, err := http.NewRequest(http.MethodPost, h.srv.URL+"/v1/ground-truths", io.MultiReader(strings.NewReader(big)))
	require.NoError(t, err)
	hr.ContentLength = -1
	hr.Header.Set("Content-Type", "application/json")
	raw, err := http.DefaultClient.Do(hr)
	require.NoError(t, err)
	raw.Body.Close()
	assert.Equal(t, http.StatusRequestEntityTooLarge, raw.StatusCode)

	// 413 applies on every route, also those without a body.
	res = h.do(req{Method: http.MethodGet, Path: "/v1/datasets", Body: big})
	assert.Equal(t, http.StatusRequestEntityTooLarge, res.Status)

	res = h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths", Body: `[]`, Header: map[string]string{"Content-Type": "text/plain"}})
	require.Equal(t, http.StatusUnsupportedMediaType, res.Status)
	assert.Equal(t, "UNSUPPORTED_MEDIA_TYPE", res.Object(t)["code"])

	res = h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths", Body: `[]`, Header: map[string]string{"Content-Type": "application/vnd.gtc+json; charset=utf-8"}})
	assert.Equal(t, http.StatusOK, res.Status, "application/*+json is JSON")
	res = h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths", Body: `[]`, NoCT: true})
	assert.Equal(t, http.StatusOK, res.Status, "a body without Content-Type is parsed as JSON")
	res = h.do(req{Method: http.MethodGet, Path: "/v1/datasets", Body: "  \n ", Header: map[string]string{"Content-Type": "text/plain"}})
	assert.Equal(t, http.StatusOK, res.Status, "whitespace is no body, so its media type is not checked")

	res = h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths", Body: " \t "})
	require.Equal(t, http.StatusUnprocessableEntity, res.Status)
	assert.Equal(t, []any{map[string]any{"field": "body", "message": "required"}}, res.Object(t)["errors"])

	res = h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths", Body: `[{"id": "a", "datasetName": "d"`})
	require.Equal(t, http.StatusUnprocessableEntity, res.Status)
	body := res.Object(t)
	assert.Equal(t, "INVALID_JSON", body["code"])
	assert.Equal(t, "body", body["errors"].([]any)[0].(map[string]any)["field"])

	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	h3 := newHarness(t)
	res = h3.do(req{Method: http.MethodPost, Path: "/v1/ground-truths", Body: deep})
	require.Equal(t, http.StatusUnprocessableEntity, res.Status, "deep nesting is refused, not a crash")
	assert.Equal(t, "INVALID_JSON", res.Object(t)["code"])

	res = h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths?approve=maybe", Body: `[]`})
	require.Equal(t, http.StatusUnprocessableEntity, res.Status)
	assert.Equal(t, "Request validation failed: query.approve: expected boolean", res.Object(t)["detail"])
	assert.Equal(t, before, h.snapshot())
}

func TestRoutingRules(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	cases := []struct {
		method, path string
		status       int
		code         string
	}{
		{http.MethodGet, "/v1/nope", 404, "ROUTE_NOT_FOUND"},
		{http.MethodGet, "/v1/datasets/", 404, "ROUTE_NOT_FOUND"},
		{http.MethodGet, "/v1/ground-truths//x/y", 404, "ROUTE_NOT_FOUND"},
		{http.MethodGet, "/nope", 404, "ROUTE_NOT_FOUND"},
		{http.MethodPatch, "/v1/datasets", 405, "METHOD_NOT_ALLOWED"},
		{http.MethodOptions, "/v1/ground-truths", 405, "METHOD_NOT_ALLOWED"},
		{http.MethodPost, "/healthz", 405, "METHOD_NOT_ALLOWED"},
	}
	for _, tc := range cases {
		res := h.do(req{Method: tc.method, Path: tc.path, NoCheck: true})
		require.Equal(t, tc.status, res.Status, tc.method+" "+tc.path)
		assert.Equal(t, tc.code, res.Object(t)["code"], tc.method+" "+tc.path)
		if tc.status == 405 {
			assert.NotEmpty(t, res.Header.Get("Allow"), "405 lists the allowed methods")
			assert.NotContains(t, res.Header.Get("Allow"), "OPTIONS")
		}
		assert.Empty(t, res.Header.Get("Access-Control-Allow-Origin"), "no CORS headers")
	}
	res := h.do(req{Method: http.MethodGet, Path: "/v1/nope", NoCheck: true})
	assert.Equal(t, "Not Found", res.Object(t)["detail"])
	allow := h.do(req{Method: http.MethodPatch, Path: "/v1/ground-truths", NoCheck: true}).Header.Get("Allow")
	assert.Equal(t, []string{"GET", "POST"}, splitSorted(allow))
}

func splitSorted(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

func TestRequestIDAndHeaders(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	res := h.do(req{Method: http.MethodGet, Path: "/v1/datasets", Header: map[string]string{"X-Request-Id": "abc-123"}})
	assert.Equal(t, "abc-123", res.Header.Get("X-Request-Id"))
	res = h.do(req{Method: http.MethodGet, Path: "/v1/datasets", Header: map[string]string{"X-Request-Id": "bad id with spaces"}})
	assert.NotEqual(t, "bad id with spaces", res.Header.Get("X-Request-Id"))
	assert.Equal(t, "no-store", res.Header.Get("Cache-Control"))
	assert.Equal(t, "application/json", res.Header.Get("Content-Type"))
	assert.Empty(t, res.Header.Get("ETag"), "lists have no ETag header")
}

func TestDevIdentity(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(o *api.Options) { o.Auth.DevUserID = "dev-default" })
	h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths", Body: []any{basicItem("d", "1")}})
	assert.Equal(t, "dev-default", h.item("d", "1")["createdBy"], "without X-User-Id the default user applies")
	h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths", Body: []any{basicItem("d", "2")}, Header: map[string]string{"X-User-Id": "  carol  "}})
	assert.Equal(t, "carol", h.item("d", "2")["createdBy"])
	res := h.do(req{Method: http.MethodGet, Path: "/v1/datasets", Header: map[string]string{"X-User-Id": strings.Repeat("u", 257)}})
	require.Equal(t, http.StatusUnprocessableEntity, res.Status)
	assert.Equal(t, []any{map[string]any{"field": "header.X-User-Id", "message": "must be at most 256 characters"}}, res.Object(t)["errors"])
}

func principalHeader(claims map[string]string, extra ...[2]string) string {
	var cl []map[string]string
	for k, v := range claims {
		cl = append(cl, map[string]string{"typ": k, "val": v})
	}
	for _, e := range extra {
		cl = append(cl, map[string]string{"typ": e[0], "val": e[1]})
	}
	b, _ := json.Marshal(map[string]any{"auth_typ": "aad", "claims": cl})
	return base64.RawURLEncoding.EncodeToString(b)
}

func TestEasyAuthIdentity(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(o *api.Options) {
		o.Auth = api.AuthOptions{EasyAuth: true, AllowedEmailDomains: []string{"example.com"}, AllowedObjectIDs: []string{"OID-OK"}}
	})
	res := h.do(req{Method: http.MethodGet, Path: "/v1/datasets", NoCheck: true})
	require.Equal(t, http.StatusUnauthorized, res.Status)
	assert.Equal(t, map[string]any{"detail": "Unauthorized", "status": json.Number("401"), "code": "UNAUTHENTICATED"}, res.Object(t))
	res = h.do(req{Method: http.MethodGet, Path: "/v1/nope", NoCheck: true})
	assert.Equal(t, http.StatusUnauthorized, res.Status, "identity is checked before routing")
	assert.Equal(t, http.StatusOK, h.get("/healthz").Status, "probes stay anonymous")
	assert.Equal(t, http.StatusOK, h.get("/readyz").Status)

	long := principalHeader(map[string]string{"http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress": "Dana@Example.com",
		"http://schemas.microsoft.com/identity/claims/objectidentifier": "oid-1"},
		[2]string{"roles", "Admin"}, [2]string{"http://schemas.microsoft.com/ws/2008/06/identity/claims/role", "Team-Lead"})
	res = h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths", Body: []any{basicItem("d", "1")},
		Header: map[string]string{"X-MS-CLIENT-PRINCIPAL": long, "X-User-Id": "mallory"}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	it := h.do(req{Method: http.MethodGet, Path: itemPath(h.key("d", "1")), Header: map[string]string{"X-MS-CLIENT-PRINCIPAL": long}}).Object(t)
	assert.Equal(t, "Dana@Example.com", it["createdBy"], "long claim URIs are understood; X-User-Id is ignored; case is kept")

	std := base64.StdEncoding.EncodeToString([]byte(`{"claims":[{"typ":"oid","val":"oid-ok"}]}`))
	res = h.do(req{Method: http.MethodGet, Path: "/v1/datasets", Header: map[string]string{"X-MS-CLIENT-PRINCIPAL": std}})
	assert.Equal(t, http.StatusOK, res.Status, "object id allow-list is case-insensitive; standard base64 works")

	for name, hdr := range map[string]map[string]string{
		"subdomain":        {"X-MS-CLIENT-PRINCIPAL": principalHeader(map[string]string{"email": "eve@sub.example.com"})},
		"other domain":     {"X-MS-CLIENT-PRINCIPAL": principalHeader(map[string]string{"preferred_username": "eve@evil.com"})},
		"name-only header": {"X-MS-CLIENT-PRINCIPAL-NAME": "eve@evil.com"},
	} {
		res := h.do(req{Method: http.MethodGet, Path: "/v1/datasets", Header: hdr, NoCheck: true})
		assert.Equal(t, http.StatusForbidden, res.Status, name)
		assert.Equal(t, "FORBIDDEN", res.Object(t)["code"], name)
	}
	res = h.do(req{Method: http.MethodGet, Path: "/v1/datasets", Header: map[string]string{"X-MS-CLIENT-PRINCIPAL-NAME": "ok@example.com"}})
	assert.Equal(t, http.StatusOK, res.Status, "the name header is a fallback; a name with @ is an e-mail")
	res = h.do(req{Method: http.MethodGet, Path: "/v1/datasets", Header: map[string]string{"X-MS-CLIENT-PRINCIPAL": "%%%not-base64", "X-MS-CLIENT-PRINCIPAL-NAME": "ok@example.com"}, NoCheck: true})
	assert.Equal(t, http.StatusUnauthorized, res.Status, "an unreadable principal counts as none, even with the name header")
	res = h.do(req{Method: http.MethodGet, Path: "/v1/datasets", Header: map[string]string{"X-User-Id": "ok@example.com"}, NoCheck: true})
	assert.Equal(t, http.StatusUnauthorized, res.Status, "X-User-Id is not an identity in easyauth mode")
}

func TestEasyAuthAnonymousPaths(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(o *api.Options) {
		o.Auth = api.AuthOptions{EasyAuth: true, AnonymousPaths: []string{"/v1/config"}}
	})
	assert.Equal(t, http.StatusOK, h.get("/v1/config").Status)
	assert.Equal(t, http.StatusUnauthorized, h.do(req{Method: http.MethodGet, Path: "/v1/openapi.json", NoCheck: true}).Status,
		"the document needs a principal like every other path")
}

// TestDocumentMatchesRoutes proves the OpenAPI document and the router agree: every served
// operation is documented and every documented operation is served.
func TestDocumentMatchesRoutes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	served := map[string]bool{}
	for _, r := range h.api.Routes() {
		p := r.Path
		if p == "/mcp" {
			continue // the MCP server is not part of the document
		}
		for _, seg := range strings.Split(p, "/") {
			if strings.HasPrefix(seg, ":") {
				p = strings.Replace(p, seg, "{"+seg[1:]+"}", 1)
			}
		}
		served[r.Method+" "+p] = true
	}
	documented := map[string]bool{}
	for path, methods := range openapi.Document("/v1", "x").Paths() {
		for _, m := range methods {
			documented[m+" "+path] = true
		}
	}
	assert.Equal(t, sortedKeys(documented), sortedKeys(served))

	res := h.get("/v1/openapi.json")
	doc, err := openapi3.NewLoader().LoadFromData(res.Body)
	require.NoError(t, err)
	assert.Equal(t, "3.1.0", doc.OpenAPI)
	assert.Equal(t, "Ground Truth Curator", doc.Info.Title)
	assert.Equal(t, "test-version", doc.Info.Version)
	assert.True(t, bytes.HasPrefix(res.Body, []byte("{")))
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
