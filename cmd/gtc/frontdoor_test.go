package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/sqlite"
)

// seedByStatus stores items into the SQLite file of data: per dataset, the given number of
// items of each status.
func seedByStatus(t *testing.T, data string, counts map[string]map[gtc.Status]int) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(data, "gtc.db")})
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	now := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	for ds, byStatus := range counts {
		for status, n := range byStatus {
			for i := range n {
				it := gtc.NewItem(ds, fmt.Sprintf("%s-%d", status, i))
				it.Bucket = "6f1c3d2e-0000-4000-8000-000000000001"
				it.History = []gtc.HistoryEntry{{Role: "user", Msg: "Question?"}, {Role: "assistant", Msg: "Answer."}}
				it.Status, it.UpdatedAt = status, now
				if status == gtc.StatusApproved {
					it.ReviewedAt = &now
				}
				_, err := st.Items().Create(ctx, it)
				require.NoError(t, err)
			}
		}
	}
}

// TestFrontDoorBrowser opens gtc's front door (/) and its API reference (/docs) from the real
// binary, with no frontend configured, in headless Chromium as a viewer, and checks what a
// person sees: the title, the counts of the seeded items, the links (followed), every
// operation of the served OpenAPI document in the reference, and a page whose own style
// sheet is applied under its Content-Security-Policy with nothing refused.
func TestFrontDoorBrowser(t *testing.T) {
	browser := findChromium()
	if browser == "" {
		t.Skip("browser test skipped: Chromium is not installed (apt-get install chromium, or set GTC_TEST_CHROMIUM)")
	}
	data := t.TempDir()
	seeded := map[string]map[gtc.Status]int{
		"support":  {gtc.StatusDraft: 3, gtc.StatusApproved: 2, gtc.StatusSkipped: 1, gtc.StatusDeleted: 1},
		"billing":  {gtc.StatusDraft: 1, gtc.StatusApproved: 4},
		"archived": {gtc.StatusDeleted: 2},
	}
	seedByStatus(t, data, seeded)
	s := startServer(t, env(data,
		"GTC_DEV_USER_ID=reader@example.com",
		// The least role that may open the pages.
		"GTC_DEV_USER_ROLES=viewer",
		"GTC_SQLITE_SYNCHRONOUS=NORMAL",
	))

	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromiumOptions(t, browser)...)
	defer cancelAlloc()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	var mu sync.Mutex
	var console []string
	messages := chromedp.Console(bctx) // starts the browser
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			mu.Lock()
			console = append(console, m.String())
			mu.Unlock()
		}
	}()
	ctx, cancelT := context.WithTimeout(bctx, 2*time.Minute)
	defer cancelT()
	eval := func(what, js string) any {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[any](js))
		require.NoError(t, err, what)
		return v
	}
	waitFor := func(js string) {
		t.Helper()
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(30*time.Second)))
		require.NoError(t, err, "waiting for %s", js)
	}

	// The front door.
	res, err := chromedp.Run(ctx, chromedp.NavigateResponse(s.base+"/"))
	require.NoError(t, err)
	require.EqualValues(t, http.StatusOK, res.Status)
	assert.Equal(t, "text/html; charset=utf-8", res.Headers["Content-Type"])
	assert.Contains(t, res.Headers["Content-Security-Policy"], "default-src 'none'")
	title, err := chromedp.Run(ctx, chromedp.Title())
	require.NoError(t, err)
	assert.Equal(t, "gtc — Ground Truth Curator", title)
	about, err := chromedp.Run(ctx, chromedp.Text("#about"))
	require.NoError(t, err)
	assert.Contains(t, about, "curating ground-truth data used to evaluate AI agents and RAG systems")

	counts := eval("counts", `Object.fromEntries([...document.querySelectorAll("#counts li")].map(li =>
		[li.id, Number(li.querySelector(".n").innerText)]))`)
	want := map[string]any{"count-datasets": float64(len(seeded))}
	var total int
	for _, status := range gtc.Statuses {
		var n int
		for _, byStatus := range seeded {
			n += byStatus[status]
		}
		want["count-"+string(status)] = float64(n)
		total += n
	}
	want["count-total"] = float64(total)
	assert.Equal(t, want, counts, "the counts a person reads")
	// The API's own figures agree.
	stats := getJSON(t, s.base+"/v1/ground-truths/stats")
	assert.Equal(t, stats["approved"], counts.(map[string]any)["count-approved"])

	// The page's style sheet is applied: its hash is in the policy.
	display := eval("style", `getComputedStyle(document.getElementById("counts")).display`)
	assert.Equal(t, "flex", display, "the inline style sheet is applied")

	// Every link of the site answers, as this viewer.
	hrefs := eval("links", `[...document.querySelectorAll("a")].map(a => a.getAttribute("href"))`)
	var local []string
	for _, h := range hrefs.([]any) {
		if href := h.(string); strings.HasPrefix(href, "/") {
			local = append(local, href)
		}
	}
	for _, want := range []string{"/docs", "/v1/openapi.json", "/healthz", "/readyz", "/metrics"} {
		assert.Contains(t, local, want)
	}
	for _, href := range local {
		r, err := http.Get(s.base + href)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
		assert.Equal(t, http.StatusOK, r.StatusCode, "the link %s", href)
	}
	commands, err := chromedp.Run(ctx, chromedp.Text("#frontend-commands"))
	require.NoError(t, err)
	assert.Contains(t, commands, "npm run build")
	assert.Contains(t, commands, `GTC_FRONTEND_DIR="$PWD/dist" gtc serve`)

	// Follow the link to the API reference, as a person would.
	res, err = chromedp.RunResponse(ctx, chromedp.Click(`a[href="/docs"]`))
	require.NoError(t, err)
	require.EqualValues(t, http.StatusOK, res.Status)
	assert.Equal(t, s.base+"/docs", res.URL)
	title, err = chromedp.Run(ctx, chromedp.Title())
	require.NoError(t, err)
	assert.Equal(t, "Ground Truth Curator — API reference", title)

	// Every operation of the served document is there, and no other.
	r, err := http.Get(s.base + "/v1/openapi.json")
	require.NoError(t, err)
	raw, err := io.ReadAll(r.Body)
	r.Body.Close()
	require.NoError(t, err)
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	require.NoError(t, err)
	var documented []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented = append(documented, method+" "+path)
		}
	}
	slices.Sort(documented)
	shown := eval("operations", `[...document.querySelectorAll("section.op")].map(s =>
		s.querySelector(".method").innerText.trim() + " " + s.querySelector(".path").innerText.trim())`)
	var onPage []string
	for _, op := range shown.([]any) {
		onPage = append(onPage, op.(string))
	}
	slices.Sort(onPage)
	require.NotEmpty(t, documented)
	assert.Equal(t, documented, onPage, "the reference shows every operation of the document")
	// Each section is laid out and visible, with its answers.
	hidden := eval("hidden", `[...document.querySelectorAll("section.op")].filter(s =>
		s.offsetHeight === 0 || s.querySelectorAll("tr.response").length === 0).length`)
	assert.EqualValues(t, 0, hidden)

	// An error answer with its code: deleting a dataset below admin.
	forbidden := eval("403", `(() => {
		const s = [...document.querySelectorAll("section.op")].find(s =>
			s.dataset.method === "DELETE" && s.dataset.path === "/v1/datasets/{datasetName}");
		const row = s && s.querySelector('tr.response[data-status="403"]');
		return row ? row.innerText : "";
	})()`)
	assert.Contains(t, forbidden, "FORBIDDEN")
	delRole := eval("role", `[...document.querySelectorAll("section.op")].find(s =>
		s.dataset.method === "DELETE" && s.dataset.path === "/v1/datasets/{datasetName}").querySelector(".role").innerText`)
	assert.Contains(t, delRole, "needs the admin role")

	// A table-of-contents link jumps to its operation; the home link leads back.
	_, err = chromedp.Run(ctx, chromedp.Click(`nav.toc a[href="#op-listDatasets"]`))
	require.NoError(t, err)
	waitFor(`location.hash === "#op-listDatasets"`)
	res, err = chromedp.RunResponse(ctx, chromedp.Click(`header a[href="/"]`))
	require.NoError(t, err)
	require.EqualValues(t, http.StatusOK, res.Status)
	assert.Equal(t, s.base+"/", res.URL)
	title, err = chromedp.Run(ctx, chromedp.Title())
	require.NoError(t, err)
	assert.Equal(t, "gtc — Ground Truth Curator", title)

	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, console, "the browser refused nothing and logged nothing (a policy violation is logged here)")
	if t.Failed() {
		b, _ := json.MarshalIndent(counts, "", "  ")
		t.Logf("counts seen: %s", b)
	}
}
