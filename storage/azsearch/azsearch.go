// Package azsearch is the Azure AI Search backend of GET /v1/search: a small
// client of the REST "Search Documents" operation that implements gtc.SearchProvider. It
// speaks plain net/http (one request per search, no paging), authenticates with a query key
// or a Microsoft Entra token, and reports every failure as a *gtc.SearchBackendError with a
// short reason, so nothing above storage sees an Azure type or a response body.
package azsearch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/gtc-dev/gtc"
)

// Defaults of Options.
const (
	DefaultAPIVersion = "2024-07-01"
	DefaultFieldURL   = "url"
	DefaultFieldTitle = "title"
	DefaultFieldChunk = "chunk"
	DefaultTimeout    = 10 * time.Second
)

// Scope is the Microsoft Entra scope of Azure AI Search data-plane tokens.
const Scope = "https://search.azure.com/.default"

// maxResponseBytes bounds what one search may read: top is at most 50, and even hits with
// long chunks stay far below this.
const maxResponseBytes = 32 << 20

// keyFields are the hit fields tried, in order, for a result's id. The search response does
// not name the index's key field, so the common key names are tried; a hit without any of
// them gets "<index>:<position>".
var keyFields = []string{"@search.documentKey", "id", "key", "chunk_id"}

// Options configures a Client.
type Options struct {
	// Endpoint is the service URL, e.g. https://my-service.search.windows.net.
	Endpoint string
	// Index is the name of the index searched.
	Index string
	// APIVersion is the REST API version (DefaultAPIVersion when empty).
	APIVersion string
	// Key is a query (or admin) key sent as the api-key header. When empty, Credential is used.
	Key string
	// Credential gets bearer tokens for Scope when Key is empty. Tokens are only sent over
	// https.
	Credential azcore.TokenCredential
	// FieldURL, FieldTitle and FieldChunk name the hit fields read as url, title and chunk
	// (defaults "url", "title", "chunk").
	FieldURL   string
	FieldTitle string
	FieldChunk string
	// HTTPClient sends the requests (a new client when nil).
	HTTPClient *http.Client
	// Timeout bounds one search, token included (DefaultTimeout when zero).
	Timeout time.Duration
}

// Client searches one Azure AI Search index. It is safe for concurrent use.
type Client struct {
	searchURL  string
	index      string
	key        string
	tokens     *tokenCache
	fieldURL   string
	fieldTitle string
	fieldChunk string
	http       *http.Client
	timeout    time.Duration
}

var _ gtc.SearchProvider = (*Client)(nil)

