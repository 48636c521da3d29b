package storetest

import (
	"slices"
	"sort"
	"strings"

	gtc "github.com/gtc-dev/gtc"
)

// The reference model: a slice of items, the filter semantics of gtc.Filter written out
// field by field, and the sort keys of gtc.Derive. Every expected order and total of the
// suite comes from here.

// modelMatch reports whether it matches f.
func modelMatch(it *gtc.Item, f gtc.Filter) bool {
	if len(f.Statuses) > 0 && !slices.Contains(f.Statuses, it.Status) {
		return false
	}
	if len(f.DatasetNames) > 0 && !slices.Contains(f.DatasetNames, it.DatasetName) {
		return false
	}
	if f.DatasetPrefix != "" && !strings.HasPrefix(it.DatasetName, f.DatasetPrefix) {
		return false
	}
	tags := it.Tags()
	for _, t := range f.AllTags {
		if !slices.Contains(tags, t) {
			return false
		}
	}
	for _, t := range f.NoneOfTags {
		if slices.Contains(tags, t) {
			return false
		}
	}
	if f.IDContains != "" && !strings.Contains(it.ID, f.IDContains) {
		return false
	}
	if f.Keyword != "" && !keywordMatch(it, f.Keyword) {
		return false
	}
	refs := gtc.References(it)
	for _, u := range f.RefURLContains {
		if !slices.ContainsFunc(refs, func(r gtc.Reference) bool { return strings.Contains(r.URL, u) }) {
			return false
		}
	}
	if f.AssignedTo != nil {
		assigned := ""
		if it.AssignedTo != nil {
			assigned = *it.AssignedTo
		}
		if assigned != *f.AssignedTo {
			return false
		}
	}
	return true
}

// keywordMatch is the keyword rule: a substring of one lower-cased search field.
func keywordMatch(it *gtc.Item, kw string) bool {
	fields := []string{it.ID, it.DatasetName, it.Comment}
	for _, h := range it.History {
		fields = append(fields, h.Msg)
	}
	for _, r := range gtc.References(it) {
		fields = append(fields, r.URL, r.Title, r.Content, r.KeyExcerpt)
	}
	for _, f := range fields {
		if strings.Contains(strings.ToLower(f), kw) {
			return true
		}
	}
	return false
}

// modelQuery returns every match of f in the order of (k, desc).
func modelQuery(items []*gtc.Item, f gtc.Filter, k gtc.SortKey, desc bool) []*gtc.Item {
	var out []*gtc.Item
	for _, it := range items {
		if modelMatch(it, f) {
			out = append(out, it)
		}
	}
	sortKeys := make(map[*gtc.Item]string, len(out))
	for _, it := range out {
		sortKeys[it] = gtc.Derive(it).SK.Of(k, it.ID)
	}
	sort.SliceStable(out, func(i, j int) bool { return sortKeys[out[i]] < sortKeys[out[j]] })
	if desc {
		slices.Reverse(out)
	}
	return out
}

// modelPage is the slice [offset, offset+limit) of all.
func modelPage(all []*gtc.Item, offset, limit int) []*gtc.Item {
	if offset >= len(all) {
		return nil
	}
	return all[offset:min(len(all), offset+limit)]
}

// modelScan returns the items matching spec in (datasetName, id) byte order.
func modelScan(items []*gtc.Item, spec gtc.ScanSpec) []*gtc.Item {
	var out []*gtc.Item
	for _, it := range items {
		if modelMatch(it, gtc.Filter{Statuses: spec.Statuses, DatasetNames: spec.DatasetNames}) {
			out = append(out, it)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.DatasetName != b.DatasetName {
			return a.DatasetName < b.DatasetName
		}
		return a.ID < b.ID
	})
	return out
}
