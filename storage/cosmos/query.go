package cosmos

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	gtc "github.com/gtc-dev/gtc"
)

// visible is the rule every item query carries: documents gtc did not write have
// no gtcIndex and stay invisible until gtc migrate converts them.
const visible = "c.docType = 'ground-truth-item' AND IS_DEFINED(c.gtcIndex)"

// pkCond repeats a single-partition query's key in its WHERE clause: free on
// Cosmos DB, and required on the test server, which ignores the partition-key header.
const pkCond = "c.datasetName = @pkDataset AND c.bucket = @pkBucket"

// sqlQuery is one query text with its parameters. pk is nil for a cross-partition query.
type sqlQuery struct {
	text   string
	params []azcosmos.QueryParameter
	pk     *partition
}

// partition is one (datasetName, bucket) partition of the items container.
type partition struct {
	Dataset string
	Bucket  string
}

func (p partition) key() azcosmos.PartitionKey { return itemKey(p.Dataset, p.Bucket) }

// builder collects WHERE conditions and numbered parameters.
type builder struct {
	conds  []string
	params []azcosmos.QueryParameter
	n      int
}

func (b *builder) param(prefix string, v any) string {
	name := "@" + prefix + strconv.Itoa(b.n)
	b.n++
	b.params = append(b.params, azcosmos.QueryParameter{Name: name, Value: v})
	return name
}

func (b *builder) named(name string, v any) string {
	b.params = append(b.params, azcosmos.QueryParameter{Name: name, Value: v})
	return name
}

func (b *builder) add(cond string) { b.conds = append(b.conds, cond) }

func (b *builder) where() string { return strings.Join(b.conds, " AND ") }

// in renders "field IN (@p0, @p1, …)".
func (b *builder) in(field, prefix string, values []string) {
	names := make([]string, len(values))
	for i, v := range values {
		names[i] = b.param(prefix, v)
	}
	b.add(field + " IN (" + strings.Join(names, ", ") + ")")
}

// emptyField is the "missing, null or empty" test of a nullable string field.
func emptyField(f string) string {
	return "(NOT IS_DEFINED(" + f + ") OR IS_NULL(" + f + ") OR " + f + " = '')"
}

// filterConds adds the conditions of f, each a plain filter valid across partitions. It
// reports false when f can match nothing (a keyword containing U+001F), so the caller answers
// without a query.
func filterConds(b *builder, f gtc.Filter) bool {
	if len(f.Statuses) > 0 {
		sts := make([]string, 0, len(f.Statuses))
		for _, st := range f.Statuses {
			sts = append(sts, string(st))
		}
		b.in("c.status", "s", dedupe(sts))
	}
	if len(f.DatasetNames) > 0 {
		b.in("c.datasetName", "d", dedupe(f.DatasetNames))
	}
	if f.DatasetPrefix != "" {
		b.add("STARTSWITH(c.datasetName, " + b.param("prefix", f.DatasetPrefix) + ")")
	}
	for _, t := range dedupe(f.AllTags) {
		p := b.param("t", t)
		b.add("(ARRAY_CONTAINS(c.manualTags, " + p + ") OR ARRAY_CONTAINS(c.computedTags, " + p + "))")
	}
	for _, t := range dedupe(f.NoneOfTags) {
		p := b.param("x", t)
		b.add("NOT (ARRAY_CONTAINS(c.manualTags, " + p + ") OR ARRAY_CONTAINS(c.computedTags, " + p + "))")
	}
	if f.IDContains != "" {
		b.add("CONTAINS(c.id, " + b.param("idPart", f.IDContains) + ")")
	}
	if f.Keyword != "" {
		if strings.Contains(f.Keyword, "\x1f") {
			return false
		}
		b.add("CONTAINS(c.gtcIndex.searchText, " + b.param("kw", f.Keyword) + ")")
	}
	for _, u := range dedupe(f.RefURLContains) {
		b.add("CONTAINS(c.gtcIndex.refUrls, " + b.param("u", u) + ")")
	}
	if f.AssignedTo != nil {
		if *f.AssignedTo == "" {
			b.add(emptyField("c.assignedTo"))
		} else {
			b.add("c.assignedTo = " + b.param("user", *f.AssignedTo))
		}
	}
	return true
}

func dedupe(ss []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(ss)))
}

// itemWhere starts a builder with the visibility rule, for one partition when p is set.
func itemWhere(p *partition) *builder {
	b := &builder{}
	if p != nil {
		b = partitionWhere(*p)
	}
	b.add(visible)
	return b
}

