package codec

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gtc-dev/gtc"
)

// Standard schema messages.
const (
	MsgUnknownField = "unknown field"
	MsgRequired     = "required"
	MsgNotNull      = "must not be null"
	MsgExpString    = "expected string"
	MsgExpInteger   = "expected integer"
	MsgExpBoolean   = "expected boolean"
	MsgExpArray     = "expected array"
	MsgExpObject    = "expected object"
	MsgUUID         = "must be a UUID"
	MsgDateTime     = "must be an RFC 3339 date-time"
)

// Parse parses body for a new Decoder. A body that is not JSON reads as null, and its syntax
// error (a 422 INVALID_JSON naming the body) is the decoder's only problem.
func Parse(body []byte) (*Decoder, Value) {
	v, err := parseJSON(body)
	if err == nil {
		return &Decoder{}, v
	}
	msg := syntaxMessage(err)
	return &Decoder{fatal: &gtc.Error{Code: gtc.CodeInvalidJSON, Message: "Request validation failed: body: " + msg,
		Fields: []gtc.FieldError{{Field: "body", Message: msg}}}}, Value{}
}

// ParseBody parses a request body as JSON. A syntax error is a 422 INVALID_JSON naming the
// body.
func ParseBody(body []byte) (Value, error) {
	d, v := Parse(body)
	return v, d.Err()
}

// Decoder collects the problems of a body in document order. It lists the first
// gtc.MaxFieldErrors and only counts the others, so a body with millions of problems costs no
// more than one with a hundred.
type Decoder struct {
	errs  []gtc.FieldError
	more  int
	fatal error // the body is not JSON: its only problem
	// scratch receives the items of an import once the body has a problem.
	scratch     gtc.ImportEntry
	scratchItem gtc.Item
}

func (d *Decoder) Add(p Path, msg string) {
	switch {
	case d.fatal != nil:
	case len(d.errs) >= gtc.MaxFieldErrors:
		d.more++
	default:
		d.errs = append(d.errs, gtc.FieldError{Field: p.String(), Message: msg})
	}
}

// Unknown reports an unknown key of the object at p.
func (d *Decoder) Unknown(p Path, k Key) { d.Add(p.KeyAt(k), MsgUnknownField) }

// Problems counts every problem found so far, listed or not.
func (d *Decoder) Problems() int { return len(d.errs) + d.more }

// OK reports whether no problem was found yet. Once one was, the body is refused whatever
// follows, so the decoders stop building what they would return and only look for the
// other problems.
func (d *Decoder) OK() bool { return d.Problems() == 0 && d.fatal == nil }

// Err is the 422 listing the problems, or nil.
func (d *Decoder) Err() error {
	if d.fatal != nil || d.OK() {
		return d.fatal
	}
	return gtc.ValidationErrorMore(d.errs, d.more)
}

