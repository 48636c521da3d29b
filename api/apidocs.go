package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/gtc-dev/gtc"
)

// The API reference (/docs) is the served OpenAPI document, parsed with kin-openapi and
// rendered with html/template: every operation grouped by tag, with its role from the
// permission table, parameters, request body, answers by status and the error codes each
// answer can carry, then every component schema. Schemas are nested lists with $ref
// resolved; a reference to a schema already being expanded on the way down is named, not
// expanded again.

// textPart is a run of description text; Code marks a `backtick` span.
type textPart struct {
	Text string
	Code bool
}

// richText splits a description into plain runs and `code` runs.
func richText(s string) []textPart {
	if s == "" {
		return nil
	}
	var out []textPart
	for i, part := range strings.Split(s, "`") {
		if part != "" {
			out = append(out, textPart{Text: part, Code: i%2 == 1})
		}
	}
	return out
}

type docsView struct {
	CSS          template.CSS
	Title        string
	Version      string
	OpenAPI      string
	DocumentPath string
	Description  []textPart
	Tags         []docsTag
	Schemas      []docsSchemaDef
}

type docsTag struct {
	Name        string
	Description []textPart
	Ops         []docsOp
}

type docsOp struct {
	Anchor      string
	Method      string
	MethodClass string
	Path        string
	Summary     string
	Description []textPart
	Deprecated  bool
	Permission  bool   // the permission table has the operation
	Role        string // its least role; empty when none is needed
	RoleNote    []textPart
	Params      []docsParam
	Body        *docsBody
	Responses   []docsResponse
}

type docsParam struct {
	Name, In    string
	Required    bool
	Schema      *schemaView
	Description []textPart
}

type docsBody struct {
	Required    bool
	Description []textPart
	Content     []docsMedia
}

type docsMedia struct {
	MediaType string
	Schema    *schemaView
}

type docsResponse struct {
	Status      string
	Description []textPart
	Codes       []string
	Headers     []string
	Content     []docsMedia
}

type docsSchemaDef struct {
	Name   string
	Schema *schemaView
}

// schemaView is one schema as the page shows it.
type schemaView struct {
	Ref      string // the component's name when the schema is a $ref
	Type     string // "object", "string | null", "array", "any of", …
	Facts    []string
	Desc     []textPart
	Cycle    bool // a reference to a schema being expanded above it: named only
	Props    []propView
	Items    *schemaView // an array's items
	Values   *schemaView // the values of a map (additionalProperties with a schema)
	Variants []*schemaView
}

type propView struct {
	Name     string
	Required bool
	Schema   *schemaView
}

