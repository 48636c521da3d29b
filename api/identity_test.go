// Left out of the fuzz builds with the rest of package api_test (see harness_test.go).

//go:build !fuzzing

package api_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/api"
)

// TestEasyAuthRoleClaims: a principal acts with the highest role its role claims map to;
// without a mapped claim it gets the default role; a default of none refuses it everything.
func TestEasyAuthRoleClaims(t *testing.T) {
	t.Parallel()
	mapping := map[string]gtc.Role{"gtc.admin": gtc.RoleAdmin, "gtc.curator": gtc.RoleCurator, "gtc.reader": gtc.RoleViewer}
	principal := func(email string, roles ...string) map[string]string {
		var extra [][2]string
		for _, r := range roles {
			extra = append(extra, [2]string{"roles", r})
		}
		return map[string]string{"X-MS-CLIENT-PRINCIPAL": principalHeader(map[string]string{"email": email}, extra...)}
	}
	for _, tc := range []struct {
		name        string
		defaultRole string
		header      map[string]string
		want        gtc.Role
	}{
		{"admin claim, case as Entra sends it", "", principal("ada@example.com", "GTC.Admin"), gtc.RoleAdmin},
		{"highest of several claims", "", principal("cy@example.com", "GTC.Reader", "GTC.Curator"), gtc.RoleCurator},
		{"reader claim", "", principal("vi@example.com", "GTC.Reader"), gtc.RoleViewer},
		{"a role name that the mapping does not list", "", principal("eve@example.com", "admin"), gtc.RoleCurator},
		{"no claim: the default role, curator", "", principal("cu@example.com"), gtc.RoleCurator},
		{"no claim, default viewer", "viewer", principal("cu@example.com"), gtc.RoleViewer},
		{"no claim, default none", "none", principal("cu@example.com"), gtc.RoleNone},
		{"reader claim, default none", "none", principal("vi@example.com", "GTC.Reader"), gtc.RoleViewer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			caller, err := api.CallerResolver(api.AuthOptions{EasyAuth: true, RoleClaims: mapping, DefaultRole: tc.defaultRole})(httpHeader(tc.header))
			require.NoError(t, err)
			assert.Equal(t, tc.want, caller.Role)
		})
	}

	// Through the server: the mapped admin deletes a dataset, the mapped reader may not.
	h := newHarness(t, func(o *api.Options) {
		o.Auth = api.AuthOptions{EasyAuth: true, RoleClaims: mapping, DefaultRole: "none"}
	})
	res := h.do(req{Method: http.MethodDelete, Path: "/v1/datasets/none", Header: principal("vi@example.com", "GTC.Reader")})
	require.Equal(t, http.StatusForbidden, res.Status)
	assert.Equal(t, "Forbidden: DELETE /v1/datasets/{datasetName} needs the admin role; you have the viewer role", res.Object(t)["detail"])
	res = h.do(req{Method: http.MethodGet, Path: "/v1/datasets", Header: principal("nobody@example.com")})
	require.Equal(t, http.StatusForbidden, res.Status)
	assert.Equal(t, "Forbidden: GET /v1/datasets needs the viewer role; you have no role", res.Object(t)["detail"])
	res = h.do(req{Method: http.MethodDelete, Path: "/v1/datasets/none", Header: principal("ada@example.com", "GTC.Admin")})
	assert.Equal(t, http.StatusOK, res.Status, string(res.Body))
}

func httpHeader(m map[string]string) http.Header {
	h := http.Header{}
	for k, v := range m {
		h.Set(k, v)
	}
	return h
}

// TestDevModeRoles: in dev mode the configured roles apply unless X-User-Roles names others;
// the values go through the same mapping as Easy Auth claims.
func TestDevModeRoles(t *testing.T) {
	t.Parallel()
	resolve := func(a api.AuthOptions, h map[string]string) gtc.Caller {
		c, err := api.CallerResolver(a)(httpHeader(h))
		require.NoError(t, err)
		return c
	}
	assert.Equal(t, gtc.RoleAdmin, resolve(api.AuthOptions{}, nil).Role, "dev mode's default is admin")
	assert.Equal(t, gtc.RoleCurator, resolve(api.AuthOptions{DevUserRoles: []string{"curator"}}, nil).Role)
	assert.Equal(t, gtc.RoleViewer, resolve(api.AuthOptions{}, map[string]string{"X-User-Roles": "Viewer"}).Role)
	assert.Equal(t, gtc.RoleAdmin, resolve(api.AuthOptions{}, map[string]string{"X-User-Roles": "team-lead"}).Role,
		"team-lead maps to admin by default")
	assert.Equal(t, gtc.RoleCurator, resolve(api.AuthOptions{}, map[string]string{"X-User-Roles": "intern"}).Role,
		"an unmapped value gets the default role")
}

