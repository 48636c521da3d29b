package tagging

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
)

//go:embed default_tag_groups.json
var defaultGroupsJSON []byte

// BuiltinGroupsSource names the embedded default in messages, where a file path would be.
const BuiltinGroupsSource = "built-in default"

// Groups is a parsed manual tag groups file (GTC_MANUAL_TAGS_CONFIG_PATH): the only source
// of the tag schema and of the manual part of the glossary. It is immutable; every accessor
// returns copies.
type Groups struct {
	source   string
	specs    []GroupSpec // merged, in order of first appearance
	warnings []string
}

// GroupsOption configures LoadGroups and ParseGroups.
type GroupsOption func(*groupsConfig)

type groupsConfig struct{ logger *slog.Logger }

// WithGroupsLogger sends the warnings about skipped entries to logger (default: discarded;
// they are always available from Groups.Warnings).
func WithGroupsLogger(logger *slog.Logger) GroupsOption {
	return func(c *groupsConfig) {
		if logger != nil {
			c.logger = logger
		}
	}
}

// LoadGroups reads the groups file at path; "" means the built-in default of six groups.
// A missing, unreadable or malformed file, a "manualTagGroups" value that is not an array and
// an invalid "dependsOn" entry are errors naming the path; bad entries inside the file are
// skipped with a warning.
func LoadGroups(path string, opts ...GroupsOption) (*Groups, error) {
	if path == "" {
		return ParseGroups(defaultGroupsJSON, BuiltinGroupsSource, opts...)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("manual tag groups file '%s': %w", path, err)
	}
	return ParseGroups(data, path, opts...)
}

// ParseGroups parses the content of a groups file; source names it in messages.
func ParseGroups(data []byte, source string, opts ...GroupsOption) (*Groups, error) {
	cfg := groupsConfig{logger: discardLogger()}
	for _, o := range opts {
		o(&cfg)
	}
	p := groupsParser{source: source, logger: cfg.logger, index: map[string]int{}}
	if err := p.parse(data); err != nil {
		return nil, fmt.Errorf("manual tag groups file '%s': %w", source, err)
	}
	return &Groups{source: source, specs: p.specs, warnings: p.warnings}, nil
}

// Source is the path the groups came from, or BuiltinGroupsSource.
func (g *Groups) Source() string { return g.source }

// Groups returns the merged groups in file order (order of first appearance).
func (g *Groups) Groups() []GroupSpec {
	out := make([]GroupSpec, len(g.specs))
	for i, s := range g.specs {
		out[i] = s.clone()
	}
	return out
}

// Schema returns the tag schema the validators use.
func (g *Groups) Schema() Schema { return NewSchema(g.specs...) }

// AllowedTags returns every "group:value" of the groups, sorted and unique.
func (g *Groups) AllowedTags() []string {
	var out []string
	for _, s := range g.specs {
		out = append(out, s.Tags()...)
	}
	return sortedUnique(out)
}

// Warnings returns one message per entry skipped while parsing, in file order.
func (g *Groups) Warnings() []string { return slices.Clone(g.warnings) }

// groupsParser holds the state of one parse: the merged groups and the warnings so far.
type groupsParser struct {
	source   string
	logger   *slog.Logger
	specs    []GroupSpec
	index    map[string]int // group name → position in specs
	warnings []string
}

func (p *groupsParser) warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.warnings = append(p.warnings, msg)
	p.logger.LogAttrs(context.Background(), slog.LevelWarn, "manual tag groups file: entry skipped",
		slog.String("source", p.source), slog.String("problem", msg))
}

func (p *groupsParser) parse(data []byte) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if top == nil {
		return fmt.Errorf("invalid JSON: the document must be an object")
	}
	raw, ok := top["manualTagGroups"]
	var entries []json.RawMessage
	if !ok || isNull(raw) || json.Unmarshal(raw, &entries) != nil {
		return fmt.Errorf(`"manualTagGroups" must be an array`)
	}
	for i, e := range entries {
		if err := p.entry(i, e); err != nil {
			return err
		}
	}
	return nil
}

// entry parses one group entry and merges it into the groups seen so far. Only a bad
// dependsOn is an error: it is configuration the validators rely on, not data.
func (p *groupsParser) entry(i int, raw json.RawMessage) error {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		p.warn("manualTagGroups[%d]: not an object", i)
		return nil
	}
	var rawName string
	if json.Unmarshal(obj["group"], &rawName) != nil || strings.TrimSpace(rawName) == "" {
		p.warn("manualTagGroups[%d]: \"group\" must be a non-blank string", i)
		return nil
	}
	name := NormalizeGroupName(rawName)
	if strings.Contains(name, ":") {
		p.warn("manualTagGroups[%d]: group name '%s' must not contain ':'", i, rawName)
		return nil
	}

	deps, err := p.dependsOn(name, obj["dependsOn"])
	if err != nil {
		return err
	}

	spec := GroupSpec{Name: name, ValueDescriptions: map[string]string{}, DependsOn: deps}
	if d, ok := obj["description"]; ok && !isNull(d) {
		var s string
		if json.Unmarshal(d, &s) == nil {
			spec.Description = &s
		} else {
			p.warn("manualTagGroups[%d] (group '%s'): \"description\" is not a string; ignored", i, name)
		}
	}
	if x, ok := obj["mutuallyExclusive"]; ok && !isNull(x) {
		if json.Unmarshal(x, &spec.Exclusive) != nil {
			p.warn("manualTagGroups[%d] (group '%s'): \"mutuallyExclusive\" is not a boolean; treated as false", i, name)
		}
	}
	spec.Values = p.values(i, name, obj["tags"], spec.ValueDescriptions)
	if len(spec.Values) == 0 {
		p.warn("manualTagGroups[%d] (group '%s'): no valid tags; group skipped", i, name)
		return nil
	}
	p.merge(spec)
	return nil
}

