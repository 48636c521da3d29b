// Left out of the fuzz builds with the rest of package api_test (see harness_test.go).

//go:build !fuzzing

package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/api"
	"github.com/gtc-dev/gtc/api/openapi"
)

// seedStatuses stores, per dataset, the given numbers of draft, approved, skipped and
// deleted items.
func (h *harness) seedStatuses(counts map[string][4]int) {
	h.t.Helper()
	for ds, n := range counts {
		for s, status := range []gtc.Status{gtc.StatusDraft, gtc.StatusApproved, gtc.StatusSkipped, gtc.StatusDeleted} {
			for i := range n[s] {
				it := gtc.NewItem(ds, fmt.Sprintf("%s-%d", status, i))
				it.Bucket = "6f1c3d2e-0000-4000-8000-000000000001"
				it.History = []gtc.HistoryEntry{{Role: "user", Msg: "Question?"}, {Role: "assistant", Msg: "Answer."}}
				it.Status, it.UpdatedAt = status, t0
				if status == gtc.StatusApproved {
					it.ReviewedAt = &t0
				}
				_, err := h.store.Items().Create(context.Background(), it)
				require.NoError(h.t, err)
			}
		}
	}
}

// page is a parsed HTML answer.
type page struct {
	t    *testing.T
	root *html.Node
}

func parsePage(t *testing.T, res *response) *page {
	t.Helper()
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	root, err := html.Parse(bytes.NewReader(res.Body))
	require.NoError(t, err)
	return &page{t: t, root: root}
}

// find returns every element for which match holds, in document order.
func (p *page) find(match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	for n := range p.root.Descendants() {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, n)
		}
	}
	return out
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, class string) bool {
	return slices.Contains(strings.Fields(attr(n, "class")), class)
}

