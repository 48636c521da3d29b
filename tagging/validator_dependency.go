package tagging

import "fmt"

// Dependency requires the dependsOn tags of a schema group whenever the item carries any tag
// of that group (domain-and-tags.md §4.3).
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
		if len(g.DependsOn) == 0 {
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
// order.
func (v *Dependency) Validate(manual, computed []string) []string {
	ts := newTagSet(manual, computed)
	var out []string
	for _, r := range v.rules {
		if len(ts.byGroup[r.group]) == 0 {
			continue
		}
		for _, dep := range r.requires {
			if !ts.has(dep) {
				out = append(out, fmt.Sprintf("Tag group '%s' requires '%s' to be present", r.group, dep))
			}
		}
	}
	return out
}