// Result is v, or the 422 listing the problems when there are some.
func Result[T any](d *Decoder, v T) (T, error) {
	if err := d.Err(); err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// Str reads a string; null gives ok=false, a problem unless nullable.
func (d *Decoder) Str(v Value, p Path, nullable bool) (s string, ok bool) {
	switch {
	case v.kind == String:
		return v.Text(), true
	case v.kind != Null:
		d.Add(p, MsgExpString)
	case !nullable:
		d.Add(p, MsgNotNull)
	}
	return "", false
}

// StrPtr reads a string or null (nil).
func (d *Decoder) StrPtr(v Value, p Path) *string {
	if s, ok := d.Str(v, p, true); ok {
		return &s
	}
	return nil
}

func (d *Decoder) Integer(v Value, p Path) (int64, bool) {
	if v.kind == Number && !bytes.ContainsAny(v.bytes(), ".eE") {
		if n, err := strconv.ParseInt(string(v.bytes()), 10, 64); err == nil {
			return n, true
		}
	}
	d.Add(p, MsgExpInteger)
	return 0, false
}

// Object checks that v is an object and reports its unknown keys; into, when not nil,
// receives the value of each known key the object has.
func (d *Decoder) Object(v Value, p Path, known KeySet, into map[string]Value) bool {
	for it := d.Items(v, p, Object, false); it.Next(); {
		if name, ok := known.Name(it.Key); !ok {
			d.Unknown(p, it.Key)
		} else if into != nil {
			into[name] = it.Val
		}
	}
	return v.kind == Object
}

// Items walks the elements of v, an array, or the members of v, an object, as want says. A
// value of another kind is reported; null too, unless orNull (then it has none).
func (d *Decoder) Items(v Value, p Path, want Kind, orNull bool) Iter {
	switch {
	case v.kind == want && want == Object:
		return v.Members()
	case v.kind == want:
		return v.Elems()
	case v.kind == Null && orNull:
	case want == Object:
		d.Add(p, MsgExpObject)
	default:
		d.Add(p, MsgExpArray)
	}
	return Iter{}
}

// Strings reads an array of strings or null (nil). A null element is a problem unless
// skipNull; with comma, one comma-separated string is read too (manual tags as an import
// may send them). The list is kept only while the body has no problem.
func (d *Decoder) Strings(v Value, p Path, skipNull, comma bool) (out []string) {
	if v.kind == String && comma {
		for part := range strings.SplitSeq(v.Text(), ",") {
			if t := strings.TrimSpace(part); t != "" && d.OK() {
				out = append(out, t)
			}
		}
		return out
	} else if v.kind == Array {
		out = []string{}
	}
	for it := d.Items(v, p, Array, true); it.Next(); {
		if k := it.Val.kind; k == String && d.OK() {
			out = append(out, it.Val.Text())
		} else if k != String && !(k == Null && skipNull) {
			d.Add(p.Index(it.I), MsgExpString)
		}
	}
	return out
}

// traceIDs reads an object of strings or null (nil). The map is made only while the body
// has no problem.
func (d *Decoder) traceIDs(v Value, p Path) (out map[string]string) {
	if v.kind == Object && d.OK() {
		out = map[string]string{}
	}
	for it := d.Items(v, p, Object, true); it.Next(); {
		if s, ok := d.Str(it.Val, p.KeyAt(it.Key), false); ok && d.OK() {
			out[it.Key.String()] = s
		}
	}
	return out
}

// references checks data.references of the rag-compat slot: an array of objects, each with a
// non-blank string url. Every other key is kept verbatim.
func (d *Decoder) references(data Value, p Path) {
	refs, ok := data.Get("references")
	if rp := p.Key("references"); ok && refs.kind != Array {
		d.Add(rp, MsgExpArray)
	} else if ok {
		for it := refs.Elems(); it.Next(); {
			if ep := rp.Index(it.I); it.Val.kind != Object {
				d.Add(ep, MsgExpObject)
			} else if u, ok := it.Val.Get("url"); !ok || u.kind != String || strings.TrimSpace(u.Text()) == "" {
				d.Add(ep.Key("url"), gtc.MsgReferenceURLEmpty)
			}
		}
	}
}

// toolOverlap reports the tools named in more than one list of expected tools.
func (d *Decoder) toolOverlap(et gtc.ExpectedTools, p Path) {
	lists := map[string]int{} // the lists that name a tool, as bits
	for li, list := range [][]gtc.ToolExpectation{et.Required, et.Optional, et.NotNeeded} {
		for _, e := range list {
			lists[e.Name] |= 1 << li
		}
	}
	overlap := slices.DeleteFunc(slices.Sorted(maps.Keys(lists)), func(n string) bool { return n == "" || lists[n]&(lists[n]-1) == 0 })
	if len(overlap) > 0 {
		d.Add(p, "tools cannot appear in more than one category: "+strings.Join(overlap, ", "))
	}
}

// DecodeImport checks a bulk-import body against the item schema (whole-request checks) and
// returns one entry per element. Any problem fails the whole request with a 422 listing every
// problem. Tag format and tag rules are checked by the caller.
func DecodeImport(body []byte) ([]*gtc.ImportEntry, error) {
	d, v := Parse(body)
	out := []*gtc.ImportEntry{}
	var root Path
	for it := d.Items(v, root, Array, false); it.Next(); {
		if e := d.importItem(it.Val, root.Index(it.I)); e != nil {
			out = append(out, e)
		}
	}
	return Result(d, out)
}

// DecodeItemObject checks one item object exactly as DecodeImport checks each element of an
// import body, with field paths relative to the item ("toolCalls[0].name"). gtc migrate
// validates stored documents with it, so a document is held to the same rules as the API
// holds its input. Any problem is a 422 *gtc.Error listing every problem in Fields.
func DecodeItemObject(doc []byte) (*gtc.ImportEntry, error) {
	d, v := Parse(doc)
	return Result(d, d.importItem(v, Path{}))
}

var emptyObject = json.RawMessage(`{}`)
