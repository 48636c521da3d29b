package api

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gtc-dev/gtc"
)

// queryParams reads query values: the first occurrence of a single-valued parameter wins,
// and every schema problem is collected for one 422 (api.md §1.2).
type queryParams struct {
	v    url.Values
	errs []gtc.FieldError
}

func newQueryParams(u *url.URL) *queryParams { return &queryParams{v: u.Query()} }

func (q *queryParams) fail(name, msg string) {
	q.errs = append(q.errs, gtc.FieldError{Field: "query." + name, Message: msg})
}

func (q *queryParams) has(name string) bool {
	_, ok := q.v[name]
	return ok
}

func (q *queryParams) str(name string) string { return q.v.Get(name) }

// integer reads an optional sign followed by decimal digits.
func (q *queryParams) integer(name string, def int) int {
	if !q.has(name) {
		return def
	}
	s := q.v.Get(name)
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
	if !q.has(name) {
		return def
	}
	switch strings.ToLower(q.v.Get(name)) {
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
	if !q.has(name) {
		return ""
	}
	s := q.v.Get(name)
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
	return gtc.ValidationError(q.errs)
}

func invalidQuery(format string, args ...any) error {
	return &gtc.Error{Code: gtc.CodeInvalidQuery, Message: fmt.Sprintf(format, args...)}
}

var statusNames = []string{"draft", "approved", "skipped", "deleted"}

// parseList reads the explorer list query (api.md §3.4.3, §1.8). Schema problems come
// first as one 422; then the rules, in parameter order, as 400s.
func (s *Server) parseList(u *url.URL) (gtc.ListRequest, error) {
	q := newQueryParams(u)
	page := q.integer("page", 1)
	limitSet := q.has("limit")
	limit := q.integer("limit", 25)
	sortBy := q.enum("sortBy", "reviewedAt", "updatedAt", "id", "hasAnswer", "tagCount")
	order := q.enum("sortOrder", "asc", "desc")
	if err := q.err(); err != nil {
		return gtc.ListRequest{}, err
	}
	req := gtc.ListRequest{Sort: gtc.SortReviewedAt, Desc: order != "asc", Page: page}
	if sortBy != "" {
		req.Sort = gtc.SortKey(sortBy)
	}
	f := &req.Filter
	if q.has("status") {
		st, err := gtc.ParseStatus(q.str("status"))
		if err != nil {
			return req, err
		}
		f.Statuses = []gtc.Status{st}
	}
	if ds := q.str("dataset"); q.has("dataset") && ds != "" {
		f.DatasetNames = []string{ds}
	}
	var err error
	if f.AllTags, err = tagFilterList(q.str("tags"), "Too many tags specified. Maximum allowed is 10.", "Tag"); err != nil {
		return req, err
	}
	if f.NoneOfTags, err = tagFilterList(q.str("excludeTags"), "Too many exclude tags specified. Maximum allowed is 10.", "Exclude tag"); err != nil {
		return req, err
	}
	if id := strings.TrimSpace(q.str("itemId")); id != "" {
		if utf8.RuneCountInString(id) > 200 {
			return req, invalidQuery("itemId must be 200 characters or less")
		}
		f.IDContains = id
	}
	if kw := strings.TrimSpace(q.str("keyword")); kw != "" {
		if utf8.RuneCountInString(kw) > 200 {
			return req, invalidQuery("keyword must be 200 characters or less")
		}
		f.Keyword = strings.ToLower(kw)
	}
	for _, pf := range q.v["pluginFilter"] {
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
	if q.has("pluginSort") {
		ps := q.str("pluginSort")
		if !strings.Contains(ps, ":") {
			return req, invalidQuery("pluginSort must be namespaced (pack:key)")
		}
		if ps != "rag-compat:totalReferences" {
			return req, invalidQuery("Unknown pluginSort key '%s'", ps)
		}
		req.Sort = gtc.SortReferences
	}
	if page < 1 {
		return req, invalidQuery("page must be at least 1")
	}
	min, max := s.opts.PaginationMinLimit, s.opts.PaginationMaxLimit
	if !limitSet {
		limit = clamp(limit, min, max)
	} else if limit < min || limit > max {
		return req, invalidQuery("limit must be between %d and %d", min, max)
	}
	req.Limit = limit
	return req, nil
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
// each at most 100 characters. Tags are compared exactly; they are not normalized.
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
	for _, t := range out {
		if utf8.RuneCountInString(t) > 100 {
			r := []rune(t)
			return nil, invalidQuery("%s '%s...' exceeds maximum length of 100 characters.", label, string(r[:50]))
		}
	}
	return out, nil
}
