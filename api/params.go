package api

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/tagging"
)

// maxQueryParams bounds the parameters of one query string. It is net/url's own bound: past
// it url.Values comes back empty, which would silently drop every filter of the request.
const maxQueryParams = 10000

// msgBadEncoding is the 422 message of a parameter whose value is not valid percent-encoding.
const msgBadEncoding = "invalid percent-encoding"

// queryParams reads query values: the first occurrence of a single-valued parameter wins,
// and every schema problem is collected for one 422.
type queryParams struct {
	v    url.Values
	bad  map[string]bool // names with a value that is not valid percent-encoding
	errs []gtc.FieldError
	more int // problems past the gtc.MaxFieldErrors listed in errs
}

// newQueryParams splits the raw query itself instead of using url.Values: net/url drops a
// pair with a bad escape and, past maxQueryParams, every pair, without a word, so a filter
// could vanish from a request that still answered 200. Here a bad value is a 422 when its
// parameter is read (unknown parameters stay ignored), too many parameters a
// 422 for the request, and ";" is an ordinary character, as in browsers' URLSearchParams.
func newQueryParams(u *url.URL) *queryParams {
	q := &queryParams{v: url.Values{}}
	raw := u.RawQuery
	if strings.Count(raw, "&") >= maxQueryParams {
		q.errs = append(q.errs, gtc.FieldError{Field: "query", Message: fmt.Sprintf("must have at most %d parameters", maxQueryParams)})
		return q
	}
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		key, err := url.QueryUnescape(k)
		if err != nil {
			continue // no parameter has this name: ignored like any unknown one
		}
		val, err := url.QueryUnescape(v)
		if err != nil {
			if q.bad == nil {
				q.bad = map[string]bool{}
			}
			q.bad[key] = true
			continue
		}
		q.v[key] = append(q.v[key], val)
	}
	return q
}

func (q *queryParams) fail(name, msg string) {
	if len(q.errs) >= gtc.MaxFieldErrors {
		q.more++
		return
	}
	q.errs = append(q.errs, gtc.FieldError{Field: "query." + name, Message: msg})
}

// lookup returns the first value of name and whether it is present. A value that is not
// valid percent-encoding is reported once and counts as absent.
func (q *queryParams) lookup(name string) (string, bool) {
	if q.bad[name] {
		delete(q.bad, name)
		q.fail(name, msgBadEncoding)
		return "", false
	}
	vs, ok := q.v[name]
	if !ok || len(vs) == 0 {
		return "", false
	}
	return vs[0], true
}

func (q *queryParams) has(name string) bool {
	_, ok := q.lookup(name)
	return ok
}

func (q *queryParams) str(name string) string {
	s, _ := q.lookup(name)
	return s
}

// all returns every value of a repeatable parameter.
func (q *queryParams) all(name string) []string {
	if _, ok := q.lookup(name); !ok {
		return nil
	}
	return q.v[name]
}

// integer reads an optional sign followed by decimal digits.
func (q *queryParams) integer(name string, def int) int {
	s, ok := q.lookup(name)
	if !ok {
		return def
	}
	digits := strings.TrimLeft(s, "+-")
	if len(s)-len(digits) > 1 || digits == "" || strings.Trim(digits, "0123456789") != "" {
		q.fail(name, "expected integer")
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		q.fail(name, "expected integer")
		return def
	}
	return n
}

// boolean reads true/false/1/0/yes/no/on/off in any case.
func (q *queryParams) boolean(name string, def bool) bool {
	s, ok := q.lookup(name)
	if !ok {
		return def
	}
	switch strings.ToLower(s) {
	case "true", "1", "yes", "on":
		return true
	case "false", "0", "no", "off":
		return false
	}
	q.fail(name, "expected boolean")
	return def
}

// enum reads one of the allowed values; "" when absent.
func (q *queryParams) enum(name string, allowed ...string) string {
	s, ok := q.lookup(name)
	if !ok {
		return ""
	}
	for _, a := range allowed {
		if s == a {
			return s
		}
	}
	q.fail(name, "must be one of: "+strings.Join(allowed, ", "))
	return ""
}

func (q *queryParams) err() error {
	if len(q.errs) == 0 {
		return nil
	}
	return gtc.ValidationErrorMore(q.errs, q.more)
}

