package agenttools

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/tagging"
)

// Tag kinds in tag_stats.
const (
	TagKindManual   = "manual"
	TagKindComputed = "computed"
)

// TagStatsData is the data of a tag_stats answer.
type TagStatsData struct {
	ItemsScanned           int       `json:"itemsScanned"`
	DistinctTags           int       `json:"distinctTags"`
	ItemsWithoutManualTags int       `json:"itemsWithoutManualTags"`
	Tags                   []TagStat `json:"tags"`
	Truncated              bool      `json:"truncated"`
}

// TagStat is one tag of a tag_stats answer. InVocabulary is nil for computed tags.
type TagStat struct {
	Tag          string `json:"tag"`
	Kind         string `json:"kind"`
	Count        int    `json:"count"`
	InVocabulary *bool  `json:"inVocabulary"`
}

// TagStats is the tag_stats tool: how many items carry each tag, manual and computed, over
// every status unless status is given. Args: dataset, status, kind (all|manual|computed),
// group, sort_by (count|name), limit. Counting goes through gtc.CountTags, so a store with a
// tag index answers without reading the items.
func (r *Reads) TagStats(ctx context.Context, args map[string]any) ToolResult {
	const tool = "tag_stats"
	ctx, cancel := r.begin(ctx)
	defer cancel()
	dataset := argString(args, "dataset")
	status := gtc.Status(argString(args, "status"))
	kind := cmp.Or(argString(args, "kind"), "all")
	group := strings.TrimSuffix(tagging.NormalizeGroupName(argString(args, "group")), ":")
	byName := argString(args, "sort_by") == "name"
	limit := argInt(args, "limit", 50)

	if res := r.knownDataset(ctx, tool, dataset); res != nil {
		return *res
	}
	spec := gtc.TagCountSpec{DatasetName: dataset, Status: status,
		ComputedKeys: r.reg.StaticKeys(), ComputedPrefixes: r.reg.DynamicPrefixes()}
	counts, err := gtc.CountTags(ctx, r.store.Items(), spec)
	if err != nil {
		return r.failure(ctx, tool, "count the tags", err)
	}
	known, err := r.known(ctx)
	if err != nil {
		return r.failure(ctx, tool, "read the tag vocabulary", err)
	}
	vocab := make(map[string]bool, len(known))
	for _, t := range known {
		vocab[t] = true
	}

	all := make([]TagStat, 0, len(counts.Tags))
	for tag, n := range counts.Tags {
		st := TagStat{Tag: tag, Kind: TagKindManual, Count: n}
		if spec.IsComputed(tag) {
			st.Kind = TagKindComputed
		} else {
			in := vocab[tag]
			st.InVocabulary = &in
		}
		if kind != "all" && st.Kind != kind {
			continue
		}
		if g, _, _ := strings.Cut(tag, ":"); group != "" && g != group {
			continue
		}
		all = append(all, st)
	}
	slices.SortFunc(all, func(a, b TagStat) int {
		if !byName && a.Count != b.Count {
			return cmp.Compare(b.Count, a.Count)
		}
		return strings.Compare(a.Tag, b.Tag)
	})
	shown := all[:min(len(all), limit)]
	data := TagStatsData{
		ItemsScanned:           counts.Items,
		DistinctTags:           len(all),
		ItemsWithoutManualTags: counts.WithoutManualTags,
		Tags:                   rdOrEmpty(shown),
		Truncated:              len(shown) < len(all),
	}

	scope := []string{rdDatasetScope(dataset), rdStatusScope(status)}
	if kind != "all" {
		scope = append(scope, kind+" tags")
	}
	if group != "" {
		scope = append(scope, "group "+group)
	}
	order := "by count"
	if byName {
		order = "by name"
	}
	closing := fmt.Sprintf("Items without manual tags: %s.", Count(counts.WithoutManualTags))
	var t Text
	head := fmt.Sprintf("Tag usage over %s (%s), %s, %s of %s:", rdPlural(counts.Items, "item", "items"),
		strings.Join(scope, ", "), order, Count(len(shown)), rdPlural(len(all), "tag", "tags"))
	if len(all) == 0 {
		head = strings.TrimSuffix(head, ":") + "."
	}
	t.Line("%s", head)
	// Room is kept for the "… and N more" line and the closing line.
	reserve := len(closing) + 80
	listed := 0
	for _, st := range shown {
		line := st.Tag + " " + Count(st.Count) + " (" + st.Kind
		if st.InVocabulary != nil && !*st.InVocabulary {
			line += ", not in vocabulary"
		}
		line += ")"
		if t.Room() < len(line)+reserve {
			break
		}
		t.Line("%s", line)
		listed++
	}
	if rest := len(all) - listed; rest > 0 {
		more := fmt.Sprintf("… and %d more tags", rest)
		if inData := len(shown) - listed; inData > 0 {
			more += fmt.Sprintf(" (%d of them in data.tags)", inData)
		}
		t.Line("%s", more)
	}
	t.Line("%s", closing)
	return ToolResult{Content: t.String(), Data: data}
}

// rdDatasetScope describes a dataset filter: "dataset X" or "all datasets".
func rdDatasetScope(dataset string) string {
	if dataset == "" {
		return "all datasets"
	}
	return "dataset " + dataset
}

// rdStatusScope describes a status filter: "status draft" or "all statuses".
func rdStatusScope(status gtc.Status) string {
	if status == "" {
		return "all statuses"
	}
	return "status " + string(status)
}
