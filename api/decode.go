package api

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

var patchKeys = codec.Keys("computedTags", "tags", "status", "comment", "scenarioId", "etag", "approve", "history",
	"contextEntries", "toolCalls", "expectedTools", "feedback", "metadata", "tracePayload", "plugins", "traceIds",
	"manualTags")

// patchFields are the gtc.ItemPatch fields by the body key they are named after (the field
// name, case aside).
var patchFields = func() map[string]int {
	t := reflect.TypeFor[gtc.ItemPatch]()
	out := map[string]int{}
	for name := range patchKeys {
		if f, ok := t.FieldByNameFunc(func(n string) bool { return strings.EqualFold(n, name) }); ok {
			out[name] = f.Index[0]
		} else if name != "computedTags" && name != "tags" {
			panic("api: gtc.ItemPatch has no field for the PUT key " + name)
		}
	}
	return out
}()

// decodeItemPatch checks a PUT body against the update schema. allowApprove accepts the
// assignment route's approve key. Only schema problems are reported here (422); the field
// semantics are checked after the item is loaded.
func decodeItemPatch(body []byte, allowApprove bool) (*gtc.ItemPatch, error) {
	d, v := codec.Parse(body)
	pt := &gtc.ItemPatch{}
	var root codec.Path
	for m := d.Items(v, root, codec.Object, false); m.Next(); {
		name, known := patchKeys.Name(m.Key)
		if !known || name == "approve" && !allowApprove {
			d.Unknown(root, m.Key)
			continue
		} else if d.OK() {
			pt.Keys = append(pt.Keys, name)
		}
		switch name {
		case "computedTags":
			pt.HasComputedTags = true
		case "tags":
			pt.HasTags = true
		default: // the Opt field of the patch named like the key
			o := reflect.ValueOf(pt).Elem().Field(patchFields[name])
			o.FieldByName("Set").SetBool(true)
			o.FieldByName("Null").SetBool(m.Val.Kind() == codec.Null)
			patchValue(d, name, m.Val, root.Key(name), o.FieldByName("V"))
		}
	}
	return codec.Result(d, pt)
}

// patchValue reads the value of key name of a PUT body into dst. The item's own fields are
// read as an import reads them.
func patchValue(d *codec.Decoder, name string, v codec.Value, p codec.Path, dst reflect.Value) {
	switch name {
	case "status", "etag":
		s, _ := d.Str(v, p, true)
		dst.SetString(s)
	case "approve":
		if dst.SetBool(v.Bool()); v.Kind() != codec.Bool && v.Kind() != codec.Null {
			d.Add(p, codec.MsgExpBoolean)
		}
	case "history":
		h := []gtc.HistoryPatch{}
		for el := d.Items(v, p, codec.Array, true); el.Next(); {
			if hp := historyPatch(d, el.Val, p.Index(el.I)); d.OK() {
				h = append(h, hp)
			}
		}
		dst.Set(reflect.ValueOf(h))
	case "manualTags":
		dst.Set(reflect.ValueOf(append([]string{}, d.Strings(v, p, true, false)...)))
	default:
		d.ItemField(name, v, p, dst)
	}
}

var historyPatchKeys = codec.Keys("role", "msg", "content", "turnId", "stepId", "expectedBehavior", "expected_behavior")