// renderDocs parses the served document and renders the reference page.
func (s *Server) renderDocs() ([]byte, error) {
	doc, err := openapi3.NewLoader().LoadFromData(s.document())
	if err != nil {
		return nil, fmt.Errorf("parse the OpenAPI document: %w", err)
	}
	view := docsView{CSS: template.CSS(pageCSS), OpenAPI: doc.OpenAPI, DocumentPath: s.opts.Prefix + "/openapi.json"}
	if doc.Info != nil {
		view.Title, view.Version, view.Description = doc.Info.Title, doc.Info.Version, richText(doc.Info.Description)
	}

	// Tags in the document's order; an operation's first tag places it.
	byTag := map[string]*docsTag{}
	var order []string
	addTag := func(name, desc string) *docsTag {
		if t, ok := byTag[name]; ok {
			return t
		}
		byTag[name] = &docsTag{Name: name, Description: richText(desc)}
		order = append(order, name)
		return byTag[name]
	}
	for _, t := range doc.Tags {
		addTag(t.Name, t.Description)
	}
	paths := doc.Paths.InMatchingOrder()
	slices.Sort(paths)
	for _, path := range paths {
		item := doc.Paths.Value(path)
		for _, method := range docsMethods {
			o := item.GetOperation(method)
			if o == nil {
				continue
			}
			tag := "other"
			if len(o.Tags) > 0 {
				tag = o.Tags[0]
			}
			t := addTag(tag, "")
			t.Ops = append(t.Ops, s.docsOperation(method, path, item, o))
		}
	}
	for _, name := range order {
		if t := byTag[name]; len(t.Ops) > 0 {
			view.Tags = append(view.Tags, *t)
		}
	}

	if doc.Components != nil {
		names := make([]string, 0, len(doc.Components.Schemas))
		for name := range doc.Components.Schemas {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			ref := doc.Components.Schemas[name]
			// Each component is expanded in its own section; the components it refers to
			// are links to theirs.
			view.Schemas = append(view.Schemas, docsSchemaDef{Name: name,
				Schema: newSchemaWalker(false, name).view(&openapi3.SchemaRef{Value: ref.Value})})
		}
	}

	var buf bytes.Buffer
	if err := docsTemplate.ExecuteTemplate(&buf, "docs.html", view); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// docsMethods is the order of an operation's methods on the page.
var docsMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"}

func (s *Server) docsOperation(method, path string, item *openapi3.PathItem, o *openapi3.Operation) docsOp {
	op := docsOp{Method: method, MethodClass: strings.ToLower(method), Path: path, Summary: o.Summary,
		Description: richText(o.Description), Deprecated: o.Deprecated}
	op.Anchor = "op-" + o.OperationID
	if o.OperationID == "" {
		op.Anchor = "op-" + strings.ToLower(method) + strings.NewReplacer("/", "-", "{", "", "}", "").Replace(path)
	}
	if p, ok := permissionOf("route", s.routeName(method, path)); ok {
		op.Permission, op.Role = true, p.Role.String()
		if p.Role == gtc.RoleNone {
			op.Role = ""
		}
		op.RoleNote = richText(p.Note)
	}

	params := append(openapi3.Parameters{}, item.Parameters...)
	params = append(params, o.Parameters...)
	for _, pr := range params {
		if pr == nil || pr.Value == nil {
			continue
		}
		p := pr.Value
		dp := docsParam{Name: p.Name, In: p.In, Required: p.Required, Description: richText(p.Description)}
		if p.Schema != nil {
			dp.Schema = newSchemaWalker(true, "").view(p.Schema)
		}
		op.Params = append(op.Params, dp)
	}

	if o.RequestBody != nil && o.RequestBody.Value != nil {
		rb := o.RequestBody.Value
		op.Body = &docsBody{Required: rb.Required, Description: richText(rb.Description), Content: docsContent(rb.Content, true)}
	}

	if o.Responses != nil {
		statuses := o.Responses.Keys()
		slices.Sort(statuses)
		for _, status := range statuses {
			rr := o.Responses.Value(status)
			if rr == nil || rr.Value == nil {
				continue
			}
			r := rr.Value
			dr := docsResponse{Status: status}
			if r.Description != nil {
				dr.Description = richText(*r.Description)
			}
			isError := status[0] == '4' || status[0] == '5' // "400", "4XX", "500", …
			if isError {
				dr.Codes = errorCodesIn(dr.Description)
			}
			for name := range r.Headers {
				dr.Headers = append(dr.Headers, name)
			}
			slices.Sort(dr.Headers)
			// Error bodies are the shared ErrorResponse family: named, with the schema in its
			// section; success bodies are expanded where they are answered.
			dr.Content = docsContent(r.Content, !isError)
			op.Responses = append(op.Responses, dr)
		}
	}
	return op
}

// docsContent lists a body's media types, in order, with their schemas.
func docsContent(content openapi3.Content, expand bool) []docsMedia {
	types := make([]string, 0, len(content))
	for mt := range content {
		types = append(types, mt)
	}
	slices.Sort(types)
	var out []docsMedia
	for _, mt := range types {
		m := docsMedia{MediaType: mt}
		if mto := content[mt]; mto != nil && mto.Schema != nil {
			m.Schema = newSchemaWalker(expand, "").view(mto.Schema)
		}
		out = append(out, m)
	}
	return out
}

// errorCodesIn returns the error codes a description names in `code` spans, in order,
// once each: the spans that are codes the server answers with.
func errorCodesIn(desc []textPart) []string {
	var out []string
	for _, p := range desc {
		if _, known := statusOf[p.Text]; p.Code && known && !slices.Contains(out, p.Text) {
			out = append(out, p.Text)
		}
	}
	return out
}

// schemaWalker turns schemas into views. With expand, a $ref is shown resolved, except one
// already being expanded above (a recursive schema), which is named only; without it, a $ref
// is named and links to the component's section.
type schemaWalker struct {
	expand bool
	stack  []string
}

// newSchemaWalker starts a walk; self names the component being expanded, if any, so that a
// reference back to it is not expanded again.
func newSchemaWalker(expand bool, self string) *schemaWalker {
	w := &schemaWalker{expand: expand}
	if self != "" {
		w.stack = append(w.stack, self)
	}
	return w
}

// maxSchemaDepth bounds the nesting of an expanded schema, whatever the document holds.
const maxSchemaDepth = 24

const componentPrefix = "#/components/schemas/"

func (w *schemaWalker) view(ref *openapi3.SchemaRef) *schemaView {
	if ref == nil {
		return nil
	}
	v := &schemaView{}
	if ref.Ref != "" {
		v.Ref = strings.TrimPrefix(ref.Ref, componentPrefix)
		if !w.expand || slices.Contains(w.stack, v.Ref) || len(w.stack) >= maxSchemaDepth || ref.Value == nil {
			v.Cycle = w.expand && slices.Contains(w.stack, v.Ref)
			return v
		}
		w.stack = append(w.stack, v.Ref)
		defer func() { w.stack = w.stack[:len(w.stack)-1] }()
	}
	sc := ref.Value
	if sc == nil {
		return v
	}
	v.Type = schemaType(sc)
	v.Facts = schemaFacts(sc)
	v.Desc = richText(sc.Description)
	if len(w.stack) >= maxSchemaDepth {
		return v
	}
	// Nested schemas that are not references count towards the depth too.
	w.stack = append(w.stack, "")
	defer func() { w.stack = w.stack[:len(w.stack)-1] }()

	names := make([]string, 0, len(sc.Properties))
	for name := range sc.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		v.Props = append(v.Props, propView{Name: name, Required: slices.Contains(sc.Required, name), Schema: w.view(sc.Properties[name])})
	}
	if sc.Items != nil {
		v.Items = w.view(sc.Items)
	}
	if sc.AdditionalProperties.Schema != nil {
		v.Values = w.view(sc.AdditionalProperties.Schema)
	}
	for _, alt := range [][]*openapi3.SchemaRef{sc.AllOf, sc.AnyOf, sc.OneOf} {
		for _, a := range alt {
			v.Variants = append(v.Variants, w.view(a))
		}
	}
	return v
}

