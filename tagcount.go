package gtc

import (
	"context"
	"strings"
)

// TagCountSpec selects the items whose tags are counted and says which tags are computed: a
// tag equal to one of ComputedKeys or starting with one of ComputedPrefixes is computed,
// every other tag is manual. The root knows no plugins, so the caller passes what its plugin
// registry reserves.
type TagCountSpec struct {
	DatasetName      string // "" = every dataset
	Status           Status // "" = every status
	ComputedKeys     []string
	ComputedPrefixes []string
}

// IsComputed reports whether tag is computed under the spec.
func (s TagCountSpec) IsComputed(tag string) bool {
	for _, k := range s.ComputedKeys {
		if tag == k {
			return true
		}
	}
	for _, p := range s.ComputedPrefixes {
		if strings.HasPrefix(tag, p) {
			return true
		}
	}
	return false
}

// TagCounts is what CountTags finds over the selected items.
type TagCounts struct {
	// Items is the number of selected items.
	Items int
	// WithoutManualTags counts the selected items none of whose tags (manualTags ∪
	// computedTags) is manual under the spec: an item carries a manual tag exactly when it
	// would be counted under one in Tags.
	WithoutManualTags int
	// Tags maps every tag of manualTags ∪ computedTags to the number of selected items
	// carrying it; never nil.
	Tags map[string]int
}

// TagCounter is implemented by item stores that count tags from an index instead of reading
// every item. CountTags uses it when the store offers it and scans the items otherwise; both
// give the same answer.
type TagCounter interface {
	CountTags(ctx context.Context, spec TagCountSpec) (TagCounts, error)
}

// tagCountScanPage is the batch size of the scanning fallback.
const tagCountScanPage = MaxQueryLimit

// CountTags counts tags over the items spec selects, through the store's TagCounter when it
// has one.
func CountTags(ctx context.Context, s ItemStore, spec TagCountSpec) (TagCounts, error) {
	if tc, ok := s.(TagCounter); ok {
		return tc.CountTags(ctx, spec)
	}
	return CountTagsByScan(ctx, s, spec)
}

// CountTagsByScan is the portable CountTags: one scan over the selected items in the order
// cheapest for the store. Stores test their TagCounter against it.
func CountTagsByScan(ctx context.Context, s ItemStore, spec TagCountSpec) (TagCounts, error) {
	scan := ScanSpec{Order: AnyOrder}
	if spec.DatasetName != "" {
		scan.DatasetNames = []string{spec.DatasetName}
	}
	if spec.Status != "" {
		scan.Statuses = []Status{spec.Status}
	}
	out := TagCounts{Tags: map[string]int{}}
	cursor := ""
	for {
		page, err := s.Scan(ctx, scan, cursor, tagCountScanPage)
		if err != nil {
			return TagCounts{}, err
		}
		for _, it := range page.Items {
			out.Items++
			manual := false
			for _, t := range it.Tags() {
				out.Tags[t]++
				if !manual && !spec.IsComputed(t) {
					manual = true
				}
			}
			if !manual {
				out.WithoutManualTags++
			}
		}
		if page.Next == "" {
			return out, nil
		}
		cursor = page.Next
	}
}