// historyPatch reads one history entry of a PUT body: msg, or content when msg is absent or
// null; expectedBehavior, or its alias expected_behavior when it is absent. The entry's rules
// are checked with the item, so an expected behavior that is not a list of strings is only
// noted.
func historyPatch(d *codec.Decoder, v codec.Value, p codec.Path) (h gtc.HistoryPatch) {
	var content *string
	var eb codec.Value
	hasEB := false
	if !d.Object(v, p, historyPatchKeys, nil) {
		return h
	}
	for m := v.Members(); m.Next(); {
		name, _ := historyPatchKeys.Name(m.Key)
		switch fp := p.Key(name); name {
		case "role":
			h.Role, _ = d.Str(m.Val, fp, true)
		case "msg":
			h.Msg = d.StrPtr(m.Val, fp)
		case "content":
			content = d.StrPtr(m.Val, fp)
		case "turnId":
			h.TurnID = d.StrPtr(m.Val, fp)
		case "stepId":
			h.StepID = d.StrPtr(m.Val, fp)
		case "expectedBehavior", "expected_behavior":
			if !hasEB {
				eb, hasEB = m.Val, name == "expectedBehavior"
			}
		}
	}
	if h.Msg == nil {
		h.Msg = content
	}
	if h.ExpectedBehaviorSet = eb.Kind() != codec.Null; eb.Kind() == codec.Array {
		h.ExpectedBehavior, h.ExpectedBehaviorOK = []string{}, true
		for el := eb.Elems(); h.ExpectedBehaviorOK && el.Next(); {
			if h.ExpectedBehaviorOK = el.Val.Kind() == codec.String; h.ExpectedBehaviorOK {
				h.ExpectedBehavior = append(h.ExpectedBehavior, el.Val.Text())
			}
		}
	}
	return h
}

// required reads the string key of a small body, which must be present and not null.
func required(d *codec.Decoder, m map[string]codec.Value, key string) string {
	v, ok := m[key]
	if !ok {
		d.Add(codec.At(key), codec.MsgRequired)
	}
	s, _ := d.Str(v, codec.At(key), !ok)
	return s
}

// decodeCurationUpdate checks {"instructions": string, "_etag"?: string, "etag"?: string}.
// The token is _etag, else etag, when not blank.
func decodeCurationUpdate(body []byte) (*gtc.CurationUpdate, error) {
	d, m := codec.ParseFields(body, "instructions", "_etag", "etag")
	u := &gtc.CurationUpdate{Instructions: required(d, m, "instructions")}
	for _, key := range []string{"_etag", "etag"} {
		if s, _ := d.Str(m[key], codec.At(key), true); u.Token == "" && strings.TrimSpace(s) != "" {
			u.Token = s
		}
	}
	return codec.Result(d, u)
}

// decodeTagList checks {"tags": [string, …]} (POST and DELETE /v1/tags).
func decodeTagList(body []byte) ([]string, error) {
	d, m := codec.ParseFields(body, "tags")
	if tv, ok := m["tags"]; !ok || tv.Kind() == codec.Null {
		required(d, m, "tags")
		return nil, d.Err()
	}
	return codec.Result(d, d.Strings(m["tags"], codec.At("tags"), false, false))
}

// decodeTagDefinition checks {"tag_key": string, "description": string}; lengths are checked
// by the vocabulary.
func decodeTagDefinition(body []byte) (*gtc.TagDefinitionRequest, error) {
	d, m := codec.ParseFields(body, "tag_key", "description")
	return codec.Result(d, &gtc.TagDefinitionRequest{TagKey: required(d, m, "tag_key"), Description: required(d, m, "description")})
}

// decodeSelfServe checks the optional {"limit": integer} of self-serve; nil body or a
// missing or null limit gives nil (the default applies). A limit below 1 asks for nothing
// and a limit beyond 32 bits is a mistake: both are refused rather than served (values above
// GTC_SELF_SERVE_MAX but within range are clamped by the service).
func decodeSelfServe(body []byte) (*int, error) {
	if body == nil {
		return nil, nil
	}
	d, m := codec.ParseFields(body, "limit")
	if m["limit"].Kind() == codec.Null {
		return codec.Result[*int](d, nil)
	}
	n, ok := d.Integer(m["limit"], codec.At("limit"))
	if ok && n < 1 {
		d.Add(codec.At("limit"), "must be at least 1")
	} else if ok && n > math.MaxInt32 {
		d.Add(codec.At("limit"), fmt.Sprintf("must be at most %d", math.MaxInt32))
	}
	return codec.Result(d, new(int(n)))
}

// decodeAssign checks the optional {"force": boolean} of assign.
func decodeAssign(body []byte) (bool, error) {
	if body == nil {
		return false, nil
	}
	d, m := codec.ParseFields(body, "force")
	if k := m["force"].Kind(); k != codec.Null && k != codec.Bool {
		d.Add(codec.At("force"), codec.MsgExpBoolean)
	}
	return m["force"].Bool(), d.Err()
}

