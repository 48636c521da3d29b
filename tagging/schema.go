package tagging

import (
	"maps"
	"slices"
)

// GroupSpec is one manual tag group of the tag schema: its
// values, whether they exclude each other, which tags it requires, and its glossary texts.
type GroupSpec struct {
	// Name is the normalized group name (lower-case, whitespace collapsed, no colon).
	Name string
	// Values are the normalized values, sorted and unique.
	Values []string
	// Exclusive means an item may carry at most one value of the group.
	Exclusive bool
	// DependsOn are normalized tags that must be present whenever a tag of the group is;
	// sorted and unique.
	DependsOn []string
	// Description is the group's glossary text; nil when the file gives none.
	Description *string
	// ValueDescriptions maps a value to its glossary text; a value without a text is absent.
	ValueDescriptions map[string]string
}

// HasValue reports whether v is one of the group's values.
func (g GroupSpec) HasValue(v string) bool {
	_, ok := slices.BinarySearch(g.Values, v)
	return ok
}

// Tags returns the group's "group:value" tags, sorted by value.
func (g GroupSpec) Tags() []string {
	out := make([]string, len(g.Values))
	for i, v := range g.Values {
		out[i] = g.Name + ":" + v
	}
	return out
}

// ValueDescription returns the glossary text of value v, or nil when there is none.
func (g GroupSpec) ValueDescription(v string) *string {
	d, ok := g.ValueDescriptions[v]
	if !ok {
		return nil
	}
	return &d
}

// clone returns a deep copy, so callers cannot change a loaded schema behind its back.
func (g GroupSpec) clone() GroupSpec {
	c := g
	c.Values = slices.Clone(g.Values)
	if c.Values == nil {
		c.Values = []string{}
	}
	c.DependsOn = slices.Clone(g.DependsOn)
	if c.DependsOn == nil {
		c.DependsOn = []string{}
	}
	if g.Description != nil {
		d := *g.Description
		c.Description = &d
	}
	c.ValueDescriptions = maps.Clone(g.ValueDescriptions)
	if c.ValueDescriptions == nil {
		c.ValueDescriptions = map[string]string{}
	}
	return c
}

// Schema is the tag schema validators check against: the manual groups by name, plus the
// order in which the groups file first named them (the glossary order).
type Schema struct {
	// Groups maps a group name to its spec.
	Groups map[string]GroupSpec
	// Order lists the group names in order of first appearance in the groups file.
	Order []string
}

// NewSchema builds a schema from groups in the given order; a repeated name keeps the first.
func NewSchema(groups ...GroupSpec) Schema {
	s := Schema{Groups: make(map[string]GroupSpec, len(groups)), Order: make([]string, 0, len(groups))}
	for _, g := range groups {
		if _, dup := s.Groups[g.Name]; dup {
			continue
		}
		s.Groups[g.Name] = g.clone()
		s.Order = append(s.Order, g.Name)
	}
	return s
}

// Group returns the spec of the named group.
func (s Schema) Group(name string) (GroupSpec, bool) {
	g, ok := s.Groups[name]
	return g, ok
}

// Names returns the group names, sorted. Validators visit groups in this order so their
// messages come out in group-name order.
func (s Schema) Names() []string { return slices.Sorted(maps.Keys(s.Groups)) }

// groupValue returns the value of tag when its group (the text before its first colon) is
// g, which must not itself contain a colon.
func groupValue(tag, g string) (string, bool) {
	if len(tag) > len(g) && tag[len(g)] == ':' && tag[:len(g)] == g {
		return tag[len(g)+1:], true
	}
	return "", false
}

// hasGroup reports whether any tag of the lists belongs to group g.
func hasGroup(g string, lists ...[]string) bool {
	for _, l := range lists {
		for _, t := range l {
			if _, ok := groupValue(t, g); ok {
				return true
			}
		}
	}
	return false
}
