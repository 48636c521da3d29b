package tagging

import (
	"fmt"
	"slices"
	"strings"
)

// ExclusiveGroup rejects an item that carries more than one value of a schema group flagged
// exclusive (domain-and-tags.md §4.2). Groups the schema does not know are never exclusive.
type ExclusiveGroup struct {
	groups []string // exclusive group names, sorted
}

// NewExclusiveGroup builds the rule for the exclusive groups of schema.
func NewExclusiveGroup(schema Schema) *ExclusiveGroup {
	v := &ExclusiveGroup{}
	for _, name := range schema.Names() {
		if schema.Groups[name].Exclusive {
			v.groups = append(v.groups, name)
		}
	}
	return v
}

// Name returns "exclusive_group".
func (*ExclusiveGroup) Name() string { return ValidatorExclusiveGroup }

// Validate returns one message per exclusive group with several values in manual ∪ computed,
// in group-name order. Computed tags count too: a schema group that shares its name with a
// computed group sees the computed value.
func (v *ExclusiveGroup) Validate(manual, computed []string) []string {
	ts := newTagSet(manual, computed)
	var out []string
	for _, g := range v.groups {
		values := slices.Clone(ts.byGroup[g])
		if len(values) < 2 {
			continue
		}
		slices.Sort(values)
		quoted := make([]string, len(values))
		for i, val := range values {
			quoted[i] = "'" + val + "'"
		}
		out = append(out, fmt.Sprintf("Group '%s' is exclusive; only one value allowed, got: [%s]", g, strings.Join(quoted, ", ")))
	}
	return out
}