// partitionWhere starts a builder of a single-partition query with its key (pkCond).
func partitionWhere(p partition) *builder {
	b := &builder{}
	b.add(pkCond)
	b.named("@pkDataset", p.Dataset)
	b.named("@pkBucket", p.Bucket)
	return b
}

// skName is the name under gtcIndex.sk of an ordering's sort key ("" for SortID, whose key
// is the id itself).
func skName(k gtc.SortKey) string {
	switch k {
	case gtc.SortReviewedAt, gtc.SortUpdatedAt, gtc.SortHasAnswer, gtc.SortTagCount,
		gtc.SortReferences, gtc.SortAssignedAt, gtc.SortRecent:
		return string(k)
	}
	return ""
}

// sortField is the document path of an ordering's sort key.
func sortField(k gtc.SortKey) string {
	if name := skName(k); name != "" {
		return "c.gtcIndex.sk." + name
	}
	return "c.id"
}

// countQuery is the cross-partition count of f's matches.
func countQuery(f gtc.Filter) (sqlQuery, bool) {
	b := itemWhere(nil)
	if !filterConds(b, f) {
		return sqlQuery{}, false
	}
	return sqlQuery{text: "SELECT VALUE COUNT(1) FROM c WHERE " + b.where(), params: b.params}, true
}

// topQuery is S1's per-partition query: the best n sort keys of one partition.
func topQuery(p partition, f gtc.Filter, k gtc.SortKey, desc bool, n int) (sqlQuery, bool) {
	b := itemWhere(&p)
	if !filterConds(b, f) {
		return sqlQuery{}, false
	}
	field := sortField(k)
	text := "SELECT c.id, " + field + " AS sk FROM c WHERE " + b.where() + " ORDER BY " + field + dir(desc)
	if n > 0 {
		text = "SELECT TOP " + b.named("@n", n) + text[len("SELECT"):]
	}
	return sqlQuery{text: text, params: b.params, pk: &p}, true
}

func dir(desc bool) string {
	if desc {
		return " DESC"
	}
	return " ASC"
}

// projectionQuery is S2: every match's key and sort key, across partitions.
func projectionQuery(f gtc.Filter, k gtc.SortKey) (sqlQuery, bool) {
	b := itemWhere(nil)
	if !filterConds(b, f) {
		return sqlQuery{}, false
	}
	return sqlQuery{
		text:   "SELECT c.id, c.datasetName, c.bucket, " + sortField(k) + " AS sk FROM c WHERE " + b.where(),
		params: b.params,
	}, true
}

// forbidden constructs (what the gateway refuses across partitions, and what is not portable
// within one), checked on every query text before it is sent.
var (
	reCrossForbidden  = regexp.MustCompile(`(?i)\b(ORDER\s+BY|TOP|OFFSET|LIMIT|DISTINCT|GROUP\s+BY|JOIN|SUM|MIN|MAX|AVG|LIKE)\b`)
	reSingleForbidden = regexp.MustCompile(`(?i)\b(OFFSET|LIMIT|GROUP\s+BY|DISTINCT|LIKE|JOIN|SUM|MIN|MAX|AVG)\b`)
	reCount           = regexp.MustCompile(`(?i)\bCOUNT\s*\(`)
	reLiteral         = regexp.MustCompile(`'[^']*'`)
	reOrderBy         = regexp.MustCompile(`(?i)\bORDER\s+BY\b`)
)

// checkQuery rejects what the gateway cannot serve (cross-partition) or what the test server
// cannot parse (both), and a single-partition query that does not repeat its key.
func checkQuery(text string, cross bool) error {
	bare := reLiteral.ReplaceAllString(text, "''")
	if cross {
		if m := reCrossForbidden.FindString(bare); m != "" {
			return fmt.Errorf("cross-partition query uses %s: %s", m, text)
		}
		if reCount.MatchString(bare) && !strings.HasPrefix(bare, "SELECT VALUE COUNT(1) FROM c") {
			return fmt.Errorf("cross-partition count must be SELECT VALUE COUNT(1): %s", text)
		}
		return nil
	}
	if m := reSingleForbidden.FindString(bare); m != "" {
		return fmt.Errorf("single-partition query uses %s: %s", m, text)
	}
	if !strings.Contains(bare, pkCond) {
		return fmt.Errorf("single-partition query does not repeat its partition key: %s", text)
	}
	if loc := reOrderBy.FindAllStringIndex(bare, -1); len(loc) > 1 || len(loc) == 1 && strings.Contains(bare[loc[0][1]:], ",") {
		return fmt.Errorf("single-partition ORDER BY must be on one path: %s", text)
	}
	return nil
}

