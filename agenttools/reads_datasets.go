package agenttools

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	gtc "github.com/gtc-dev/gtc"
)

// DatasetStatsData is the data of a dataset_stats answer.
type DatasetStatsData struct {
	Totals    StatusTotals   `json:"totals"`
	Datasets  []DatasetStats `json:"datasets"`
	Truncated bool           `json:"truncated"`
}

// StatusTotals counts items by status.
type StatusTotals struct {
	Draft    int `json:"draft"`
	Approved int `json:"approved"`
	Skipped  int `json:"skipped"`
	Deleted  int `json:"deleted"`
	Total    int `json:"total"`
}

// add counts n items of status st.
func (s *StatusTotals) add(st gtc.Status, n int) {
	switch st {
	case gtc.StatusDraft:
		s.Draft += n
	case gtc.StatusApproved:
		s.Approved += n
	case gtc.StatusSkipped:
		s.Skipped += n
	case gtc.StatusDeleted:
		s.Deleted += n
	}
	s.Total += n
}

// text is "draft 500, approved 250, skipped 40, deleted 22".
func (s StatusTotals) text() string {
	return fmt.Sprintf("draft %s, approved %s, skipped %s, deleted %s",
		Count(s.Draft), Count(s.Approved), Count(s.Skipped), Count(s.Deleted))
}

// DatasetStats is one dataset of a dataset_stats answer. LastUpdatedAt is nil only when the
// dataset lost its last item while it was being counted.
type DatasetStats struct {
	DatasetName string `json:"datasetName"`
	StatusTotals
	LastUpdatedAt *string `json:"lastUpdatedAt"`

	lastUpdated time.Time
}

// DatasetStats is the dataset_stats tool: item counts by status per dataset, the total and
// when an item was last updated. Args: dataset, sort_by (name|total|updatedAt), limit. Each
// dataset costs four indexed counts and one single-item page.
func (r *Reads) DatasetStats(ctx context.Context, args map[string]any) ToolResult {
	const tool = "dataset_stats"
	ctx, cancel := r.begin(ctx)
	defer cancel()
	dataset := argString(args, "dataset")
	sortBy := cmp.Or(argString(args, "sort_by"), "name")
	limit := argInt(args, "limit", 50)

	items := r.store.Items()
	names, err := items.Datasets(ctx)
	if err != nil {
		return r.failure(ctx, tool, "list the datasets", err)
	}
	if res := unknownDataset(dataset, names); res != nil {
		return *res
	}
	if dataset != "" {
		names = []string{dataset}
	}
	all := make([]DatasetStats, 0, len(names))
	var totals StatusTotals
	for _, name := range names {
		ds := DatasetStats{DatasetName: name}
		for _, st := range gtc.Statuses {
			n, err := items.Count(ctx, gtc.Filter{DatasetNames: []string{name}, Statuses: []gtc.Status{st}})
			if err != nil {
				return r.failure(ctx, tool, "count the items of dataset "+name, err)
			}
			ds.add(st, n)
			totals.add(st, n)
		}
		page, err := items.Query(ctx, gtc.Query{Filter: gtc.Filter{DatasetNames: []string{name}}, Sort: gtc.SortUpdatedAt, Desc: true, Limit: 1})
		if err != nil {
			return r.failure(ctx, tool, "find the last update of dataset "+name, err)
		}
		if len(page.Items) > 0 {
			ds.lastUpdated = page.Items[0].UpdatedAt
			at := DataTime(ds.lastUpdated)
			ds.LastUpdatedAt = &at
		}
		all = append(all, ds)
	}
	slices.SortStableFunc(all, func(a, b DatasetStats) int {
		switch sortBy {
		case "total":
			if c := cmp.Compare(b.Total, a.Total); c != 0 {
				return c
			}
		case "updatedAt":
			if c := b.lastUpdated.Compare(a.lastUpdated); c != 0 {
				return c
			}
		}
		return strings.Compare(a.DatasetName, b.DatasetName)
	})
	shown := all[:min(len(all), limit)]
	data := DatasetStatsData{Totals: totals, Datasets: rdOrEmpty(shown), Truncated: len(shown) < len(all)}

	var t Text
	head := fmt.Sprintf("%s, %s (%s)", rdPlural(len(all), "dataset", "datasets"), rdPlural(totals.Total, "item", "items"), totals.text())
	if len(all) > 0 {
		head += ":"
	} else {
		head += "."
	}
	t.Line("%s", head)
	listed := 0
	for _, ds := range shown {
		line := fmt.Sprintf("%s: %s (%s), last updated %s", ds.DatasetName, rdPlural(ds.Total, "item", "items"), ds.text(), rdContentTime(ds.lastUpdated))
		if t.Room() < len(line)+60 {
			break
		}
		t.Line("%s", line)
		listed++
	}
	if rest := len(all) - listed; rest > 0 {
		more := fmt.Sprintf("… and %d more datasets", rest)
		if inData := len(shown) - listed; inData > 0 {
			more += fmt.Sprintf(" (%d of them in data.datasets)", inData)
		}
		t.Line("%s", more)
	}
	return ToolResult{Content: t.String(), Data: data}
}

// rdContentTime shows a time for a text, "never" for the zero time.
func rdContentTime(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return ContentTime(t)
}