// decodeExportRequest checks the schema of an export request: exact-case keys, no unknown
// key at any level, the JSON types of every value, a non-null status and a known delivery
// mode. Every problem is reported in one 422. An empty body, {} and null mean every default;
// a null member is an absent one, except the status.
func decodeExportRequest(body []byte) (*gtc.ExportRequest, error) {
	req := &gtc.ExportRequest{Mode: gtc.DeliveryAttachment}
	if body == nil {
		return req, nil
	}
	d, v := codec.Parse(body)
	m, filters, delivery := map[string]codec.Value{}, map[string]codec.Value{}, map[string]codec.Value{}
	if v.Kind() == codec.Null || !d.Object(v, codec.Path{}, codec.Keys("format", "filters", "processors", "delivery"), m) {
		return codec.Result(d, req)
	}
	if s, ok := d.Str(m["format"], codec.At("format"), true); ok {
		req.Format = &s
	}
	fp, dp := codec.At("filters"), codec.At("delivery")
	if m["filters"].Kind() != codec.Null && d.Object(m["filters"], fp, codec.Keys("datasetNames", "status"), filters) {
		if names := d.Strings(filters["datasetNames"], fp.Key("datasetNames"), false, false); names != nil {
			req.DatasetNames = &names
		}
		_, set := filters["status"] // a status that is set must not be null
		if s, ok := d.Str(filters["status"], fp.Key("status"), !set); ok {
			req.Status = &s
		}
	}
	if names := d.Strings(m["processors"], codec.At("processors"), false, false); names != nil {
		req.Processors = &names
	}
	if m["delivery"].Kind() != codec.Null && d.Object(m["delivery"], dp, codec.Keys("mode"), delivery) {
		if s, ok := d.Str(delivery["mode"], dp.Key("mode"), true); ok {
			if req.Mode = s; !slices.Contains([]string{gtc.DeliveryAttachment, gtc.DeliveryStream, gtc.DeliveryArtifact}, s) {
				d.Add(dp.Key("mode"), "must be one of: attachment, stream, artifact")
			}
		}
	}
	return codec.Result(d, req)
}

// decodeReleaseRequest reads the body of POST /v1/releases: every problem of shape is listed
// (422); the values are checked when the release is resolved.
func decodeReleaseRequest(body []byte) (*gtc.ReleaseRequest, error) {
	req := &gtc.ReleaseRequest{}
	d, m := codec.ParseFields(body, "name", "datasets", "filters", "splits", "stratifyBy", "formats", "notes")
	if _, set := m["name"]; !set && d.OK() {
		d.Add(codec.At("name"), codec.MsgRequired)
	}
	if s, ok := d.Str(m["name"], codec.At("name"), false); ok {
		req.Name = s
	}
	req.Datasets = d.Strings(m["datasets"], codec.At("datasets"), false, false)
	fp := codec.At("filters")
	filters := map[string]codec.Value{}
	if m["filters"].Kind() != codec.Null && d.Object(m["filters"], fp, codec.Keys("status", "tags", "excludeTags"), filters) {
		_, set := filters["status"]
		if s, ok := d.Str(filters["status"], fp.Key("status"), !set); ok {
			req.Status = &s
		}
		req.Tags = d.Strings(filters["tags"], fp.Key("tags"), false, false)
		req.ExcludeTags = d.Strings(filters["excludeTags"], fp.Key("excludeTags"), false, false)
	}
	sp := codec.At("splits")
	for it := d.Items(m["splits"], sp, codec.Object, true); it.Next(); {
		name := it.Key.String()
		ratio, err := strconv.ParseFloat(it.Val.Text(), 64)
		if it.Val.Kind() != codec.Number || err != nil {
			d.Add(sp.Key(name), "expected a number")
			continue
		}
		req.Splits = append(req.Splits, gtc.Split{Name: name, Ratio: ratio})
	}
	if s, ok := d.Str(m["stratifyBy"], codec.At("stratifyBy"), true); ok {
		req.StratifyBy = s
	}
	req.Formats = d.Strings(m["formats"], codec.At("formats"), false, false)
	if s, ok := d.Str(m["notes"], codec.At("notes"), true); ok {
		req.Notes = s
	}
	return codec.Result(d, req)
}
