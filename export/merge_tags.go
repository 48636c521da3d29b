package export

import (
	"context"
	"slices"
)

// MergeTags is the merge_tags processor: it sets tags to the sorted, de-duplicated union of
// manualTags and computedTags and leaves both lists as they are. Records from the store
// already carry tags; it matters after a processor has changed the tag lists.
type MergeTags struct{}

// Name is "merge_tags".
func (MergeTags) Name() string { return "merge_tags" }

// Process merges the tag lists of one record.
func (m MergeTags) Process(_ context.Context, rec Record, emit func(Record) error) error {
	if err := m.apply(rec, rec.ID()); err != nil {
		return err
	}
	return emit(rec)
}

func (MergeTags) apply(f fields, id string) error {
	var all []string
	for _, key := range []string{"manualTags", "computedTags"} {
		v, _ := f.get(key)
		tags, ok := stringList(v)
		if !ok {
			return &RecordError{Processor: "merge_tags", RecordID: id, Message: key + " must be a list of strings"}
		}
		all = append(all, tags...)
	}
	slices.Sort(all)
	all = slices.Compact(all)
	out := make([]any, len(all))
	for i, t := range all {
		out[i] = t
	}
	return f.set("tags", out)
}

// stringList reads a record value that must be a list of strings; a missing value is an
// empty list.
func stringList(v any) ([]string, bool) {
	switch x := v.(type) {
	case nil:
		return nil, true
	case []string:
		return x, true
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}
