package codec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
)

// itemCodec is one way an item is written and read back. want adjusts a copy of the item to
// what the codec is expected to return (the keys its form leaves out or its reader ignores).
type itemCodec struct {
	name   string
	encode func(*gtc.Item) ([]byte, error)
	decode func([]byte) (*gtc.Item, error)
	want   func(*gtc.Item)
}

// itemCodecs lists every codec of the item; a codec added elsewhere (export records) adds
// itself here, so the fully-filled item below goes through it too.
var itemCodecs = []itemCodec{
	{
		name:   "api form, read by key",
		encode: func(it *gtc.Item) ([]byte, error) { return ItemAPIJSON(it), nil },
		decode: func(b []byte) (*gtc.Item, error) {
			// Every key the API form writes, read back exactly by the description's json
			// names (json v2 matches names case-sensitively; the derived tags are not a field).
			var it gtc.Item
			err := jsonv2.Unmarshal(b, &it)
			return &it, err
		},
	},
	{
		// The strict item decoder reads what a client sends back: the API form, with the
		// server-managed (readonly) keys ignored.
		name:   "api form, read by the strict item decoder",
		encode: func(it *gtc.Item) ([]byte, error) { return ItemAPIJSON(it), nil },
		decode: func(b []byte) (*gtc.Item, error) {
			e, err := DecodeItemObject(b)
			if err != nil {
				return nil, err
			}
			e.Item.ManualTags = e.RawManualTags // kept raw for the tag rules the importer applies
			return e.Item, nil
		},
		want: func(it *gtc.Item) { zeroFields(it, func(f *field) bool { return f.readonly }) },
	},
	{
		// The record form (exports): every key of the API form, objects' keys in byte order,
		// raw values through the caller's canonicalizer (here: compacted as they are).
		name: "record form, read by key",
		encode: func(it *gtc.Item) ([]byte, error) {
			compact := func(dst []byte, raw json.RawMessage) ([]byte, error) { return jsontext.AppendFormat(dst, raw) }
			return AppendItemRecord(nil, it, compact, nil)
		},
		decode: func(b []byte) (*gtc.Item, error) {
			var it gtc.Item
			err := jsonv2.Unmarshal(b, &it)
			return &it, err
		},
	},
	{
		name:   "stored form",
		encode: func(it *gtc.Item) ([]byte, error) { return ItemStoredJSON(it), nil },
		decode: DecodeStoredItem,
		want:   func(it *gtc.Item) { zeroFields(it, func(f *field) bool { return f.api }) },
	},
}

// zeroFields zeroes the top-level item fields that match.
func zeroFields(it *gtc.Item, match func(*field) bool) {
	v := reflect.ValueOf(it).Elem()
	for i := range itemTable.fields {
		if f := &itemTable.fields[i]; match(f) {
			v.FieldByName(f.goName).SetZero()
		}
	}
}

// filler gives every field of a described type a distinct value that is valid for its wire
// attributes.
type filler struct {
	t *testing.T
	n int
}

// valid are the values of the fields whose text the item rules constrain.
var valid = map[string]string{
	"Item.ID":            "item-%d",
	"Item.DatasetName":   "dataset-%d",
	"Item.Bucket":        "3f0e9a57-55c1-5d0b-9a3e-6b1f9f2d7c%02d",
	"Item.Status":        string(gtc.StatusApproved),
	"Item.DocType":       gtc.DocTypeItem,
	"ToolCall.CallType":  "subagent",
	"Item.SchemaVersion": "v%d",
}

func (fl *filler) next() int { fl.n++; return fl.n }