// schemaType is the type line of a schema: its types joined by |, with the format, or the
// combination it is.
func schemaType(sc *openapi3.Schema) string {
	var t string
	if sc.Type != nil && len(*sc.Type) > 0 {
		t = strings.Join(*sc.Type, " | ")
	}
	if sc.Format != "" {
		t += " (" + sc.Format + ")"
	}
	for _, c := range []struct {
		list openapi3.SchemaRefs
		name string
	}{{sc.AllOf, "all of"}, {sc.AnyOf, "any of"}, {sc.OneOf, "one of"}} {
		if len(c.list) > 0 {
			t = strings.TrimSpace(t + " " + c.name)
		}
	}
	if t == "" && sc.Const == nil && len(sc.Enum) == 0 && len(sc.Properties) == 0 {
		t = "any value"
	}
	return t
}

// schemaFacts are a schema's constraints in words.
func schemaFacts(sc *openapi3.Schema) []string {
	var f []string
	add := func(format string, a ...any) { f = append(f, fmt.Sprintf(format, a...)) }
	if sc.Const != nil {
		add("always %s", jsonText(sc.Const))
	}
	if len(sc.Enum) > 0 {
		vals := make([]string, len(sc.Enum))
		for i, e := range sc.Enum {
			vals[i] = jsonText(e)
		}
		add("one of %s", strings.Join(vals, ", "))
	}
	if sc.Min != nil {
		add("≥ %s", number(*sc.Min))
	}
	if sc.Max != nil {
		add("≤ %s", number(*sc.Max))
	}
	if sc.MinLength > 0 {
		add("at least %d characters", sc.MinLength)
	}
	if sc.MaxLength != nil {
		add("at most %d characters", *sc.MaxLength)
	}
	if sc.MinItems > 0 {
		add("at least %d items", sc.MinItems)
	}
	if sc.MaxItems != nil {
		add("at most %d items", *sc.MaxItems)
	}
	if sc.UniqueItems {
		add("unique items")
	}
	if sc.Pattern != "" {
		add("matches %s", sc.Pattern)
	}
	if sc.Default != nil {
		add("default %s", jsonText(sc.Default))
	}
	if ap := sc.AdditionalProperties.Has; ap != nil && sc.Type != nil && sc.Type.Is("object") {
		if *ap {
			add("other keys allowed")
		} else {
			add("no other keys")
		}
	}
	if sc.ReadOnly {
		add("read-only")
	}
	if sc.Deprecated {
		add("deprecated")
	}
	return f
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func number(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
