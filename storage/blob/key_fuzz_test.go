package blob

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/gtc-dev/gtc"
)

// recordingTransport answers every request 404 (as the service does for a missing blob or
// container) and records the URLs it was asked for; no request leaves the process.
type recordingTransport struct {
	mu   sync.Mutex
	urls []*url.URL
}

func (r *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	u := *req.URL
	r.urls = append(r.urls, &u)
	r.mu.Unlock()
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	code := "BlobNotFound"
	if req.URL.Query().Get("comp") == "list" {
		code = "ContainerNotFound"
	}
	h := http.Header{}
	h.Set("x-ms-error-code", code)
	return &http.Response{StatusCode: http.StatusNotFound, Status: "404 Not Found", Header: h, Body: http.NoBody, Request: req}, nil
}

func (r *recordingTransport) take() []*url.URL {
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.urls
	r.urls = nil
	return u
}

// FuzzBlobKeys checks the Blob backend's side of the artifact key rules: a key gtc.ValidateKey
// refuses never becomes a request, and a key it accepts names exactly that blob in the
// configured container: the service, which decodes the path once, sees the key verbatim (so a
// literal "%2F" or "%2e%2e" in a key stays literal and cannot turn into a separator or a
// parent segment), and the container and account part of the URL are untouched. List prefixes
// travel in the query and must arrive verbatim too.
func FuzzBlobKeys(f *testing.F) {
	const account, containerName = "devstoreaccount1", "gtc-exports"
	rt := &recordingTransport{}
	s, err := New(Options{
		Container: containerName,
		ConnectionString: "DefaultEndpointsProtocol=http;AccountName=" + account + ";" +
			"AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;" +
			"BlobEndpoint=http://127.0.0.1:9/" + account + ";",
		HTTPClient: &http.Client{Transport: rt},
		Retry:      &policy.RetryOptions{MaxRetries: -1},
	})
	if err != nil {
		f.Fatal(err)
	}
	for _, k := range []string{
		"exports/snapshots/20250102T100000Z/manifest.json", "exports/snapshots/20250102T100000Z/ground-truth-a%2Fb%20c.json",
		"a%2Fb", "%2e%2e/x", "..%2f..%2fetc", "a%252F", "a+b=c@d,e~f", "a%3Fcomp=list", "a%23frag", "%00", "%",
		"../x", "a/../b", "/abs", `a\b`, "a//b", "a\x00b", "é", "a/", "", ".", "..", "?comp=list", "a#b", "a?b",
		strings.Repeat("k", 1025), "exports/snapshots/" + strings.Repeat("s", 255) + "/x",
	} {
		f.Add(k)
	}
	containerPath := "/" + account + "/" + containerName
	f.Fuzz(func(t *testing.T, key string) {
		ctx := context.Background()
		rt.take()
		_, err := s.Stat(ctx, key)
		reqs := rt.take()
		if verr := gtc.ValidateKey(key); verr != nil {
			if !errors.Is(err, gtc.ErrInvalidKey) || len(reqs) != 0 {
				t.Fatalf("Stat(%q): invalid key, yet %v and %d request(s)", key, err, len(reqs))
			}
		} else {
			if !errors.Is(err, gtc.ErrArtifactNotFound) || len(reqs) != 1 {
				t.Fatalf("Stat(%q): %v after %d request(s), want one request and not found", key, err, len(reqs))
			}
			u := reqs[0]
			if u.Host != "127.0.0.1:9" {
				t.Fatalf("Stat(%q) went to host %q", key, u.Host)
			}
			raw := u.EscapedPath()
			if !strings.HasPrefix(raw, containerPath+"/") {
				t.Fatalf("Stat(%q) asked for %q, outside the container", key, raw)
			}
			name, err := url.PathUnescape(strings.TrimPrefix(raw, containerPath+"/"))
			if err != nil || name != key {
				t.Fatalf("Stat(%q): the service would see the blob name %q (%v)", key, name, err)
			}
			if strings.Contains(u.RawQuery, "comp=") || u.Fragment != "" {
				t.Fatalf("Stat(%q) sent the query %q, fragment %q", key, u.RawQuery, u.Fragment)
			}
		}

		prefix := key + "/"
		for _, err := range s.List(ctx, prefix, gtc.ListOptions{Delimiter: true}) {
			_ = err
			break
		}
		reqs = rt.take()
		if gtc.ValidatePrefix(prefix) != nil {
			if len(reqs) != 0 {
				t.Fatalf("List(%q): invalid prefix, yet %d request(s)", prefix, len(reqs))
			}
			return
		}
		if len(reqs) != 1 {
			t.Fatalf("List(%q): %d requests", prefix, len(reqs))
		}
		u := reqs[0]
		if u.EscapedPath() != containerPath {
			t.Fatalf("List(%q) asked for the path %q", prefix, u.EscapedPath())
		}
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil || q.Get("prefix") != prefix || len(q["prefix"]) != 1 || q.Get("comp") != "list" || q.Get("delimiter") != "/" {
			t.Fatalf("List(%q) sent the query %q", prefix, u.RawQuery)
		}
	})
}
