package agenttools

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	gtc "github.com/gtc-dev/gtc"
)

// SearchItemsData is the data of a search_items answer.
type SearchItemsData struct {
	Total  int          `json:"total"`
	Offset int          `json:"offset"`
	Items  []SearchItem `json:"items"`
}

// SearchItem is one item of a search_items answer; Question is the question snippet.
type SearchItem struct {
	DatasetName  string   `json:"datasetName"`
	Bucket       string   `json:"bucket"`
	ID           string   `json:"id"`
	Status       string   `json:"status"`
	Question     string   `json:"question"`
	ManualTags   []string `json:"manualTags"`
	ComputedTags []string `json:"computedTags"`
	TagCount     int      `json:"tagCount"`
	UpdatedAt    string   `json:"updatedAt"`
	ReviewedAt   *string  `json:"reviewedAt"`
	AssignedTo   *string  `json:"assignedTo"`
}

// rdSortKeys maps sort_by to the store's orderings.
var rdSortKeys = map[string]gtc.SortKey{
	"updatedAt":  gtc.SortUpdatedAt,
	"reviewedAt": gtc.SortReviewedAt,
	"id":         gtc.SortID,
	"tagCount":   gtc.SortTagCount,
}

// SearchItems is the search_items tool: items by a keyword in their conversation and/or by
// dataset, status and tags, in the explorer's orderings, with the exact total. Args: keyword,
// dataset, status, tags, exclude_tags, sort_by (updatedAt|reviewedAt|id|tagCount),
// sort_order (asc|desc), limit, offset.
//
// The keyword matches as in find_and_tag (conversationContains): the store's keyword filter
// narrows the candidates (it also matches ids, dataset names, comments and references), and
// only items with a history msg containing it, in any case, count. Without a keyword the
// store's page and total answer directly.
func (r *Reads) SearchItems(ctx context.Context, args map[string]any) ToolResult {
	const tool = "search_items"
	ctx, cancel := r.begin(ctx)
	defer cancel()
	keyword := strings.ToLower(argString(args, "keyword"))
	dataset := argString(args, "dataset")
	status := gtc.Status(argString(args, "status"))
	sortBy := cmp.Or(argString(args, "sort_by"), "updatedAt")
	sortOrder := cmp.Or(argString(args, "sort_order"), "desc")
	limit := max(1, argInt(args, "limit", 10))
	offset := max(0, argInt(args, "offset", 0))

	tags, res := filterTags(args, "tags")
	if res != nil {
		return *res
	}
	exclude, res := filterTags(args, "exclude_tags")
	if res != nil {
		return *res
	}
	if res := r.knownDataset(ctx, tool, dataset); res != nil {
		return *res
	}
	f := gtc.Filter{AllTags: tags, NoneOfTags: exclude, Keyword: keyword}
	if dataset != "" {
		f.DatasetNames = []string{dataset}
	}
	if status != "" {
		f.Statuses = []gtc.Status{status}
	}
	sortKey, ok := rdSortKeys[sortBy]
	if !ok {
		sortKey = gtc.SortUpdatedAt
	}
	q := gtc.Query{Filter: f, Sort: sortKey, Desc: sortOrder == "desc", Offset: offset, Limit: limit}

	var page []*gtc.Item
	var total int
	if keyword == "" {
		p, err := r.store.Items().Query(ctx, q)
		if err != nil {
			return r.failure(ctx, tool, "search the items", err)
		}
		page, total = p.Items, p.Total
	} else {
		all := q
		all.Offset, all.Limit = 0, gtc.MaxQueryLimit
		for it, err := range r.store.Items().QueryAll(ctx, all) {
			if err != nil {
				return r.failure(ctx, tool, "search the items", err)
			}
			if !conversationContains(it, keyword) {
				continue
			}
			if total >= offset && total < offset+limit {
				page = append(page, it)
			}
			total++
		}
		if err := ctx.Err(); err != nil {
			return r.failure(ctx, tool, "search the items", err)
		}
	}

	data := SearchItemsData{Total: total, Offset: offset, Items: make([]SearchItem, 0, len(page))}
	for _, it := range page {
		data.Items = append(data.Items, rdSearchItem(it))
	}

	var scope []string
	if keyword != "" {
		scope = append(scope, fmt.Sprintf("keyword %q", keyword))
	}
	if dataset != "" {
		scope = append(scope, "dataset "+dataset)
	}
	if status != "" {
		scope = append(scope, "status "+string(status))
	}
	if len(tags) > 0 {
		scope = append(scope, "tags "+strings.Join(tags, ", "))
	}
	if len(exclude) > 0 {
		scope = append(scope, "without tags "+strings.Join(exclude, ", "))
	}
	if len(scope) == 0 {
		scope = append(scope, "no filter")
	}
	scopeText := strings.Join(scope, ", ")
	var t Text
	switch {
	case total == 0:
		t.Line("No items match (%s).", scopeText)
		return ToolResult{Content: t.String(), Data: data}
	case len(page) == 0:
		t.Line("%s (%s); offset %s is past the last one, nothing to show.", rdMatch(total), scopeText, Count(offset))
		return ToolResult{Content: t.String(), Data: data}
	}
	t.Line("%s (%s); showing %s-%s by %s %s:", rdMatch(total), scopeText, Count(offset+1), Count(offset+len(page)), sortBy, sortOrder)
	listed := 0
	for i, it := range page {
		line := rdSearchLine(offset+i+1, it, sortKey == gtc.SortReviewedAt)
		if t.Room() < len(line)+100 {
			break
		}
		t.Line("%s", line)
		listed++
	}
	next := offset + listed
	if rest := total - next; rest > 0 {
		t.Line("… and %d more; call search_items again with offset %d.", rest, next)
	}
	return ToolResult{Content: t.String(), Data: data}
}

// rdMatch is "1 item matches" or "57 items match".
func rdMatch(total int) string {
	if total == 1 {
		return "1 item matches"
	}
	return Count(total) + " items match"
}

// rdSearchLine is one result line: number, key, status, times, snippet and tags.
func rdSearchLine(n int, it *gtc.Item, reviewed bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d. %s/%s [%s] updated %s", n, it.DatasetName, it.ID, it.Status, ContentTime(it.UpdatedAt))
	if reviewed {
		if it.ReviewedAt != nil {
			b.WriteString(" reviewed " + ContentTime(*it.ReviewedAt))
		} else {
			b.WriteString(" reviewed never")
		}
	}
	fmt.Fprintf(&b, " %q manual: %s | computed: %s", Snippet(it), rdTagList(it.ManualTags), rdTagList(it.ComputedTags))
	return b.String()
}

// rdSearchItem is the data of one result.
func rdSearchItem(it *gtc.Item) SearchItem {
	out := SearchItem{
		DatasetName:  it.DatasetName,
		Bucket:       it.Bucket,
		ID:           it.ID,
		Status:       string(it.Status),
		Question:     Snippet(it),
		ManualTags:   rdOrEmpty(slices.Clone(it.ManualTags)),
		ComputedTags: rdOrEmpty(slices.Clone(it.ComputedTags)),
		TagCount:     len(it.Tags()),
		UpdatedAt:    DataTime(it.UpdatedAt),
	}
	if it.ReviewedAt != nil {
		at := DataTime(*it.ReviewedAt)
		out.ReviewedAt = &at
	}
	if it.AssignedTo != nil && *it.AssignedTo != "" {
		who := *it.AssignedTo
		out.AssignedTo = &who
	}
	return out
}
