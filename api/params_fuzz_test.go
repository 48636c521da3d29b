package api

import (
	"math"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gtc-dev/gtc"
)

// FuzzQueryParams feeds arbitrary query strings to every query parser of the API (the
// explorer list, the dataset list, search, the export list, recompute and import) and checks
// that none panics, that a refusal is a *gtc.Error with a 4xx status, and that what is
// accepted stays within the documented bounds. For a query net/url reads without complaint,
// the parsed values must also be the ones net/url sees: the product splits the query itself
// and must not drift from it.
func FuzzQueryParams(f *testing.F) {
	for _, seed := range []string{
		"",
		"page=2&limit=10&sortBy=id&sortOrder=asc",
		"page=9223372036854775807&limit=100",
		"page=-9223372036854775808",
		"page=99999999999999999999",
		"page=+1&limit=-0",
		"page=++1",
		"page=%00&limit=1e3",
		"page=%ff&limit=10%0A",
		"limit=0",
		"limit=101",
		"status=%zz",
		"status=approved;status=draft",
		"status=deleted&status=draft",
		"status=%ff%fe",
		"sortBy=id%0D%0ASet-Cookie:%20x=1",
		"sortOrder=ASC",
		"tags=a,b,c,d,e,f,g,h,i,j,k",
		"tags=" + strings.Repeat("%C3%A9", 101),
		"excludeTags=,,%20,",
		"itemId=" + strings.Repeat("x", 201),
		"keyword=%C4%B0" + strings.Repeat("%E2%84%AA", 60),
		"keyword=%ff%00%0D%0A",
		"pluginFilter=rag-compat:refUrl=https://x&pluginFilter=rag-compat:refUrl=",
		"pluginFilter==x",
		"pluginFilter=nokey",
		"pluginFilter=a=b",
		"pluginFilter=x:y=1",
		"pluginFilter=rag-compat:refUrl=" + strings.Repeat("u", 501),
		"pluginFilter=%zz",
		"pluginSort=rag-compat:totalReferences",
		"pluginSort=nocolon",
		"dataset=..%2F..%2Fetc&dataset=alpha",
		"q=%20%20&top=0",
		"q=x&top=51",
		"q=%00&top=%0D%0A",
		"q=ok&top=50",
		"dry_run=YES&async=off&status=skipped&dataset=",
		"dry_run=maybe",
		"approve=%00&registerTags=On",
		"%zz=1&=x&&&a=%",
		"a;b=c&;=;",
		// More than maxQueryParams parameters is TestAbuseTable's row: a 10 KB seed would
		// make every mutation and minimization slow.
	} {
		f.Add(seed, uint8(0), uint8(99))
	}
	f.Add("limit=5", uint8(4), uint8(45))
	f.Add("limit=4", uint8(4), uint8(45))
	f.Fuzz(func(t *testing.T, raw string, lo, span uint8) {
		min := 1 + int(lo)%50
		max := min + int(span)%200
		s := &Server{opts: Options{PaginationMinLimit: min, PaginationMaxLimit: max}}
		u := &url.URL{RawQuery: raw}
		ref, refErr := url.ParseQuery(raw)
		first := func(name string) (string, bool) {
			vs, ok := ref[name]
			if !ok || len(vs) == 0 {
				return "", false
			}
			return vs[0], true
		}

		q := newQueryParams(u)
		if refErr == nil && len(q.errs) == 0 {
			for k, vs := range ref {
				if !slices.Equal(vs, q.v[k]) {
					t.Fatalf("parameter %q: net/url reads %q, the API %q", k, vs, q.v[k])
				}
			}
			if len(ref) != len(q.v) {
				t.Fatalf("net/url reads %d parameters, the API %d", len(ref), len(q.v))
			}
		}

		req, err := s.parseList(u)
		if checkRefusal(t, "list", err) {
			if req.Page < 1 {
				t.Fatalf("list: page %d below 1", req.Page)
			}
			if req.Limit < min || req.Limit > max {
				t.Fatalf("list: limit %d outside %d..%d", req.Limit, min, max)
			}
			off := pageOffset(req.Page, req.Limit)
			if off < 0 || off > math.MaxInt-gtc.MaxQueryLimit {
				t.Fatalf("list: offset %d of page %d overflows", off, req.Page)
			}
			if req.Page-1 <= (math.MaxInt-gtc.MaxQueryLimit)/req.Limit && off != (req.Page-1)*req.Limit {
				t.Fatalf("list: offset %d, want %d", off, (req.Page-1)*req.Limit)
			}
			switch req.Sort {
			case gtc.SortReviewedAt, gtc.SortUpdatedAt, gtc.SortID, gtc.SortHasAnswer, gtc.SortTagCount, gtc.SortReferences:
			default:
				t.Fatalf("list: unknown sort %q", req.Sort)
			}
			fl := req.Filter
			if len(fl.Statuses) > 1 || len(fl.Statuses) == 1 && !fl.Statuses[0].Valid() {
				t.Fatalf("list: statuses %q", fl.Statuses)
			}
			if len(fl.DatasetNames) > 1 || len(fl.DatasetNames) == 1 && fl.DatasetNames[0] == "" {
				t.Fatalf("list: dataset names %q", fl.DatasetNames)
			}
			for _, tags := range [][]string{fl.AllTags, fl.NoneOfTags} {
				if len(tags) > 10 {
					t.Fatalf("list: %d tags", len(tags))
				}
				for _, tag := range tags {
					if tag == "" || tag != strings.TrimSpace(tag) || utf8.RuneCountInString(tag) > 100 || strings.Contains(tag, ",") {
						t.Fatalf("list: tag filter %q", tag)
					}
				}
			}
			if fl.IDContains != strings.TrimSpace(fl.IDContains) || utf8.RuneCountInString(fl.IDContains) > 200 {
				t.Fatalf("list: itemId %q", fl.IDContains)
			}
			for _, v := range fl.RefURLContains {
				if v == "" || utf8.RuneCountInString(v) > 500 {
					t.Fatalf("list: refUrl filter %q", v)
				}
			}
			if refErr == nil {
				kw, _ := first("keyword")
				kw = strings.TrimSpace(kw)
				if fl.Keyword != strings.ToLower(kw) || utf8.RuneCountInString(kw) > 200 {
					t.Fatalf("list: keyword %q from %q", fl.Keyword, kw)
				}
				if st, ok := first("status"); ok && (len(fl.Statuses) != 1 || string(fl.Statuses[0]) != st) {
					t.Fatalf("list: status %q read as %q", st, fl.Statuses)
				}
			}
		}

		page, limit, err := s.parseExportList(u)
		if checkRefusal(t, "exports", err) && (page < 1 || limit < min || limit > max) {
			t.Fatalf("exports: page %d, limit %d outside 1.., %d..%d", page, limit, min, max)
		}

		text, top, err := parseSearch(u)
		if checkRefusal(t, "search", err) && (text == "" || text != strings.TrimSpace(text) || top < 1 || top > 50) {
			t.Fatalf("search: q %q, top %d", text, top)
		}

		st, err := parseStatusFilter(u)
		if checkRefusal(t, "dataset list", err) && st != nil && !st.Valid() {
			t.Fatalf("dataset list: status %q", *st)
		}

		rr, params, _, err := parseRecompute(u)
		if checkRefusal(t, "recompute", err) {
			if rr.Status != nil && (!rr.Status.Valid() || params.Status == nil || *params.Status != string(*rr.Status)) {
				t.Fatalf("recompute: status %v, params %v", rr.Status, params.Status)
			}
			if (rr.Dataset == nil) != (params.Dataset == nil) || rr.DryRun != params.DryRun {
				t.Fatalf("recompute: request and echoed params differ")
			}
		}

		_, err = parseImportOptions(u)
		checkRefusal(t, "import", err)
	})
}

// checkRefusal fails unless err is nil or a *gtc.Error whose code maps to a 4xx status; it
// reports whether the parse succeeded.
func checkRefusal(t *testing.T, what string, err error) bool {
	t.Helper()
	if err == nil {
		return true
	}
	ge, ok := gtc.AsError(err)
	if !ok {
		t.Fatalf("%s: refusal is not a *gtc.Error: %v", what, err)
	}
	status, known := statusOf[ge.Code]
	if !known || status < 400 || status > 499 {
		t.Fatalf("%s: refusal %s maps to status %d", what, ge.Code, status)
	}
	if ge.Message == "" {
		t.Fatalf("%s: refusal %s has no message", what, ge.Code)
	}
	return false
}
