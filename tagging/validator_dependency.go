package tagging

import (
	"fmt"
	"slices"
	"strings"
)

// Dependency requires the dependsOn tags of a schema group whenever the item carries any tag
// of that group.
type Dependency struct {
	rules []dependencyRule // by group name, sorted
}

type dependencyRule struct {
	group    string
	requires []string // sorted
}

// NewDependency builds the rule for the groups of schema that declare dependsOn.
func NewDependency(schema Schema) *Dependency {
	v := &Dependency{}
	for _, name := range schema.Names() {
		g := schema.Groups[name]
		// A name with a colon (only a hand-built schema can have one) is never the group of a
		// tag, so its rule could never fire.
		if len(g.DependsOn) == 0 || strings.Contains(name, ":") {
			continue
		}
		// DependsOn is sorted by the groups-file parser; a hand-built schema may not be.
		v.rules = append(v.rules, dependencyRule{group: name, requires: sortedUnique(g.DependsOn)})
	}
	return v
}

// Name returns "dependency".
func (*Dependency) Name() string { return ValidatorDependency }

// Validate returns one message per missing dependency, groups and dependencies in sorted
// order. It runs on every write, so a valid tag set is checked without allocating.
func (v *Dependency) Validate(manual, computed []string) []string {
	var out []string
	for _, r := range v.rules {
		if !hasGroup(r.group, manual, computed) {
			continue
		}
		for _, dep := range r.requires {
			if !slices.Contains(manual, dep) && !slices.Contains(computed, dep) {
				out = append(out, fmt.Sprintf("Tag group '%s' requires '%s' to be present", r.group, dep))
			}
		}
	}
	return out
}