func text(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// byID returns the element with the id; the test fails when there is none.
func (p *page) byID(id string) *html.Node {
	p.t.Helper()
	got := p.find(func(n *html.Node) bool { return attr(n, "id") == id })
	require.Len(p.t, got, 1, "one element has id %q", id)
	return got[0]
}

// count is the figure of a count box of the front door.
func (p *page) count(id string) int {
	p.t.Helper()
	for n := range p.byID(id).Descendants() {
		if n.Type == html.ElementNode && hasClass(n, "n") {
			v, err := strconv.Atoi(text(n))
			require.NoError(p.t, err)
			return v
		}
	}
	p.t.Fatalf("%s has no figure", id)
	return 0
}

func (p *page) links() []string {
	var out []string
	for _, a := range p.find(func(n *html.Node) bool { return n.Data == "a" }) {
		out = append(out, attr(a, "href"))
	}
	return out
}

func requirePageHeaders(t *testing.T, res *response, what string) {
	t.Helper()
	assert.Equal(t, "text/html; charset=utf-8", res.Header.Get("Content-Type"), what)
	assert.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"), what)
	csp := res.Header.Get("Content-Security-Policy")
	for _, directive := range []string{"default-src 'none'", "img-src 'none'", "frame-ancestors 'none'", "style-src 'sha256-"} {
		assert.Contains(t, csp, directive, what)
	}
	assert.NotContains(t, csp, "script-src", "%s: no script is allowed", what)
	assert.NotContains(t, csp, "unsafe", what)
}

func TestFrontDoorWithoutFrontend(t *testing.T) {
	h := newHarness(t)
	h.seedStatuses(map[string][4]int{"support": {3, 2, 1, 1}, "billing": {1, 4, 0, 0}, "<b>bold</b> & co": {0, 0, 0, 2}})

	res := h.do(req{Method: http.MethodGet, Path: "/", NoCheck: true})
	requirePageHeaders(t, res, "/")
	assert.Equal(t, "no-store", res.Header.Get("Cache-Control"), "the counts are live")
	p := parsePage(t, res)
	assert.Equal(t, "gtc — Ground Truth Curator", text(p.find(func(n *html.Node) bool { return n.Data == "title" })[0]))
	assert.Contains(t, text(p.byID("about")), "a backend for curating ground-truth data used to evaluate AI agents and RAG systems")
	assert.Equal(t, "test-version", text(p.byID("version")))

	assert.Equal(t, 3, p.count("count-datasets"))
	assert.Equal(t, 4, p.count("count-draft"))
	assert.Equal(t, 6, p.count("count-approved"))
	assert.Equal(t, 1, p.count("count-skipped"))
	assert.Equal(t, 3, p.count("count-deleted"))
	assert.Equal(t, 14, p.count("count-total"))
	// The stats route and the dataset list say the same.
	stats := h.get("/v1/ground-truths/stats").Object(t)
	assert.Equal(t, json.Number(strconv.Itoa(p.count("count-approved"))), stats["approved"])
	assert.Equal(t, json.Number(strconv.Itoa(p.count("count-draft"))), stats["draft"])
	assert.Equal(t, json.Number(strconv.Itoa(p.count("count-deleted"))), stats["deleted"])
	assert.Len(t, h.get("/v1/datasets").Array(t), p.count("count-datasets"))

	// A dataset name is shown as text, never as markup.
	assert.Contains(t, string(res.Body), "&lt;b&gt;bold&lt;/b&gt; &amp; co")
	assert.NotContains(t, string(res.Body), "<b>bold</b>")

	links := p.links()
	for _, want := range []string{"/docs", "/v1/openapi.json", "/healthz", "/readyz", "https://github.com/andrewDoing/GroundTruthCurator"} {
		assert.Contains(t, links, want)
	}
	assert.NotContains(t, links, "/metrics", "metrics are off in this server")
	cmds := text(p.byID("frontend-commands"))
	for _, c := range api.FrontendBuildCommands {
		assert.Contains(t, cmds, c)
	}

	// HEAD: the same headers, no body.
	head := h.do(req{Method: http.MethodHead, Path: "/", NoCheck: true})
	require.Equal(t, http.StatusOK, head.Status)
	requirePageHeaders(t, head, "HEAD /")
	assert.Empty(t, head.Body)
	assert.Equal(t, strconv.Itoa(len(res.Body)), head.Header.Get("Content-Length"))

	// The page is read-only: other methods find nothing there.
	post := h.do(req{Method: http.MethodPost, Path: "/", Body: `{}`, NoCheck: true})
	requireRouteNotFound(t, post, "POST /")

	// With metrics served, the page links them.
	hm := newHarness(t, func(o *api.Options) { o.Metrics = http.NotFoundHandler() })
	assert.Contains(t, parsePage(t, hm.do(req{Method: http.MethodGet, Path: "/", NoCheck: true})).links(), "/metrics")
}

// failingDatasets is an item store whose dataset list cannot be read.
type failingDatasets struct{ gtc.ItemStore }

func (failingDatasets) Datasets(context.Context) ([]string, error) {
	return nil, fmt.Errorf("disk gone: %w", gtc.ErrUnavailable)
}

func TestFrontDoorWithoutTheStore(t *testing.T) {
	h := newHarnessWith(t, func(d *gtc.CuratorDeps) {
		d.Store = itemsStore{Store: d.Store, items: failingDatasets{d.Store.Items()}}
	})
	p := parsePage(t, h.do(req{Method: http.MethodGet, Path: "/", NoCheck: true}))
	assert.Contains(t, text(p.byID("counts-unavailable")), "The counts are unavailable")
	assert.Empty(t, p.find(func(n *html.Node) bool { return attr(n, "id") == "counts" }))
	assert.NotContains(t, text(p.root), "disk gone", "the store's error is logged, not shown")
	assert.Contains(t, p.links(), "/docs", "the rest of the page is there")
}

func TestFrontDoorIsTheFrontendWhenConfigured(t *testing.T) {
	h := staticHarness(t)
	for _, m := range []string{http.MethodGet, http.MethodHead} {
		res := h.do(req{Method: m, Path: "/", NoCheck: true})
		require.Equal(t, http.StatusOK, res.Status)
		assert.Equal(t, "no-cache", res.Header.Get("Cache-Control"), "the frontend's index, as its files are served")
		assert.Empty(t, res.Header.Get("Content-Security-Policy"), "the frontend's page is not confined like gtc's own")
		if m == http.MethodGet {
			assert.Equal(t, staticIndex, string(res.Body))
		}
	}
	// The API reference stays gtc's own.
	res := h.do(req{Method: http.MethodGet, Path: "/docs", NoCheck: true})
	requirePageHeaders(t, res, "/docs")
	assert.Contains(t, string(res.Body), "API reference")
}

func TestPagesNeedTheViewerRole(t *testing.T) {
	h := newHarness(t, func(o *api.Options) { o.Auth.DefaultRole = "none" })
	for _, path := range []string{"/", "/docs"} {
		res := h.do(req{Method: http.MethodGet, Path: path, Header: roleHeaders("nobody@example.com", "unmapped-claim"), NoCheck: true})
		require.Equal(t, http.StatusForbidden, res.Status, path)
		body := res.Object(t)
		assert.Equal(t, "FORBIDDEN", body["code"])
		assert.Contains(t, body["detail"], "needs the viewer role")
		// HEAD has no body to check, only the status.
		hr, err := http.NewRequest(http.MethodHead, h.srv.URL+path, nil)
		require.NoError(t, err)
		hr.Header.Set("X-User-Roles", "unmapped-claim")
		head, err := http.DefaultClient.Do(hr)
		require.NoError(t, err)
		head.Body.Close()
		assert.Equal(t, http.StatusForbidden, head.StatusCode, "HEAD "+path)

		for _, m := range []string{http.MethodGet, http.MethodHead} {
			res = h.do(req{Method: m, Path: path, Header: roleHeaders("vic@example.com", "viewer"), NoCheck: true})
			assert.Equal(t, http.StatusOK, res.Status, "%s %s as a viewer", m, path)
		}
	}
	ez := newHarness(t, func(o *api.Options) { o.Auth = api.AuthOptions{EasyAuth: true} })
	res := ez.do(req{Method: http.MethodGet, Path: "/", NoCheck: true})
	assert.Equal(t, http.StatusUnauthorized, res.Status, "Easy Auth: a principal is needed, as for the API")
}

func TestDocsListsEveryOperation(t *testing.T) {
	h := newHarness(t)
	res := h.do(req{Method: http.MethodGet, Path: "/docs", NoCheck: true})
	requirePageHeaders(t, res, "/docs")
	assert.Equal(t, "no-cache", res.Header.Get("Cache-Control"))
	p := parsePage(t, res)

	doc, err := openapi3.NewLoader().LoadFromData(openapi.Document("/v1", "test-version").JSON())
	require.NoError(t, err)
	assert.Equal(t, doc.Info.Title+" — API reference", text(p.find(func(n *html.Node) bool { return n.Data == "title" })[0]))

	sections := map[string]*html.Node{}
	for _, s := range p.find(func(n *html.Node) bool { return n.Data == "section" && hasClass(n, "op") }) {
		sections[attr(s, "data-method")+" "+attr(s, "data-path")] = s
	}
	roles := map[string]api.Permission{}
	for _, perm := range api.Permissions() {
		roles[perm.Name] = perm
	}
	var ops int
	for path, item := range doc.Paths.Map() {
		for method, o := range item.Operations() {
			ops++
			name := method + " " + path
			s, ok := sections[name]
			if !assert.True(t, ok, "%s is on the page", name) {
				continue
			}
			st := text(s)
			assert.Contains(t, st, method+" "+path, name)
			assert.Contains(t, st, o.Summary, name)
			if perm := roles[name]; perm.Role != gtc.RoleNone {
				assert.Contains(t, st, "needs the "+perm.Role.String()+" role", name)
			}
			var statuses []string
			for n := range s.Descendants() {
				if n.Type == html.ElementNode && hasClass(n, "response") {
					statuses = append(statuses, attr(n, "data-status"))
				}
			}
			want := o.Responses.Keys()
			slices.Sort(want)
			assert.Equal(t, want, statuses, "%s: every answer, by status", name)
			for _, pr := range o.Parameters {
				assert.Contains(t, st, pr.Value.Name, "%s: parameter %s", name, pr.Value.Name)
			}
		}
	}
	assert.Equal(t, ops, len(sections), "no operation the document lacks")

	// Error answers carry their codes; a dataset delete below admin is FORBIDDEN.
	del := sections["DELETE /v1/datasets/{datasetName}"]
	require.NotNil(t, del)
	var forbidden string
	for n := range del.Descendants() {
		if n.Type == html.ElementNode && hasClass(n, "response") && attr(n, "data-status") == "403" {
			forbidden = text(n)
		}
	}
	assert.Contains(t, forbidden, "FORBIDDEN")
	assert.Contains(t, text(del), "needs the admin role")

	// Request bodies and answers show their schemas resolved: the import body lists the
	// item's keys, and an item's conversation turns show their own keys.
	imp := text(sections["POST /v1/ground-truths"])
	for _, key := range []string{"datasetName", "history", "manualTags"} {
		assert.Contains(t, imp, key)
	}
	var props []string
	for n := range sections["GET /v1/ground-truths/{datasetName}/{bucket}/{item_id}"].Descendants() {
		if n.Type == html.ElementNode && hasClass(n, "prop") {
			props = append(props, text(n))
		}
	}
	assert.Contains(t, props, "history")
	assert.Contains(t, props, "msg", "the conversation turn's keys, two references down")

	// Every component schema has its section.
	for name := range doc.Components.Schemas {
		p.byID("schema-" + name)
	}
	// Text from the document is escaped: a description that writes dataset:<datasetName>.
	assert.Contains(t, string(res.Body), "dataset:&lt;datasetName&gt;")
	assert.NotContains(t, string(res.Body), "dataset:<datasetName>")

	head := h.do(req{Method: http.MethodHead, Path: "/docs", NoCheck: true})
	require.Equal(t, http.StatusOK, head.Status)
	assert.Empty(t, head.Body)
	assert.Equal(t, strconv.Itoa(len(res.Body)), head.Header.Get("Content-Length"))
}

// TestReadmeGivesTheFrontendCommands: the README's frontend section builds the frontend with
// the commands the front door shows.
func TestReadmeGivesTheFrontendCommands(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	want := "```sh\n" + strings.Join(api.FrontendBuildCommands, "\n") + "\n```"
	assert.Contains(t, string(readme), want)
}
