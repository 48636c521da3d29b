package tagging

import (
	"fmt"
	"slices"
	"strings"
)

// ExclusiveGroup rejects an item that carries more than one value of a schema group flagged
// exclusive. Groups the schema does not know are never exclusive.
type ExclusiveGroup struct {
	groups []string // exclusive group names, sorted
}

// NewExclusiveGroup builds the rule for the exclusive groups of schema.
func NewExclusiveGroup(schema Schema) *ExclusiveGroup {
	v := &ExclusiveGroup{}
	for _, name := range schema.Names() {
		// A name with a colon (only a hand-built schema can have one) is never the group of a
		// tag, so its rule could never fire.
		if schema.Groups[name].Exclusive && !strings.Contains(name, ":") {
			v.groups = append(v.groups, name)
		}
	}
	return v
}

// Name returns "exclusive_group".
func (*ExclusiveGroup) Name() string { return ValidatorExclusiveGroup }

// Validate returns one message per exclusive group with several values in manual ∪ computed,
// in group-name order. Computed tags count too: a schema group that shares its name with a
// computed group sees the computed value. It runs on every write, so a valid tag set is
// checked without allocating.
func (v *ExclusiveGroup) Validate(manual, computed []string) []string {
	var out []string
	for _, g := range v.groups {
		if !severalValues(g, manual, computed) {
			continue
		}
		var values []string
		for _, l := range [2][]string{manual, computed} {
			for _, t := range l {
				if val, ok := groupValue(t, g); ok {
					values = append(values, val)
				}
			}
		}
		slices.Sort(values)
		values = slices.Compact(values)
		quoted := make([]string, len(values))
		for i, val := range values {
			quoted[i] = "'" + val + "'"
		}
		out = append(out, fmt.Sprintf("Group '%s' is exclusive; only one value allowed, got: [%s]", g, strings.Join(quoted, ", ")))
	}
	return out
}

// severalValues reports whether manual ∪ computed holds two different values of group g.
func severalValues(g string, manual, computed []string) bool {
	first, seen := "", false
	for _, l := range [2][]string{manual, computed} {
		for _, t := range l {
			val, ok := groupValue(t, g)
			switch {
			case !ok:
			case !seen:
				first, seen = val, true
			case val != first:
				return true
			}
		}
	}
	return false
}