// page is one page of query results.
type page struct {
	rows         [][]byte
	continuation string
}

// pages runs q page by page, from token when given. The request charge of every page is
// summed and logged per GTC_COSMOS_LOG_QUERY_METRICS when the iteration ends.
func (s *Store) pages(ctx context.Context, c *azcosmos.ContainerClient, op string, q sqlQuery, pageSize int, token string) iter.Seq2[page, error] {
	return func(yield func(page, error) bool) {
		if err := checkQuery(q.text, q.pk == nil); err != nil {
			yield(page{}, fmt.Errorf("cosmos: %s: %w: query guard: %w", op, gtc.ErrUnavailable, err))
			return
		}
		if s.closed.Load() {
			yield(page{}, errClosed(op))
			return
		}
		pk := azcosmos.NewPartitionKey()
		if q.pk != nil {
			pk = q.pk.key()
		}
		o := &azcosmos.QueryOptions{QueryParameters: q.params, PageSizeHint: int32(pageSize)}
		if token != "" {
			o.ContinuationToken = &token
		}
		start := time.Now()
		var charge float64
		var count int
		defer func() { s.logQuery(op, q.text, charge, count, time.Since(start)) }()
		pager := c.NewQueryItemsPager(q.text, pk, o)
		for pager.More() {
			resp, err := pager.NextPage(ctx)
			if err != nil {
				yield(page{}, wrapErr(op, err))
				return
			}
			charge += float64(resp.RequestCharge)
			count += len(resp.Items)
			p := page{rows: resp.Items}
			if resp.ContinuationToken != nil {
				p.continuation = *resp.ContinuationToken
			}
			if !yield(p, nil) {
				return
			}
			if p.continuation == "" {
				return
			}
		}
	}
}

// rows runs q to the end and calls fn with every row.
func (s *Store) rows(ctx context.Context, c *azcosmos.ContainerClient, op string, q sqlQuery, fn func(row []byte) error) error {
	for p, err := range s.pages(ctx, c, op, q, s.opts.PageSize, "") {
		if err != nil {
			return err
		}
		for _, r := range p.rows {
			if err := fn(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// eachRow runs q like rows and calls fn with every row decoded into a T. A row that does not
// decode means the service answered something unexpected: ErrUnavailable naming op.
func eachRow[T any](ctx context.Context, s *Store, c *azcosmos.ContainerClient, op string, q sqlQuery, fn func(T) error) error {
	return s.rows(ctx, c, op, q, func(row []byte) error {
		var v T
		if err := json.Unmarshal(row, &v); err != nil {
			return fmt.Errorf("cosmos: %s: %w: %w", op, gtc.ErrUnavailable, err)
		}
		return fn(v)
	})
}

// collectRows is eachRow gathering every row into a slice.
func collectRows[T any](ctx context.Context, s *Store, c *azcosmos.ContainerClient, op string, q sqlQuery) ([]T, error) {
	var out []T
	err := eachRow(ctx, s, c, op, q, func(v T) error {
		out = append(out, v)
		return nil
	})
	return out, err
}

// count runs a SELECT VALUE COUNT(1) query and sums the partial counts the gateway returns,
// one per physical partition range, possibly over several pages.
func (s *Store) count(ctx context.Context, c *azcosmos.ContainerClient, op string, q sqlQuery) (int, error) {
	total := 0
	err := s.rows(ctx, c, op, q, func(row []byte) error {
		var n int
		if err := json.Unmarshal(row, &n); err != nil {
			return fmt.Errorf("cosmos: %s: %w: count result %q: %w", op, gtc.ErrUnavailable, row, err)
		}
		total += n
		return nil
	})
	return total, err
}

// logQuery writes the request-unit line of GTC_COSMOS_LOG_QUERY_METRICS.
func (s *Store) logQuery(op, text string, charge float64, n int, d time.Duration) {
	if !s.opts.LogQueryMetrics {
		return
	}
	if s.opts.SlowQueriesOnly && charge < s.opts.SlowQueryRU {
		return
	}
	if len(text) > 200 {
		text = text[:200]
	}
	s.log.Info("cosmos query", "op", op, "ru", charge, "items", n, "duration_ms", float64(d.Microseconds())/1000, "query", text)
}