// dependsOn parses and normalizes the dependsOn list of group name.
func (p *groupsParser) dependsOn(name string, raw json.RawMessage) ([]string, error) {
	if raw == nil || isNull(raw) {
		return []string{}, nil
	}
	var entries []json.RawMessage
	if json.Unmarshal(raw, &entries) != nil {
		return nil, fmt.Errorf("group '%s': \"dependsOn\" must be an array of tags", name)
	}
	out := make([]string, 0, len(entries))
	for j, e := range entries {
		var s string
		if isNull(e) || json.Unmarshal(e, &s) != nil {
			return nil, fmt.Errorf("group '%s': dependsOn[%d] must be a string", name, j)
		}
		t, err := Normalize(s)
		if err != nil {
			return nil, fmt.Errorf("group '%s': invalid dependsOn entry: %w", name, err)
		}
		out = append(out, t)
	}
	return sortedUnique(out), nil
}

// values parses the tags of group name, recording value descriptions in descs; it returns
// the sorted, unique values.
func (p *groupsParser) values(i int, name string, raw json.RawMessage, descs map[string]string) []string {
	if raw == nil || isNull(raw) {
		return nil
	}
	var entries []json.RawMessage
	if json.Unmarshal(raw, &entries) != nil {
		p.warn("manualTagGroups[%d] (group '%s'): \"tags\" is not an array", i, name)
		return nil
	}
	var values []string
	for j, e := range entries {
		value, desc, ok := p.tagEntry(i, j, name, e)
		if !ok {
			continue
		}
		tag, err := Normalize(name + ":" + value)
		if err != nil {
			p.warn("manualTagGroups[%d].tags[%d] (group '%s'): %s", i, j, name, err)
			continue
		}
		_, v, _ := strings.Cut(tag, ":")
		values = append(values, v)
		if _, seen := descs[v]; !seen && desc != nil {
			descs[v] = *desc
		}
	}
	return sortedUnique(values)
}

// tagEntry reads one element of "tags": a string, or an object with a string "value" and an
// optional string "description".
func (p *groupsParser) tagEntry(i, j int, name string, raw json.RawMessage) (value string, desc *string, ok bool) {
	t := bytes.TrimSpace(raw)
	switch {
	case len(t) > 0 && t[0] == '"':
		if json.Unmarshal(t, &value) != nil {
			p.warn("manualTagGroups[%d].tags[%d] (group '%s'): not a string", i, j, name)
			return "", nil, false
		}
	case len(t) > 0 && t[0] == '{':
		var obj map[string]json.RawMessage
		if json.Unmarshal(t, &obj) != nil {
			p.warn("manualTagGroups[%d].tags[%d] (group '%s'): not an object", i, j, name)
			return "", nil, false
		}
		v, has := obj["value"]
		if !has || isNull(v) || json.Unmarshal(v, &value) != nil {
			p.warn("manualTagGroups[%d].tags[%d] (group '%s'): \"value\" must be a string", i, j, name)
			return "", nil, false
		}
		if d, has := obj["description"]; has && !isNull(d) {
			var s string
			if json.Unmarshal(d, &s) == nil {
				desc = &s
			} else {
				p.warn("manualTagGroups[%d].tags[%d] (group '%s'): \"description\" is not a string; ignored", i, j, name)
			}
		}
	default:
		p.warn("manualTagGroups[%d].tags[%d] (group '%s'): must be a string or an object", i, j, name)
		return "", nil, false
	}
	if strings.TrimSpace(value) == "" {
		p.warn("manualTagGroups[%d].tags[%d] (group '%s'): blank value", i, j, name)
		return "", nil, false
	}
	return value, desc, true
}

// merge folds spec into an earlier group of the same name, or appends it: values and
// dependsOn are unioned, exclusivity OR-ed, the first description kept.
func (p *groupsParser) merge(spec GroupSpec) {
	at, ok := p.index[spec.Name]
	if !ok {
		p.index[spec.Name] = len(p.specs)
		p.specs = append(p.specs, spec)
		return
	}
	g := &p.specs[at]
	g.Values = unionSorted(g.Values, spec.Values)
	g.DependsOn = unionSorted(g.DependsOn, spec.DependsOn)
	g.Exclusive = g.Exclusive || spec.Exclusive
	if g.Description == nil {
		g.Description = spec.Description
	}
	for v, d := range spec.ValueDescriptions {
		if _, seen := g.ValueDescriptions[v]; !seen {
			g.ValueDescriptions[v] = d
		}
	}
}

func unionSorted(a, b []string) []string {
	return sortedUnique(append(slices.Clone(a), b...))
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }
