package api

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

var historyPatchKeys = codec.Keys("role", "msg", "content", "turnId", "stepId", "expectedBehavior", "expected_behavior")

var patchKeys = codec.Keys("computedTags", "tags", "status", "comment", "scenarioId", "etag", "approve", "history",
	"contextEntries", "toolCalls", "expectedTools", "feedback", "metadata", "tracePayload", "plugins", "traceIds",
	"manualTags")

// decodeItemPatch checks a PUT body against the update schema. allowApprove accepts the
// assignment route's approve key. Only schema problems are reported here (422); the field
// semantics are checked after the item is loaded.
func decodeItemPatch(body []byte, allowApprove bool) (*gtc.ItemPatch, error) {
	v, err := codec.ParseBody(body)
	if err != nil {
		return nil, err
	}
	d := &codec.Decoder{}
	var root codec.Path
	if v.Kind() != codec.Object {
		d.Add(root, codec.MsgExpObject)
		return nil, d.Err()
	}
	pt := &gtc.ItemPatch{}
	for m := v.Members(); m.Next(); {
		name, known := patchKeys.Name(m.Key)
		if !known {
			d.Unknown(root, m.Key)
			continue
		}
		if d.OK() {
			pt.Keys = append(pt.Keys, name)
		}
		fp := root.Key(name)
		val := m.Val
		null := val.Kind() == codec.Null
		switch name {
		case "computedTags":
			pt.HasComputedTags = true
		case "tags":
			pt.HasTags = true
		case "status":
			pt.Status = gtc.Opt[string]{Set: true, Null: null}
			if !null {
				pt.Status.V, _ = d.Str(val, fp, true)
			}
		case "comment":
			pt.Comment = gtc.Opt[string]{Set: true, Null: null}
			pt.Comment.V, _ = d.Str(val, fp, true)
		case "scenarioId":
			pt.ScenarioID = gtc.Opt[string]{Set: true, Null: null}
			pt.ScenarioID.V, _ = d.Str(val, fp, true)
		case "etag":
			pt.ETag = gtc.Opt[string]{Set: true, Null: null}
			pt.ETag.V, _ = d.Str(val, fp, true)
		case "approve":
			if !allowApprove {
				d.Add(fp, codec.MsgUnknownField)
				continue
			}
			pt.Approve = gtc.Opt[bool]{Set: true, Null: null}
			switch val.Kind() {
			case codec.Null:
			case codec.Bool:
				pt.Approve.V = val.Bool()
			default:
				d.Add(fp, codec.MsgExpBoolean)
			}
		case "history":
			pt.History = gtc.Opt[[]gtc.HistoryPatch]{Set: true, Null: null, V: []gtc.HistoryPatch{}}
			switch val.Kind() {
			case codec.Null:
			case codec.Array:
				for el := val.Elems(); el.Next(); {
					if h := historyPatch(d, el.Val, fp.Index(el.I)); d.OK() {
						pt.History.V = append(pt.History.V, h)
					}
				}
			default:
				d.Add(fp, codec.MsgExpArray)
			}
		case "contextEntries":
			pt.ContextEntries = gtc.Opt[[]gtc.ContextEntry]{Set: true, Null: null, V: d.ContextEntries(val, fp)}
		case "toolCalls":
			pt.ToolCalls = gtc.Opt[[]gtc.ToolCall]{Set: true, Null: null, V: d.ToolCalls(val, fp)}
		case "expectedTools":
			pt.ExpectedTools = gtc.Opt[gtc.ExpectedTools]{Set: true, Null: null, V: d.ExpectedTools(val, fp)}
		case "feedback":
			pt.Feedback = gtc.Opt[[]gtc.FeedbackEntry]{Set: true, Null: null, V: d.Feedback(val, fp)}
		case "metadata":
			r, _ := d.RawObject(val, fp)
			pt.Metadata = gtc.Opt[json.RawMessage]{Set: true, Null: null, V: r}
		case "tracePayload":
			r, _ := d.RawObject(val, fp)
			pt.TracePayload = gtc.Opt[json.RawMessage]{Set: true, Null: null, V: r}
		case "plugins":
			pt.Plugins = gtc.Opt[map[string]gtc.PluginPayload]{Set: true, Null: null, V: d.Plugins(val, fp)}
		case "traceIds":
			pt.TraceIDs = gtc.Opt[map[string]string]{Set: true, Null: null, V: d.TraceIDs(val, fp)}
		case "manualTags":
			pt.ManualTags = gtc.Opt[[]string]{Set: true, Null: null, V: []string{}}
			switch val.Kind() {
			case codec.Null:
			case codec.Array:
				for el := val.Elems(); el.Next(); {
					switch el.Val.Kind() {
					case codec.Null:
					case codec.String:
						if d.OK() {
							pt.ManualTags.V = append(pt.ManualTags.V, el.Val.Text())
						}
					default:
						d.Add(fp.Index(el.I), codec.MsgExpString)
					}
				}
			default:
				d.Add(fp, codec.MsgExpArray)
			}
		}
	}
	if err := d.Err(); err != nil {
		return nil, err
	}
	return pt, nil
}

func historyPatch(d *codec.Decoder, v codec.Value, p codec.Path) gtc.HistoryPatch {
	var h gtc.HistoryPatch
	if !d.Object(v, p, historyPatchKeys) {
		return h
	}
	var msg, content *string
	var eb, ebAlias codec.Value
	var hasEB, hasEBAlias bool
	for m := v.Members(); m.Next(); {
		name, _ := historyPatchKeys.Name(m.Key)
		fp := p.Key(name)
		switch name {
		case "role":
			if s, ok := d.Str(m.Val, fp, true); ok {
				h.Role = s
			}
		case "msg":
			msg, _ = d.StrPtr(m.Val, fp)
		case "content":
			content, _ = d.StrPtr(m.Val, fp)
		case "turnId":
			h.TurnID, _ = d.StrPtr(m.Val, fp)
		case "stepId":
			h.StepID, _ = d.StrPtr(m.Val, fp)
		case "expectedBehavior":
			eb, hasEB = m.Val, true
		case "expected_behavior":
			ebAlias, hasEBAlias = m.Val, true
		}
	}
	h.Msg = msg
	if h.Msg == nil {
		h.Msg = content
	}
	if !hasEB {
		eb, hasEB = ebAlias, hasEBAlias
	}
	if hasEB && eb.Kind() != codec.Null {
		h.ExpectedBehaviorSet = true
		if eb.Kind() == codec.Array {
			h.ExpectedBehaviorOK = true
			h.ExpectedBehavior = []string{}
			for el := eb.Elems(); el.Next(); {
				if el.Val.Kind() != codec.String {
					h.ExpectedBehaviorOK = false
					break
				}
				h.ExpectedBehavior = append(h.ExpectedBehavior, el.Val.Text())
			}
		}
	}
	return h
}

// --- curation instructions -----------------------------------------------------------------

// decodeCurationUpdate checks {"instructions": string, "_etag"?: string, "etag"?: string}.
func decodeCurationUpdate(body []byte) (*gtc.CurationUpdate, error) {
	v, err := codec.ParseBody(body)
	if err != nil {
		return nil, err
	}
	d := &codec.Decoder{}
	if !d.Object(v, codec.Path{}, codec.Keys("instructions", "_etag", "etag")) {
		return nil, d.Err()
	}
	u := &gtc.CurationUpdate{}
	iv, ok := v.Get("instructions")
	if !ok {
		d.Add(codec.At("instructions"), codec.MsgRequired)
	} else if s, ok := d.Str(iv, codec.At("instructions"), false); ok {
		u.Instructions = s
	}
	var tok1, tok2 string
	if t, ok := v.Get("_etag"); ok {
		tok1, _ = d.Str(t, codec.At("_etag"), true)
	}
	if t, ok := v.Get("etag"); ok {
		tok2, _ = d.Str(t, codec.At("etag"), true)
	}
	if err := d.Err(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(tok1) != "" {
		u.Token = tok1
	} else if strings.TrimSpace(tok2) != "" {
		u.Token = tok2
	}
	return u, nil
}

// --- tag vocabulary bodies -----------------------------------------------------------------

// decodeTagList checks {"tags": [string, …]} (POST and DELETE /v1/tags).
func decodeTagList(body []byte) ([]string, error) {
	v, err := codec.ParseBody(body)
	if err != nil {
		return nil, err
	}
	d := &codec.Decoder{}
	if !d.Object(v, codec.Path{}, codec.Keys("tags")) {
		return nil, d.Err()
	}
	tv, ok := v.Get("tags")
	if !ok {
		d.Add(codec.At("tags"), codec.MsgRequired)
		return nil, d.Err()
	}
	if tv.Kind() == codec.Null {
		d.Add(codec.At("tags"), codec.MsgNotNull)
		return nil, d.Err()
	}
	tags, _ := d.StringList(tv, codec.At("tags"))
	if err := d.Err(); err != nil {
		return nil, err
	}
	return tags, nil
}

// decodeTagDefinition checks {"tag_key": string, "description": string}; lengths are checked
// by the vocabulary.
func decodeTagDefinition(body []byte) (*gtc.TagDefinitionRequest, error) {
	v, err := codec.ParseBody(body)
	if err != nil {
		return nil, err
	}
	d := &codec.Decoder{}
	if !d.Object(v, codec.Path{}, codec.Keys("tag_key", "description")) {
		return nil, d.Err()
	}
	r := &gtc.TagDefinitionRequest{}
	for _, k := range []string{"tag_key", "description"} {
		fv, ok := v.Get(k)
		if !ok {
			d.Add(codec.At(k), codec.MsgRequired)
			continue
		}
		s, _ := d.Str(fv, codec.At(k), false)
		if k == "tag_key" {
			r.TagKey = s
		} else {
			r.Description = s
		}
	}
	if err := d.Err(); err != nil {
		return nil, err
	}
	return r, nil
}

// --- assignment bodies ---------------------------------------------------------------------

// decodeSelfServe checks the optional {"limit": integer} of self-serve; nil body or a
// missing or null limit gives nil (the default applies). A limit below 1 asks for nothing
// and a limit beyond 32 bits is a mistake: both are refused rather than served (values above
// GTC_SELF_SERVE_MAX but within range are clamped by the service).
func decodeSelfServe(body []byte) (*int, error) {
	if body == nil {
		return nil, nil
	}
	v, err := codec.ParseBody(body)
	if err != nil {
		return nil, err
	}
	d := &codec.Decoder{}
	if !d.Object(v, codec.Path{}, codec.Keys("limit")) {
		return nil, d.Err()
	}
	lv, ok := v.Get("limit")
	if !ok || lv.Kind() == codec.Null {
		return nil, d.Err()
	}
	n, ok := d.Integer(lv, codec.At("limit"))
	switch {
	case ok && n < 1:
		d.Add(codec.At("limit"), "must be at least 1")
	case ok && n > math.MaxInt32:
		d.Add(codec.At("limit"), fmt.Sprintf("must be at most %d", math.MaxInt32))
	}
	if err := d.Err(); err != nil {
		return nil, err
	}
	limit := int(n)
	return &limit, nil
}

// decodeAssign checks the optional {"force": boolean} of assign.
func decodeAssign(body []byte) (bool, error) {
	if body == nil {
		return false, nil
	}
	v, err := codec.ParseBody(body)
	if err != nil {
		return false, err
	}
	d := &codec.Decoder{}
	if !d.Object(v, codec.Path{}, codec.Keys("force")) {
		return false, d.Err()
	}
	force := false
	if fv, ok := v.Get("force"); ok && fv.Kind() != codec.Null {
		if fv.Kind() != codec.Bool {
			d.Add(codec.At("force"), codec.MsgExpBoolean)
		} else {
			force = fv.Bool()
		}
	}
	return force, d.Err()
}
