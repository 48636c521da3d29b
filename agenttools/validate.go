package agenttools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// Checker checks the input of one tool against its argument schema. The JSON Schema validator
// decides pass or fail; the walker over the same parsed schema words the answer, naming
// every bad field and what it allows, which the validator's first-error messages do not.
// The walker also checks what the validator leaves as annotation (format "uuid"), and the
// per-operation field rules of manage_tags that a flat schema cannot say.
type Checker struct {
	schema   *jsonschema.Schema
	resolved *jsonschema.Resolved
	order    []string // property names in the schema's order
	patterns map[string]*regexp.Regexp
	rules    func(order []string, args map[string]any) []problem
}

// problem is one bad field. unknown marks a key the schema does not know.
type problem struct {
	field, msg string
	unknown    bool
}

// NewChecker parses the argument schema of d. The schema's top level must be an object with
// additionalProperties and no combinators.
func NewChecker(d Definition) (*Checker, error) {
	name, raw := d.Name, d.Schema
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return nil, err
	}
	if s.Type != "object" || s.AdditionalProperties == nil || s.AllOf != nil || s.AnyOf != nil || s.OneOf != nil {
		return nil, errors.New(`the top level must be "type": "object" with additionalProperties and no combinators`)
	}
	rs, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		return nil, err
	}
	order, err := propertyOrder(raw)
	if err != nil {
		return nil, err
	}
	c := &Checker{schema: &s, resolved: rs, order: order, patterns: map[string]*regexp.Regexp{}}
	for _, ps := range s.Properties {
		for _, p := range []*jsonschema.Schema{ps, ps.Items} {
			if p != nil && p.Pattern != "" {
				if c.patterns[p.Pattern], err = regexp.Compile(p.Pattern); err != nil {
					return nil, err
				}
			}
		}
	}
	if name == ToolManageTags {
		c.rules = manageTagsRules
	}
	return c, nil
}

// propertyOrder reads the keys of the top-level "properties" object in document order.
func propertyOrder(raw string) ([]string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &top); err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(top["properties"]))
	if _, err := d.Token(); err != nil { // {
		return nil, err
	}
	var out []string
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return nil, err
		}
		out = append(out, k.(string))
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Check trims the strings of in, checks it, and returns the handler's arguments with the
// defaults applied, or the INVALID_INPUT envelope.
func (c *Checker) Check(in map[string]any) (map[string]any, *ToolResult) {
	v := trimStrings(in).(map[string]any)
	probs := c.walk(v)
	if c.rules != nil {
		named := map[string]bool{}
		for _, p := range probs {
			named[p.field] = true
		}
		for _, p := range c.rules(c.order, v) {
			if !named[p.field] {
				probs = append(probs, p)
			}
		}
	}
	if err := c.resolved.Validate(v); err != nil && len(probs) == 0 {
		// The walker covers every keyword our schemas use; this is the safety net should a
		// schema grow one it does not know.
		probs = append(probs, problem{field: "body", msg: "does not match the schema: " + err.Error()})
	}
	if len(probs) > 0 {
		res := failure(probs)
		return nil, &res
	}
	return c.args(v), nil
}

// failure builds the INVALID_INPUT envelope: one text naming every problem, and the fields.
func failure(probs []problem) ToolResult {
	parts := make([]string, len(probs))
	fields := make([]FieldProblem, len(probs))
	for i, p := range probs {
		if p.unknown {
			parts[i] = "unknown field '" + p.field + "' " + strings.TrimPrefix(p.msg, "unknown field ")
		} else {
			parts[i] = p.field + " " + p.msg
		}
		fields[i] = FieldProblem{Field: p.field, Message: p.msg}
	}
	return ToolFailure(CodeInvalidInput, "Invalid input: "+strings.Join(parts, "; ")+".",
		map[string]any{"fields": fields})
}

// walk finds every problem of v: its properties in schema order (a missing required one at
// its place), then the unknown keys by name.
func (c *Checker) walk(v map[string]any) []problem {
	var probs []problem
	for _, name := range c.order {
		ps := c.schema.Properties[name]
		val, ok := v[name]
		if !ok {
			if slices.Contains(c.schema.Required, name) {
				msg := "is required"
				if len(ps.Enum) > 0 {
					msg += " (one of: " + enumList(ps.Enum) + ")"
				}
				probs = append(probs, problem{field: name, msg: msg})
			}
			continue
		}
		probs = append(probs, c.valueProblems(name, ps, val)...)
	}
	if ap := c.schema.AdditionalProperties; ap != nil && ap.Not != nil {
		var unknown []string
		for k := range v {
			if c.schema.Properties[k] == nil {
				unknown = append(unknown, k)
			}
		}
		slices.Sort(unknown)
		for _, k := range unknown {
			probs = append(probs, problem{field: k, msg: "unknown field (allowed: " + strings.Join(c.order, ", ") + ")", unknown: true})
		}
	}
	return probs
}