func invalidQuery(format string, args ...any) error {
	return &gtc.Error{Code: gtc.CodeInvalidQuery, Message: fmt.Sprintf(format, args...)}
}

var statusNames = []string{"draft", "approved", "skipped", "deleted"}

// parseList reads the explorer list query. Schema problems come
// first as one 422; then the rules, in parameter order, as 400s.
func (s *Server) parseList(u *url.URL) (gtc.ListRequest, error) {
	q := newQueryParams(u)
	page := q.integer("page", 1)
	limitSet := q.has("limit")
	limit := q.integer("limit", 25)
	sortBy := q.enum("sortBy", "reviewedAt", "updatedAt", "id", "hasAnswer", "tagCount")
	order := q.enum("sortOrder", "asc", "desc")
	// Every parameter is read before the 422 is decided, so a value that is not valid
	// percent-encoding is part of it.
	status, hasStatus := q.lookup("status")
	dataset := q.str("dataset")
	tags, excludeTags := q.str("tags"), q.str("excludeTags")
	itemID, keyword := q.str("itemId"), q.str("keyword")
	pluginFilters := q.all("pluginFilter")
	pluginSort, hasPluginSort := q.lookup("pluginSort")
	if err := q.err(); err != nil {
		return gtc.ListRequest{}, err
	}
	req := gtc.ListRequest{Sort: gtc.SortReviewedAt, Desc: order != "asc", Page: page}
	if sortBy != "" {
		req.Sort = gtc.SortKey(sortBy)
	}
	f := &req.Filter
	if hasStatus {
		st, err := gtc.ParseStatus(status)
		if err != nil {
			return req, err
		}
		f.Statuses = []gtc.Status{st}
	}
	if dataset != "" {
		f.DatasetNames = []string{dataset}
	}
	var err error
	if f.AllTags, err = tagFilterList(tags, "Too many tags specified. Maximum allowed is 10.", "Tag"); err != nil {
		return req, err
	}
	if f.NoneOfTags, err = tagFilterList(excludeTags, "Too many exclude tags specified. Maximum allowed is 10.", "Exclude tag"); err != nil {
		return req, err
	}
	if id := strings.TrimSpace(itemID); id != "" {
		if utf8.RuneCountInString(id) > 200 {
			return req, invalidQuery("itemId must be 200 characters or less")
		}
		f.IDContains = id
	}
	if kw := strings.TrimSpace(keyword); kw != "" {
		if utf8.RuneCountInString(kw) > 200 {
			return req, invalidQuery("keyword must be 200 characters or less")
		}
		f.Keyword = strings.ToLower(kw)
	}
	for _, pf := range pluginFilters {
		if strings.TrimSpace(pf) == "" {
			continue
		}
		key, val, ok := strings.Cut(pf, "=")
		switch {
		case !ok:
			return req, invalidQuery("pluginFilter entries must use key=value format")
		case strings.TrimSpace(key) == "":
			return req, invalidQuery("pluginFilter entries must include a non-empty key")
		case !strings.Contains(key, ":"):
			return req, invalidQuery("pluginFilter key must be namespaced (pack:key)")
		case utf8.RuneCountInString(val) > 500:
			return req, invalidQuery("pluginFilter value must be 500 characters or less")
		case val == "":
			continue
		case key != "rag-compat:refUrl":
			return req, invalidQuery("Unknown pluginFilter key '%s'", key)
		}
		f.RefURLContains = append(f.RefURLContains, val)
	}
	if hasPluginSort {
		if !strings.Contains(pluginSort, ":") {
			return req, invalidQuery("pluginSort must be namespaced (pack:key)")
		}
		if pluginSort != "rag-compat:totalReferences" {
			return req, invalidQuery("Unknown pluginSort key '%s'", pluginSort)
		}
		req.Sort = gtc.SortReferences
	}
	if req.Limit, err = s.checkPage(page, limit, limitSet); err != nil {
		return req, err
	}
	return req, nil
}

// checkPage applies the paging rules once page and limit are integers: page
// at least 1, a limit inside the configured range, an absent limit clamped into it.
func (s *Server) checkPage(page, limit int, limitSet bool) (int, error) {
	if page < 1 {
		return 0, invalidQuery("page must be at least 1")
	}
	lo, hi := s.opts.PaginationMinLimit, s.opts.PaginationMaxLimit
	if !limitSet {
		return clamp(limit, lo, hi), nil
	}
	if limit < lo || limit > hi {
		return 0, invalidQuery("limit must be between %d and %d", lo, hi)
	}
	return limit, nil
}

// pageOffset is (page-1)*limit for page ≥ 1 and limit ≥ 1, saturated below math.MaxInt so
// that a huge page reads past the end instead of overflowing into a negative offset.
func pageOffset(page, limit int) int {
	const most = math.MaxInt - gtc.MaxQueryLimit
	if page-1 > most/limit {
		return most
	}
	return (page - 1) * limit
}

// parseExportList reads the query of GET /v1/exports: page and limit.
func (s *Server) parseExportList(u *url.URL) (page, limit int, err error) {
	q := newQueryParams(u)
	page = q.integer("page", 1)
	limitSet := q.has("limit")
	limit = q.integer("limit", 25)
	if err := q.err(); err != nil {
		return 0, 0, err
	}
	if limit, err = s.checkPage(page, limit, limitSet); err != nil {
		return 0, 0, err
	}
	return page, limit, nil
}

// parseSearch reads the query of GET /v1/search: q, trimmed and required, and
// top in 1..50 (default 5).
func parseSearch(u *url.URL) (text string, top int, err error) {
	q := newQueryParams(u)
	top = q.integer("top", 5)
	if q.has("top") && len(q.errs) == 0 && (top < 1 || top > 50) {
		q.fail("top", "must be between 1 and 50")
	}
	text = strings.TrimSpace(q.str("q"))
	if err := q.err(); err != nil {
		return "", 0, err
	}
	if text == "" {
		return "", 0, invalidQuery("q is required")
	}
	return text, top, nil
}

// parseStatusFilter reads the optional status enum of GET /v1/ground-truths/{datasetName};
// nil when absent.
func parseStatusFilter(u *url.URL) (*gtc.Status, error) {
	q := newQueryParams(u)
	st := q.enum("status", statusNames...)
	if err := q.err(); err != nil {
		return nil, err
	}
	if st == "" {
		return nil, nil
	}
	v := gtc.Status(st)
	return &v, nil
}

// parseRecompute reads the query of POST /v1/ground-truths/recompute-tags.
func parseRecompute(u *url.URL) (req gtc.RecomputeRequest, params recomputeParams, async bool, err error) {
	q := newQueryParams(u)
	st := q.enum("status", statusNames...)
	dryRun := q.boolean("dry_run", false)
	async = q.boolean("async", false)
	ds, hasDataset := q.lookup("dataset")
	if err := q.err(); err != nil {
		return req, params, false, err
	}
	req.DryRun, params.DryRun = dryRun, dryRun
	if hasDataset {
		req.Dataset, params.Dataset = &ds, &ds
	}
	if st != "" {
		status := gtc.Status(st)
		req.Status, params.Status = &status, &st
	}
	return req, params, async, nil
}

// parseImportOptions reads the query of POST /v1/ground-truths.
func parseImportOptions(u *url.URL) (gtc.ImportOptions, error) {
	q := newQueryParams(u)
	opts := gtc.ImportOptions{Approve: q.boolean("approve", false), RegisterTags: q.boolean("registerTags", false)}
	return opts, q.err()
}

func clamp(v, lo, hi int) int {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

// tagFilterList splits a comma-separated tag filter: entries trimmed, empties dropped, at most 10,
// each at most 100 characters. Tags are compared exactly and case-sensitively, in the form
// tagging.FilterTag gives them (composed into Unicode Normalization Form C, as every
// normalized tag is; dataset tags as sent).
func tagFilterList(raw, tooMany, label string) ([]string, error) {
	var out []string
	for _, part := range strings.Split(raw, ",") {
		if t := strings.TrimSpace(part); t != "" {
			out = append(out, t)
		}
	}
	if len(out) > 10 {
		return nil, invalidQuery("%s", tooMany)
	}
	for i, t := range out {
		if utf8.RuneCountInString(t) > 100 {
			r := []rune(t)
			return nil, invalidQuery("%s '%s...' exceeds maximum length of 100 characters.", label, string(r[:50]))
		}
		out[i] = tagging.FilterTag(t)
	}
	return out, nil
}