// TestEasyAuthIdentityRefusals: e-mail domains compare in ASCII only, so look-alike
// characters that Unicode case folding equates never pass; a principal that names only a
// display name is refused unless allowed.
func TestEasyAuthIdentityRefusals(t *testing.T) {
	t.Parallel()
	resolve := func(a api.AuthOptions, claims map[string]string) (gtc.Caller, error) {
		return api.CallerResolver(a)(http.Header{"X-Ms-Client-Principal": {principalHeader(claims)}})
	}
	domains := api.AuthOptions{EasyAuth: true, AllowedEmailDomains: []string{"kontoso.com"}}
	for name, email := range map[string]string{
		"Kelvin sign and long s": "a@\u212Aonto\u017Fo.com",
		"Kelvin sign only":       "a@\u212Aontoso.com",
		"full-width letters":     "a@\uff4bontoso.com",
		"dotless i look-alike":   "a@kontoso.com\u0131",
	} {
		_, err := resolve(domains, map[string]string{"email": email})
		assert.Equal(t, gtc.CodeForbidden, gtc.ErrorCode(err), name)
	}
	c, err := resolve(domains, map[string]string{"email": "Ann@KONTOSO.com"})
	require.NoError(t, err, "ASCII case does not matter")
	assert.Equal(t, "Ann@KONTOSO.com", c.UserID)

	oids := api.AuthOptions{EasyAuth: true, AllowedObjectIDs: []string{"abc-K"}}
	_, err = resolve(oids, map[string]string{"oid": "ABC-\u212A"})
	assert.Equal(t, gtc.CodeForbidden, gtc.ErrorCode(err), "object ids compare in ASCII too")
	_, err = resolve(oids, map[string]string{"oid": "ABC-k"})
	assert.NoError(t, err)

	// A display name is whatever its owner typed; with an @ it is still not an e-mail.
	_, err = resolve(api.AuthOptions{EasyAuth: true}, map[string]string{"name": "ceo@kontoso.com"})
	require.Error(t, err)
	e, _ := gtc.AsError(err)
	assert.Equal(t, gtc.CodeForbidden, e.Code)
	assert.Contains(t, e.Message, "display name")
	_, err = resolve(api.AuthOptions{EasyAuth: true, AllowedEmailDomains: []string{"kontoso.com"}, AllowNameOnly: true},
		map[string]string{"name": "ceo@kontoso.com"})
	assert.Equal(t, gtc.CodeForbidden, gtc.ErrorCode(err), "allowed names still do not pass an e-mail domain allow-list")
	c, err = resolve(api.AuthOptions{EasyAuth: true, AllowNameOnly: true}, map[string]string{"name": "Casey"})
	require.NoError(t, err, "GTC_EZAUTH_ALLOW_NAME_ONLY=true accepts it")
	assert.Equal(t, "Casey", c.UserID)
	c, err = resolve(api.AuthOptions{EasyAuth: true}, map[string]string{"name": "Casey", "oid": "oid-7"})
	require.NoError(t, err, "a display name beside an object id is fine")
	assert.Equal(t, "oid-7", c.UserID)
}

// TestAnonymousPathsOnlyRead: a path opened to anonymous callers lets them read and never
// write, and a signed-in caller there keeps its own identity and role.
func TestAnonymousPathsOnlyRead(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(o *api.Options) {
		o.Auth = api.AuthOptions{EasyAuth: true, AnonymousPaths: []string{"/v1/config", "/v1/tags"}}
	})
	assert.Equal(t, http.StatusOK, h.get("/v1/config").Status)
	assert.Equal(t, http.StatusOK, h.get("/v1/tags").Status)
	before := h.snapshot()
	res := h.do(req{Method: http.MethodPost, Path: "/v1/tags", Body: map[string]any{"tags": []string{"custom:anon"}}})
	require.Equal(t, http.StatusForbidden, res.Status)
	assert.Equal(t, "Forbidden: POST /v1/tags needs the curator role; you have the viewer role", res.Object(t)["detail"])
	assert.Equal(t, before, h.snapshot())
	res = h.do(req{Method: http.MethodPost, Path: "/v1/tags", Body: map[string]any{"tags": []string{"custom:signed-in"}}, Header: easyWho(alice)})
	assert.Equal(t, http.StatusOK, res.Status, "a signed-in curator on an anonymous path is still a curator: %s", res.Body)
}

