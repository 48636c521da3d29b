package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// chromiumPaths are where Debian's and Google's packages put the browser.
var chromiumPaths = []string{"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"}

// findChromium returns the browser to drive: GTC_TEST_CHROMIUM, else the first installed
// one of chromiumPaths, else "".
func findChromium() string {
	if p := os.Getenv("GTC_TEST_CHROMIUM"); p != "" {
		return p // an explicit choice: a wrong path fails the test instead of skipping it
	}
	for _, p := range chromiumPaths {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	return ""
}

// e2eStep is one line of the report that testdata/e2e/app.js writes.
type e2eStep struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// TestE2EBrowser serves testdata/e2e as the SPA (GTC_FRONTEND_DIR) from the real binary and
// opens it in headless Chromium. The page makes the curator frontend's calls with fetch,
// from the same origin, and reports each step; the test fails with the steps that failed.
func TestE2EBrowser(t *testing.T) {
	site, err := filepath.Abs(filepath.Join("testdata", "e2e"))
	require.NoError(t, err)
	data := t.TempDir()
	environ := env(data,
		"GTC_FRONTEND_DIR="+site,
		"GTC_FRONTEND_CACHE_SECONDS=600",
		"GTC_DEV_USER_ID=e2e-default@example.com",
		// The page acts as a curator, as most people using the frontend do.
		"GTC_DEV_USER_ROLES=curator",
		"GTC_SQLITE_SYNCHRONOUS=NORMAL",
	)
	// A clear message while the settings are not wired, instead of a server that never
	// becomes ready.
	out, errOut, code := runGTC(t, environ, "serve", "--print-config")
	require.Equal(t, 0, code, "gtc serve refuses the frontend settings:\n%s", errOut)
	require.Contains(t, out, "GTC_FRONTEND_DIR="+site, "GTC_FRONTEND_DIR is not a setting of gtc serve yet")

	s := startServer(t, environ)
	// The page is opened at a client route, so the index fallback serves it.
	pageURL := s.base + "/curate/e2e"
	res, err := http.Get(pageURL)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode,
		"GET /curate/e2e does not serve the index: runServe must call srv.EnableStatic with the GTC_FRONTEND_* settings; got %s", body)
	require.Equal(t, "text/html; charset=utf-8", res.Header.Get("Content-Type"))
	require.Equal(t, "no-cache", res.Header.Get("Cache-Control"))
	res, err = http.Get(s.base + "/app.js")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, "public, max-age=600", res.Header.Get("Cache-Control"), "GTC_FRONTEND_CACHE_SECONDS reaches the server")

	browser := findChromium()
	if browser == "" {
		t.Skip("browser test skipped: Chromium is not installed (apt-get install chromium, or set GTC_TEST_CHROMIUM)")
	}
	_, err = os.Stat(browser)
	require.NoError(t, err, "GTC_TEST_CHROMIUM")
	steps, console := runPage(t, browser, pageURL)
	var failed []string
	for _, st := range steps {
		mark := "ok  "
		if !st.OK {
			mark = "FAIL"
			failed = append(failed, fmt.Sprintf("%s: %s", st.Name, st.Detail))
		}
		t.Logf("%s %-34s %s", mark, st.Name, st.Detail)
	}
	if len(failed) > 0 {
		t.Errorf("%d of %d browser steps failed:\n  %s\nbrowser console:\n  %s", len(failed), len(steps),
			strings.Join(failed, "\n  "), strings.Join(console, "\n  "))
	}
}

// chromiumOptions start browser headless, with a fresh profile and nothing running in the
// background.
func chromiumOptions(t *testing.T, browser string) []chromedp.ExecAllocatorOption {
	return []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(browser),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	}
}

// runPage opens url in a fresh headless Chromium, waits until the page sets its title to
// "done", and returns the page's report and what the page wrote to its console.
func runPage(t *testing.T, browser, url string) ([]e2eStep, []string) {
	t.Helper()
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromiumOptions(t, browser)...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()

	// Subscribing starts the browser; the messages are collected until the context ends.
	var mu sync.Mutex
	var console []string
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if strings.HasPrefix(m.Text, "Failed to load resource") {
				continue // the browser's line for each 4xx answer; the report names them already
			}
			mu.Lock()
			console = append(console, m.String())
			mu.Unlock()
		}
	}()

	tctx, cancelT := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelT()
	err := chromedp.Do(tctx, chromedp.Navigate(url))
	if err == nil {
		_, err = chromedp.Run(tctx, chromedp.Poll[bool](`document.title === "done"`, chromedp.WithPollingTimeout(90*time.Second)))
	}
	if err != nil {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("the page did not finish: %v\nbrowser console:\n  %s", err, strings.Join(console, "\n  "))
	}
	raw, err := chromedp.Run(tctx, chromedp.Evaluate[string](`document.getElementById("report").textContent`))
	require.NoError(t, err)
	var steps []e2eStep
	require.NoError(t, json.Unmarshal([]byte(raw), &steps), "the report is not JSON: %s", raw)
	require.NotEmpty(t, steps, "the page reported no step")

	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	return steps, console
}
