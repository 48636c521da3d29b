package codec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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

const msgToolOverlap = "tools cannot appear in more than one category: "

// ParseBody parses a request body as JSON. A syntax error is a 422 INVALID_JSON naming the
// body.
func ParseBody(body []byte) (Value, error) {
	v, err := parseJSON(body)
	if err != nil {
		msg := syntaxMessage(err)
		return Value{}, &gtc.Error{
			Code:    gtc.CodeInvalidJSON,
			Message: "Request validation failed: body: " + msg,
			Fields:  []gtc.FieldError{{Field: "body", Message: msg}},
		}
	}
	return v, nil
}

// Decoder collects the problems of a body in document order. It lists the first
// gtc.MaxFieldErrors and only counts the others, so a body with millions of problems costs no
// more than one with a hundred.
type Decoder struct {
	errs []gtc.FieldError
	more int
	// scratch receives the items of an import once the body has a problem.
	scratch     gtc.ImportEntry
	scratchItem gtc.Item
}

func (d *Decoder) Add(p Path, msg string) {
	if len(d.errs) >= gtc.MaxFieldErrors {
		d.more++
		return
	}
	d.errs = append(d.errs, gtc.FieldError{Field: p.String(), Message: msg})
}

// unknown reports an unknown key of the object at p.
func (d *Decoder) Unknown(p Path, k Key) {
	d.Add(p.KeyAt(k), MsgUnknownField)
}

// at is the path of a top-level key.
func At(name string) Path { return Path{name: name, kind: pathKey} }

// problems counts every problem found so far, listed or not.
func (d *Decoder) Problems() int { return len(d.errs) + d.more }

// ok reports whether no problem was found yet. Once one was, the body is refused whatever
// follows, so the decoders stop building what they would return and only look for the
// other problems.
func (d *Decoder) OK() bool { return len(d.errs) == 0 && d.more == 0 }

func (d *Decoder) Err() error {
	if d.Problems() == 0 {
		return nil
	}
	return gtc.ValidationErrorMore(d.errs, d.more)
}

func (d *Decoder) typeErr(p Path, want Kind) {
	switch want {
	case String:
		d.Add(p, MsgExpString)
	case Number:
		d.Add(p, MsgExpInteger)
	case Bool:
		d.Add(p, MsgExpBoolean)
	case Array:
		d.Add(p, MsgExpArray)
	case Object:
		d.Add(p, MsgExpObject)
	}
}

// str reads a string; null gives ok=false without an error when nullable.
func (d *Decoder) Str(v Value, p Path, nullable bool) (s string, ok bool) {
	switch v.kind {
	case String:
		return v.Text(), true
	case Null:
		if !nullable {
			d.Add(p, MsgNotNull)
		}
		return "", false
	default:
		d.typeErr(p, String)
		return "", false
	}
}

func (d *Decoder) StrPtr(v Value, p Path) (*string, bool) {
	s, ok := d.Str(v, p, true)
	if !ok {
		return nil, v.kind == Null
	}
	return &s, true
}

func (d *Decoder) timePtr(v Value, p Path) (*time.Time, bool) {
	switch v.kind {
	case Null:
		return nil, true
	case String:
		t, err := gtc.ParseTime(v.Text())
		if err != nil {
			d.Add(p, MsgDateTime)
			return nil, false
		}
		return &t, true
	default:
		d.typeErr(p, String)
		return nil, false
	}
}

// object checks v is an object (or null when nullable) and reports unknown keys.
func (d *Decoder) Object(v Value, p Path, known KeySet) bool {
	if v.kind != Object {
		d.typeErr(p, Object)
		return false
	}
	for it := v.Members(); it.Next(); {
		if _, ok := known.Name(it.Key); !ok {
			d.Unknown(p, it.Key)
		}
	}
	return true
}

// rawObject reads a free-form object (null is {}). Its bytes are only copied while the body
// has no problem.
func (d *Decoder) RawObject(v Value, p Path) (json.RawMessage, bool) {
	switch v.kind {
	case Null:
		return emptyObject, true
	case Object:
		if !d.OK() {
			return emptyObject, true
		}
		return v.Raw(), true
	default:
		d.typeErr(p, Object)
		return nil, false
	}
}