// valueProblems checks one value against its property schema: the type first (nothing else
// is said about a value of the wrong type), then the keywords of that type.
func (c *Checker) valueProblems(path string, s *jsonschema.Schema, v any) []problem {
	bad := func(msg string) []problem { return []problem{{field: path, msg: msg}} }
	if s.Type != "" && jsonType(v) != s.Type && !(s.Type == "number" && jsonType(v) == "integer") {
		return bad("must be " + typeWords(s) + " (got " + show(v) + ")")
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return e == v }) {
		return bad("must be one of: " + enumList(s.Enum) + " (got " + show(v) + ")")
	}
	switch v := v.(type) {
	case float64:
		lo, hi := s.Minimum, s.Maximum
		if lo != nil && v < *lo || hi != nil && v > *hi || math.IsNaN(v) {
			switch {
			case lo != nil && hi != nil:
				return bad(fmt.Sprintf("must be between %s and %s (got %s)", num(*lo), num(*hi), show(v)))
			case lo != nil:
				return bad(fmt.Sprintf("must be at least %s (got %s)", num(*lo), show(v)))
			default:
				return bad(fmt.Sprintf("must be at most %s (got %s)", num(*hi), show(v)))
			}
		}
	case string:
		n := utf8.RuneCountInString(v)
		switch {
		case s.MinLength != nil && n < *s.MinLength && *s.MinLength == 1:
			return bad("must not be empty")
		case s.MinLength != nil && n < *s.MinLength:
			return bad(fmt.Sprintf("must be at least %d characters (got %d)", *s.MinLength, n))
		case s.MaxLength != nil && n > *s.MaxLength:
			return bad(fmt.Sprintf("must be at most %d characters (got %d)", *s.MaxLength, n))
		case s.Pattern != "" && !c.patterns[s.Pattern].MatchString(v):
			return bad("must match " + s.Pattern + " (got " + show(v) + ")")
		case s.Format == "uuid" && !uuidRE.MatchString(v):
			return bad("must be a UUID (got " + show(v) + ")")
		}
	case []any:
		if s.MaxItems != nil && len(v) > *s.MaxItems {
			return bad(fmt.Sprintf("must have at most %d entries (got %d)", *s.MaxItems, len(v)))
		}
		if s.MinItems != nil && len(v) < *s.MinItems {
			return bad(fmt.Sprintf("must have at least %d entries (got %d)", *s.MinItems, len(v)))
		}
		var probs []problem
		if s.Items != nil {
			for i, e := range v {
				probs = append(probs, c.valueProblems(path+"["+strconv.Itoa(i)+"]", s.Items, e)...)
			}
		}
		return probs
	}
	return nil
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// jsonType is the JSON Schema type of a decoded value; a whole number is an integer, as
// for the validator.
func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64:
		if _, f := math.Modf(v); f == 0 {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

func typeWords(s *jsonschema.Schema) string {
	switch s.Type {
	case "boolean":
		return "true or false"
	case "integer":
		return "an integer"
	case "number":
		return "a number"
	case "string":
		return "a string"
	case "object":
		return "an object"
	case "array":
		if s.Items != nil && s.Items.Type == "string" {
			return "an array of strings"
		}
		return "an array"
	}
	return s.Type
}

func enumList(values []any) string {
	out := make([]string, len(values))
	for i, e := range values {
		out[i] = fmt.Sprint(e)
	}
	return strings.Join(out, ", ")
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// show writes a value the way the model sent it: strings quoted and cut at 40 characters,
// numbers as numbers, containers by kind.
func show(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		if r := []rune(v); len(r) > 40 {
			v = string(r[:40]) + "…"
		}
		b, _ := json.Marshal(v)
		return string(b)
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return "a number out of range"
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	default:
		return jsonKind(v)
	}
}

// trimStrings returns a copy of v with every string trimmed of surrounding whitespace.
func trimStrings(v any) any {
	switch v := v.(type) {
	case string:
		return strings.TrimSpace(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = trimStrings(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = trimStrings(e)
		}
		return out
	}
	return v
}

// args turns a checked input into the handler's arguments: defaults for absent keys, and
// Go types (string, bool, int, []string).
func (c *Checker) args(v map[string]any) map[string]any {
	out := make(map[string]any, len(c.order))
	for _, name := range c.order {
		ps := c.schema.Properties[name]
		val, ok := v[name]
		if !ok {
			if ps.Default == nil {
				continue
			}
			if err := json.Unmarshal(ps.Default, &val); err != nil {
				continue // Resolve validated every default; not reached
			}
		}
		out[name] = goValue(val)
	}
	return out
}

func goValue(v any) any {
	switch v := v.(type) {
	case float64:
		return int(v)
	case []any:
		out := make([]string, len(v))
		for i, e := range v {
			out[i], _ = e.(string)
		}
		return out
	}
	return v
}

// manageTagsOps lists the fields each manage_tags operation requires and allows
// (see schemaManageTags); dry_run goes with every operation.
var manageTagsOps = map[string]struct{ required, optional []string }{
	"find_and_tag": {[]string{"keyword", "tag"}, []string{"dataset", "status", "tags"}},
	"delete_tag":   {[]string{"tag"}, []string{"dataset"}},
	"merge_tags":   {[]string{"tag_from", "tag_to"}, []string{"dataset"}},
}

// manageTagsRules checks the fields of the chosen operation: a field of another operation is
// refused, never ignored, so a status sent with delete_tag cannot silently widen a deletion.
func manageTagsRules(order []string, v map[string]any) []problem {
	op, _ := v["operation"].(string)
	rule, ok := manageTagsOps[op]
	if !ok {
		return nil // the schema check words a missing or unknown operation
	}
	allowed := append(append([]string{}, rule.required...), rule.optional...)
	allowed = append(allowed, "dry_run")
	var probs []problem
	for _, name := range order {
		_, present := v[name]
		switch {
		case name == "operation" || name == "dry_run":
		case slices.Contains(rule.required, name) && !present:
			probs = append(probs, problem{field: name, msg: "is required for " + op})
		case present && !slices.Contains(allowed, name):
			probs = append(probs, problem{field: name, msg: "is not allowed with " + op + " (allowed: " + strings.Join(allowed, ", ") + ")"})
		}
	}
	return probs
}