// TestSameOriginWritesWork: the curator frontend's own requests (same origin, as a browser
// marks them) pass the cross-site check; only a read may come from another site.
func TestSameOriginWritesWork(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.importItems(basicItem("so", "1"))
	it := h.item("so", "1")
	origin := h.srv.URL
	res := h.do(req{Method: http.MethodPut, Path: itemPath(h.key("so", "1")), Body: map[string]any{"comment": "same origin"},
		Header: map[string]string{"If-Match": it["_etag"].(string), "Origin": origin, "Sec-Fetch-Site": "same-origin"}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	res = h.do(req{Method: http.MethodPut, Path: itemPath(h.key("so", "1")), Body: map[string]any{"comment": "origin only"},
		Header: map[string]string{"If-Match": res.Object(t)["_etag"].(string), "Origin": origin}})
	require.Equal(t, http.StatusOK, res.Status, "a browser without Sec-Fetch-Site, same Origin: %s", res.Body)
	res = h.do(req{Method: http.MethodGet, Path: "/v1/datasets", Header: map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://other.example"}})
	assert.Equal(t, http.StatusOK, res.Status, "reads are not state-changing")
}

// TestTrickledBodiesAreCut: 200 connections that send their headers, then a byte of body at
// a time, are each answered 408 and closed once GTC_REQUEST_TIMEOUT has passed; none is
// left holding the server.
func TestTrickledBodiesAreCut(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	h := newHarness(t, func(o *api.Options) { o.RequestTimeout = timeout })
	addr := strings.TrimPrefix(h.srv.URL, "http://")
	const conns = 200
	type outcome struct {
		status  string
		elapsed time.Duration
		err     error
	}
	results := make([]outcome, conns)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				results[i] = outcome{err: err}
				return
			}
			defer c.Close()
			fmt.Fprintf(c, "PUT /v1/ground-truths/d/b/i HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", addr)
			stop := make(chan struct{})
			go func() { // a byte every 100 ms for as long as the server reads
				tick := time.NewTicker(100 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
						if _, err := c.Write([]byte(" ")); err != nil {
							return
						}
					}
				}
			}()
			defer close(stop)
			_ = c.SetReadDeadline(time.Now().Add(20 * timeout))
			line, err := bufio.NewReader(c).ReadString('\n')
			results[i] = outcome{status: strings.TrimSpace(line), elapsed: time.Since(start), err: err}
		}()
	}
	wg.Wait()
	var last time.Duration
	for i, r := range results {
		require.NoError(t, r.err, "connection %d was answered before the client gave up", i)
		assert.Equal(t, "HTTP/1.1 408 Request Timeout", r.status, "connection %d", i)
		assert.GreaterOrEqual(t, r.elapsed, timeout, "connection %d was not cut before its deadline", i)
		last = max(last, r.elapsed)
	}
	t.Logf("%d trickling connections answered 408 by %v after the first was opened (timeout %v)", conns, last, timeout)
}

// The 408 body is the product's error body.
func TestTrickledBodyAnswer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(o *api.Options) { o.RequestTimeout = 300 * time.Millisecond })
	addr := strings.TrimPrefix(h.srv.URL, "http://")
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	fmt.Fprintf(c, "POST /v1/tags HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{\"tags\":", addr)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	defer res.Body.Close()
	assert.Equal(t, http.StatusRequestTimeout, res.StatusCode)
	assert.True(t, res.Close, "the server closes the connection")
	var body map[string]any
	require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
	assert.Equal(t, "REQUEST_TIMEOUT", body["code"])
	assert.Equal(t, "The request body did not arrive within 300ms (GTC_REQUEST_TIMEOUT)", body["detail"])
}