func (d *Decoder) Integer(v Value, p Path) (int64, bool) {
	if v.kind != Number || bytes.ContainsAny(v.literal(), ".eE") {
		d.Add(p, MsgExpInteger)
		return 0, false
	}
	n, err := strconv.ParseInt(string(v.literal()), 10, 64)
	if err != nil {
		d.Add(p, MsgExpInteger)
		return 0, false
	}
	return n, true
}

// --- nested types, shared by import and PUT ------------------------------------------------

// StringList reads an array of strings or null (nil). The list is complete only when ok.
func (d *Decoder) StringList(v Value, p Path) ([]string, bool) {
	switch v.kind {
	case Null:
		return nil, true
	case Array:
		out := []string{}
		ok := true
		for it := v.Elems(); it.Next(); {
			if it.Val.kind != String {
				d.Add(p.Index(it.I), MsgExpString)
				ok = false
				continue
			}
			if ok {
				out = append(out, it.Val.Text())
			}
		}
		return out, ok
	default:
		d.Add(p, MsgExpArray)
		return nil, false
	}
}

// TraceIDs reads an object of strings or null (nil). The map is made only while the body has
// no problem.
func (d *Decoder) TraceIDs(v Value, p Path) map[string]string {
	switch v.kind {
	case Null:
		return nil
	case Object:
		var out map[string]string // made only while the body has no problem
		for it := v.Members(); it.Next(); {
			if s, ok := d.Str(it.Val, p.KeyAt(it.Key), false); ok && d.OK() {
				if out == nil {
					out = map[string]string{}
				}
				out[it.Key.String()] = s
			}
		}
		if out == nil && d.OK() {
			out = map[string]string{}
		}
		return out
	default:
		d.Add(p, MsgExpObject)
		return nil
	}
}

// references checks data.references of the rag-compat slot: an array of objects, each with a
// non-blank string url. Every other key is kept verbatim.
func (d *Decoder) references(data Value, p Path) {
	refs, ok := data.Get("references")
	if !ok {
		return
	}
	rp := p.Key("references")
	if refs.kind != Array {
		d.Add(rp, MsgExpArray)
		return
	}
	for it := refs.Elems(); it.Next(); {
		el := it.Val
		ep := rp.Index(it.I)
		if el.kind != Object {
			d.Add(ep, MsgExpObject)
			continue
		}
		u, ok := el.Get("url")
		if !ok || u.kind != String || strings.TrimSpace(u.Text()) == "" {
			d.Add(ep.Key("url"), gtc.MsgReferenceURLEmpty)
		}
	}
}

// --- bulk import ---------------------------------------------------------------------------

// DecodeImport checks a bulk-import body against the item schema (whole-request checks) and
// returns one entry per element. Any problem fails the whole request with a 422 listing every
// problem. Tag format and tag rules are checked by the caller.
func DecodeImport(body []byte) ([]*gtc.ImportEntry, error) {
	v, err := ParseBody(body)
	if err != nil {
		return nil, err
	}
	d := &Decoder{}
	var root Path
	if v.kind != Array {
		d.Add(root, MsgExpArray)
		return nil, d.Err()
	}
	out := []*gtc.ImportEntry{}
	for it := v.Elems(); it.Next(); {
		e := d.importItem(it.Val, root.Index(it.I))
		if d.OK() {
			out = append(out, e)
		}
	}
	if err := d.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// DecodeItemObject checks one item object exactly as DecodeImport checks each element of an
// import body, with field paths relative to the item ("toolCalls[0].name"). gtc migrate
// validates stored documents with it, so a document is held to the same rules as the API
// holds its input. Any problem is a 422 *gtc.Error listing every problem in Fields.
func DecodeItemObject(doc []byte) (*gtc.ImportEntry, error) {
	v, err := ParseBody(doc)
	if err != nil {
		return nil, err
	}
	d := &Decoder{}
	e := d.importItem(v, Path{})
	if err := d.Err(); err != nil {
		return nil, err
	}
	return e, nil
}

func charCount(s string) int { return utf8.RuneCountInString(s) }

func atMost(n int) string { return fmt.Sprintf("must be at most %d characters", n) }

var emptyObject = json.RawMessage(`{}`)