// New checks opts and returns a client. It does no I/O.
func New(opts Options) (*Client, error) {
	if opts.Endpoint == "" {
		return nil, errors.New("azsearch: endpoint is required")
	}
	u, err := url.Parse(strings.TrimRight(opts.Endpoint, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("azsearch: endpoint %q is not an http(s) URL", opts.Endpoint)
	}
	if opts.Index == "" {
		return nil, errors.New("azsearch: index is required")
	}
	if opts.Key == "" {
		if opts.Credential == nil {
			return nil, errors.New("azsearch: a key or a credential is required")
		}
		if u.Scheme != "https" {
			return nil, fmt.Errorf("azsearch: endpoint %q: bearer tokens are only sent over https", opts.Endpoint)
		}
	}
	if opts.Timeout < 0 {
		return nil, fmt.Errorf("azsearch: timeout %s is negative", opts.Timeout)
	}
	c := &Client{
		index:      opts.Index,
		key:        opts.Key,
		fieldURL:   cmpOr(opts.FieldURL, DefaultFieldURL),
		fieldTitle: cmpOr(opts.FieldTitle, DefaultFieldTitle),
		fieldChunk: cmpOr(opts.FieldChunk, DefaultFieldChunk),
		http:       opts.HTTPClient,
		timeout:    opts.Timeout,
	}
	if c.http == nil {
		c.http = &http.Client{}
	}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	if opts.Key == "" {
		c.tokens = &tokenCache{cred: opts.Credential}
	}
	q := url.Values{"api-version": {cmpOr(opts.APIVersion, DefaultAPIVersion)}}
	// Path and RawPath together keep an index name with reserved characters in one segment.
	u.RawPath = u.EscapedPath() + "/indexes/" + url.PathEscape(opts.Index) + "/docs/search"
	u.Path += "/indexes/" + opts.Index + "/docs/search"
	u.RawQuery = q.Encode()
	c.searchURL = u.String()
	return c, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// NewDefaultCredential returns the default Azure credential chain (environment, workload
// identity, managed identity, Azure CLI…). clientID, when set, selects a user-assigned
// managed identity: the chain reads it only from AZURE_CLIENT_ID, so it is copied there when
// that variable is unset (a real AZURE_CLIENT_ID wins): that is how GTC_AZURE_CLIENT_ID
// takes effect. Build one per process and share it, so every client uses one
// token cache.
func NewDefaultCredential(clientID string) (azcore.TokenCredential, error) {
	if clientID != "" {
		if _, ok := os.LookupEnv("AZURE_CLIENT_ID"); !ok {
			if err := os.Setenv("AZURE_CLIENT_ID", clientID); err != nil {
				return nil, fmt.Errorf("azsearch: set AZURE_CLIENT_ID: %w", err)
			}
		}
	}
	cred, err := azidentity.NewDefaultAzureCredential(nil)
	if err != nil {
		return nil, fmt.Errorf("azsearch: default Azure credential: %w", err)
	}
	return cred, nil
}

type searchRequest struct {
	Search string `json:"search"`
	Top    int    `json:"top"`
}

type searchResponse struct {
	Value *[]json.RawMessage `json:"value"`
}

// Search runs a full-text query and maps the hits of the first page (at most top of them).
// Hits without a string url are left out, since every result needs one.
func (c *Client) Search(ctx context.Context, q string, top int) ([]gtc.SearchResult, error) {
	out := []gtc.SearchResult{}
	if top < 1 {
		return out, nil
	}
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	body, err := json.Marshal(searchRequest{Search: q, Top: top})
	if err != nil {
		return nil, fmt.Errorf("azsearch: encode request: %w", err)
	}
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, c.searchURL, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("azsearch: build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.key != "" {
		req.Header.Set("api-key", c.key)
	} else {
		tok, err := c.tokens.get(rctx)
		if err != nil {
			return nil, c.fail(ctx, "authentication failed", err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}

	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.fail(ctx, "connection failed", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// Drain a little so the connection can be reused; the body itself is never kept.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		cause := fmt.Errorf("azure search answered %s", resp.Status)
		if id := resp.Header.Get("request-id"); id != "" {
			cause = fmt.Errorf("azure search answered %s (request-id %s)", resp.Status, id)
		}
		return nil, c.fail(ctx, "status "+strconv.Itoa(resp.StatusCode), cause)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, c.fail(ctx, "connection failed", err)
	}
	if len(b) > maxResponseBytes {
		return nil, c.fail(ctx, "response too large", fmt.Errorf("azure search response exceeds %d bytes", maxResponseBytes))
	}
	var sr searchResponse
	if err := json.Unmarshal(b, &sr); err != nil {
		return nil, c.fail(ctx, "invalid response", fmt.Errorf("decode azure search response: %w", err))
	}
	if sr.Value == nil {
		return nil, c.fail(ctx, "invalid response", errors.New("azure search response has no value array"))
	}
	for pos, raw := range *sr.Value {
		var hit map[string]json.RawMessage
		if err := json.Unmarshal(raw, &hit); err != nil {
			return nil, c.fail(ctx, "invalid response", fmt.Errorf("azure search hit %d is not an object: %w", pos, err))
		}
		u, ok := stringField(hit, c.fieldURL)
		if u = strings.TrimSpace(u); !ok || u == "" {
			continue
		}
		r := gtc.SearchResult{
			ID:         c.index + ":" + strconv.Itoa(pos),
			URL:        u,
			Title:      optField(hit, c.fieldTitle),
			Chunk:      optField(hit, c.fieldChunk),
			RawPayload: raw,
		}
		for _, k := range keyFields {
			if id, ok := stringField(hit, k); ok && id != "" {
				r.ID = id
				break
			}
		}
		out = append(out, r)
		if len(out) == top {
			break
		}
	}
	return out, nil
}

// fail wraps err as a search backend failure with a short reason. A search the caller
// cancelled is not the backend's fault and is returned as the context's error.
func (c *Client) fail(parent context.Context, reason string, err error) error {
	if errors.Is(parent.Err(), context.Canceled) {
		return fmt.Errorf("azsearch: %w", parent.Err())
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		reason = "timeout"
	}
	return &gtc.SearchBackendError{Reason: reason, Err: fmt.Errorf("azsearch: %w", err)}
}

// stringField reads a string-valued field; a missing, null or non-string value is absent.
func stringField(hit map[string]json.RawMessage, name string) (string, bool) {
	raw, ok := hit[name]
	if !ok || len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// optField is stringField as the nullable title and chunk: absent or empty is nil.
func optField(hit map[string]json.RawMessage, name string) *string {
	s, ok := stringField(hit, name)
	if !ok || s == "" {
		return nil
	}
	return &s
}

// tokenCache keeps the last bearer token until shortly before it expires. Credentials such
// as the Azure CLI one run a process per GetToken, so asking per search would be slow.
type tokenCache struct {
	cred azcore.TokenCredential
	mu   sync.Mutex
	tok  azcore.AccessToken
	next time.Time // when to ask again
}

// tokenRefreshMargin is how long before expiry a token is replaced.
const tokenRefreshMargin = 5 * time.Minute

func (t *tokenCache) get(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	if t.tok.Token != "" && now.Before(t.next) {
		return t.tok.Token, nil
	}
	tok, err := t.cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{Scope}})
	if err != nil {
		return "", err
	}
	if tok.Token == "" {
		return "", errors.New("credential returned an empty token")
	}
	t.tok = tok
	switch {
	case !tok.RefreshOn.IsZero() && tok.RefreshOn.Before(tok.ExpiresOn):
		t.next = tok.RefreshOn
	case !tok.ExpiresOn.IsZero():
		t.next = tok.ExpiresOn.Add(-tokenRefreshMargin)
	default:
		t.next = now // unknown lifetime: do not cache
	}
	return tok.Token, nil
}