func (fl *filler) fill(v reflect.Value, path string) {
	switch t := v.Type(); {
	case t == rawType:
		n := fl.next()
		v.Set(reflect.ValueOf(json.RawMessage(fmt.Sprintf(`{"k%d":[%d,"v"]}`, n, n))))
	case t == timeType:
		v.Set(reflect.ValueOf(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(fl.next()) * time.Millisecond)))
	case t.Kind() == reflect.String:
		n := fl.next()
		s := fmt.Sprintf("%s-%d", path, n)
		if f, ok := valid[path]; ok {
			s = f
			if strings.Contains(f, "%") {
				s = fmt.Sprintf(f, n%100)
			}
		}
		v.SetString(s)
	case t.Kind() == reflect.Int64:
		v.SetInt(int64(fl.next()))
	case t.Kind() == reflect.Pointer:
		p := reflect.New(t.Elem())
		fl.fill(p.Elem(), path)
		v.Set(p)
	case t.Kind() == reflect.Slice:
		s := reflect.MakeSlice(t, 2, 2)
		for i := range 2 {
			fl.fill(s.Index(i), path)
		}
		v.Set(s)
	case t.Kind() == reflect.Map:
		m := reflect.MakeMap(t)
		for range 2 {
			k := reflect.New(t.Key()).Elem()
			fl.fill(k, path+"[key]")
			e := reflect.New(t.Elem()).Elem()
			fl.fill(e, path)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case t.Kind() == reflect.Struct:
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			fl.fill(v.Field(i), t.Name()+"."+sf.Name)
		}
	default:
		fl.t.Fatalf("%s: no filler for %s; teach the round-trip test the new type", path, t)
	}
}

func filledItem(t *testing.T) *gtc.Item {
	it := &gtc.Item{}
	(&filler{t: t}).fill(reflect.ValueOf(it).Elem(), "Item")
	return it
}

// TestEveryFieldRoundTrips writes an item whose every field holds a distinct value through
// every codec and reads it back: a field a codec forgets to write or to read fails here.
func TestEveryFieldRoundTrips(t *testing.T) {
	for _, c := range itemCodecs {
		t.Run(c.name, func(t *testing.T) {
			it := filledItem(t)
			want := it.Clone()
			if c.want != nil {
				c.want(want)
			}
			want.FillDefaults()
			b, err := c.encode(it)
			require.NoError(t, err)
			got, err := c.decode(b)
			require.NoError(t, err, "%s", b)
			got.FillDefaults()
			require.Equal(t, want, got, "%s", b)
		})
	}
}

// TestEveryFieldIsDescribed checks that every exported field of the described types has a
// wire key, so no field is silently left out of every form.
func TestEveryFieldIsDescribed(t *testing.T) {
	for typ, tb := range tables {
		for i := range typ.NumField() {
			sf := typ.Field(i)
			if sf.IsExported() {
				require.NotNil(t, tb.byKey[sf.Tag.Get("json")], "%s.%s has no json name", typ, sf.Name)
			}
		}
	}
}

// TestStoredFormIsStable: a store writes the stored form of the item it is given and diffs
// it, for the revision, against the stored form of the previous item as read back; reading a
// stored document and writing it again must give the same bytes, or every revision would
// show changes nobody made.
func TestStoredFormIsStable(t *testing.T) {
	odd := gtc.NewItem("ds", "q\u2028<&>")
	odd.Bucket = "11428b3b-6aaf-538d-b00a-ee67737d6bed"
	odd.Comment = "bad \xff utf-8, tab\t, nul \x00"
	odd.UpdatedAt = time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("x", 3600))
	odd.Metadata = json.RawMessage(` { "b" : [1, 2.50, -0.0, 1e3], "a":{"big":12345678901234567890}} `)
	empty := ""
	odd.AssignedTo = &empty
	odd.History = []gtc.HistoryEntry{{Role: "user", Msg: ""}}
	odd.TracePayload = json.RawMessage(" null\n")
	bare := &gtc.Item{DatasetName: "ds", ID: "bare", Bucket: odd.Bucket}
	for name, it := range map[string]*gtc.Item{"every field": filledItem(t), "odd values": odd, "bare": bare} {
		t.Run(name, func(t *testing.T) {
			form := EncodeStored(it)
			assert.Equal(t, string(ItemStoredJSON(it)), string(form.Doc), "EncodeStored writes what ItemStoredJSON does")
			back, err := DecodeStoredItem(form.Doc)
			require.NoError(t, err)
			assert.Equal(t, string(form.Doc), string(ItemStoredJSON(back)))
		})
	}
}
