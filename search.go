package gtc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// SearchResult is one hit of the reference search.
type SearchResult struct {
	ID    string  `json:"id"`
	URL   string  `json:"url"`
	Title *string `json:"title"`
	Chunk *string `json:"chunk"`
	// RawPayload is the original search hit (azure) or a ReferencePayload (references); it
	// is encoded as is.
	RawPayload any `json:"raw_payload"`
}

// SearchProvider answers GET /v1/search. top is the number of results wanted (the API
// checks 1..50); a provider returns at most top results, never nil.
type SearchProvider interface {
	Search(ctx context.Context, q string, top int) ([]SearchResult, error)
}

// ErrSearchBackend marks a failure of an external search service; the API answers it with
// 502 SEARCH_BACKEND_ERROR. Providers return it inside a *SearchBackendError, which carries
// the short reason the response may show.
var ErrSearchBackend = errors.New("search backend error")

// SearchBackendError is a failure of an external search service. Reason is short and safe to
// show to a caller ("status 503", "timeout", "invalid response"): never a response body, a
// key or a token. Err is the cause, for logs only.
type SearchBackendError struct {
	Reason string
	Err    error
}

func (e *SearchBackendError) Error() string {
	if e.Err != nil {
		return "search backend error: " + e.Reason + ": " + e.Err.Error()
	}
	return "search backend error: " + e.Reason
}

// Unwrap makes errors.Is hold for ErrSearchBackend and for the cause (a context deadline,
// say).
func (e *SearchBackendError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrSearchBackend}
	}
	return []error{ErrSearchBackend, e.Err}
}

// SearchBackendDetail returns the detail of the 502 answer for err,
// "Search backend error: <short reason>", and whether err is a search backend failure at all.
func SearchBackendDetail(err error) (string, bool) {
	var e *SearchBackendError
	if errors.As(err, &e) {
		if e.Reason == "" {
			return "Search backend error", true
		}
		return "Search backend error: " + e.Reason, true
	}
	if errors.Is(err, ErrSearchBackend) {
		return "Search backend error", true
	}
	return "", false
}

// NoSearch is the provider of GTC_SEARCH_BACKEND=none: it never finds anything.
type NoSearch struct{}

// Search returns no results.
func (NoSearch) Search(context.Context, string, int) ([]SearchResult, error) {
	return []SearchResult{}, nil
}

// ReferencePayload is the raw_payload of a hit of the built-in reference search.
type ReferencePayload struct {
	ItemID      string `json:"itemId"`
	DatasetName string `json:"datasetName"`
	// Reference is the reference object exactly as the item stores it, every key kept.
	Reference json.RawMessage `json:"reference"`
}

// DefaultSearchPageSize is the scan page size of ReferenceSearch when none is given.
const DefaultSearchPageSize = 100

// ReferenceSearch is the provider of GTC_SEARCH_BACKEND=references: a substring search over
// the stored references of every item that is not deleted.
type ReferenceSearch struct {
	items    ItemStore
	pageSize int
}

// NewReferenceSearch returns a reference search over items that reads pageSize items per
// scan page (DefaultSearchPageSize when pageSize < 1).
func NewReferenceSearch(items ItemStore, pageSize int) *ReferenceSearch {
	if pageSize < 1 {
		pageSize = DefaultSearchPageSize
	}
	return &ReferenceSearch{items: items, pageSize: min(pageSize, MaxQueryLimit)}
}

// searchStatuses are the statuses the reference search reads: all but deleted.
var searchStatuses = []Status{StatusDraft, StatusApproved, StatusSkipped}

// Search scans items in (datasetName, id) order and their references in array order. A
// reference matches when its url, title, content or keyExcerpt contains q, compared after
// Unicode lower-casing of both sides; the first hit per url wins and the scan stops as soon
// as top hits are found, so a common word reads only the first page or so.
func (s *ReferenceSearch) Search(ctx context.Context, q string, top int) ([]SearchResult, error) {
	out := []SearchResult{}
	if top < 1 {
		return out, nil
	}
	needle := strings.ToLower(q)
	seen := map[string]bool{}
	spec := ScanSpec{Statuses: searchStatuses, Order: ByDatasetID}
	cursor := ""
	for {
		page, err := s.items.Scan(ctx, spec, cursor, s.pageSize)
		if err != nil {
			return nil, fmt.Errorf("reference search: %w", err)
		}
		for _, it := range page.Items {
			if it.Status == StatusDeleted {
				continue
			}
			p, ok := it.Plugins[RAGCompatSlot]
			if !ok {
				continue
			}
			for _, e := range storedReferences(p.Data) {
				if seen[e.ref.URL] || !referenceMatches(&e.ref, needle) {
					continue
				}
				seen[e.ref.URL] = true
				out = append(out, referenceResult(it, e))
				if len(out) == top {
					return out, nil
				}
			}
		}
		if page.Next == "" {
			return out, nil
		}
		cursor = page.Next
	}
}

func referenceMatches(r *Reference, needle string) bool {
	return containsLower(r.URL, needle) || containsLower(r.Title, needle) ||
		containsLower(r.Content, needle) || containsLower(r.KeyExcerpt, needle)
}

// containsLower reports whether strings.ToLower(s) contains needle, which is already
// lower-case. A search with no hit reads every reference of the store, so ASCII text (most
// URLs and much of the rest) is compared without building its lower-case copy.
func containsLower(s, needle string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return strings.Contains(strings.ToLower(s), needle)
		}
	}
	n := len(needle)
	for i := 0; i+n <= len(s); i++ {
		j := 0
		for j < n && lowerASCII(s[i+j]) == needle[j] {
			j++
		}
		if j == n {
			return true
		}
	}
	return false
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}

func referenceResult(it *Item, e storedReference) SearchResult {
	r := SearchResult{
		ID:  it.ID + ":ref:" + strconv.Itoa(e.index),
		URL: e.ref.URL,
		RawPayload: ReferencePayload{
			ItemID:      it.ID,
			DatasetName: it.DatasetName,
			Reference:   e.raw,
		},
	}
	if e.ref.Title != "" {
		t := e.ref.Title
		r.Title = &t
	}
	switch {
	case e.ref.Content != "":
		c := e.ref.Content
		r.Chunk = &c
	case e.ref.KeyExcerpt != "":
		c := e.ref.KeyExcerpt
		r.Chunk = &c
	}
	return r
}

// storedReference is one reference together with its position in the stored references
// array and its stored bytes.
type storedReference struct {
	index int             // position in data.references, entries References skips included
	raw   json.RawMessage // the element as stored (a slice of the plugin data)
	ref   Reference       // as References reads it
}

// storedReferences reads data.references of a rag-compat payload keeping each element's
// bytes and array index, which References drops; both walk the payload with
// walkReferences, so they see the same references in the same order.
func storedReferences(data json.RawMessage) []storedReference {
	var refs []storedReference
	walkReferences(data, func(index int, raw json.RawMessage, ref Reference) {
		refs = append(refs, storedReference{index: index, raw: raw, ref: ref})
	})
	return refs
}
