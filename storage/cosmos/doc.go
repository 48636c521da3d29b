package cosmos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

// An item document is the canonical document (codec.ItemStoredJSON) plus "gtcIndex" (the
// derived index fields and the write id). Cosmos DB keeps numbers as IEEE 754 doubles, so a
// document whose free-form JSON holds a number a double cannot reproduce exactly (a 64-bit
// integer above 2^53, a long decimal, "1.0") also carries "gtcExact": the canonical document
// as a string, which the store reads instead. Every other document is read from its fields.

// preparedItem is an item ready to be written.
type preparedItem struct {
	stored    *gtc.Item // exactly as the document reads back
	canonical []byte    // its canonical document
	doc       []byte    // the Cosmos document
	wid       string
}

// prepareItem checks and encodes it (the size check comes before any ETag comparison).
func (s *Store) prepareItem(op string, it *gtc.Item) (*preparedItem, error) {
	if it == nil {
		return nil, fmt.Errorf("cosmos: %s: %w: nil item", op, gtc.ErrInvalidArgument)
	}
	if it.DatasetName == "" || it.ID == "" {
		return nil, fmt.Errorf("cosmos: %s: %w: item needs a datasetName and an id", op, gtc.ErrInvalidArgument)
	}
	if !gtc.IsCanonicalUUID(it.Bucket) {
		return nil, fmt.Errorf("cosmos: %s: %w: bucket %q is not a canonical lower-case UUID", op, gtc.ErrInvalidArgument, it.Bucket)
	}
	if it.AssignedTo != nil && *it.AssignedTo == "" {
		it = it.Clone()
		it.AssignedTo = nil
	}
	canonical := codec.ItemStoredJSON(it)
	if codec.ContentSize(canonical, it.Revision) > gtc.MaxItemBytes {
		return nil, fmt.Errorf("cosmos: %s: %w: canonical document of %s has %d bytes, the limit is %d",
			op, gtc.ErrTooLarge, it.Key(), len(canonical), gtc.MaxItemBytes)
	}
	stored, err := codec.DecodeStoredItem(canonical)
	if err != nil {
		return nil, fmt.Errorf("cosmos: %s: %w: item %s does not encode to valid JSON: %w", op, gtc.ErrInvalidArgument, it.Key(), err)
	}
	if !stored.Status.Valid() {
		return nil, fmt.Errorf("cosmos: %s: %w: unknown status %q", op, gtc.ErrInvalidArgument, stored.Status)
	}
	wid := s.newWID()
	return &preparedItem{stored: stored, canonical: canonical, doc: itemDocument(canonical, gtc.Derive(stored), wid), wid: wid}, nil
}

// itemDocument appends gtcIndex (and gtcExact when needed) to a canonical document.
func itemDocument(canonical []byte, f gtc.IndexFields, wid string) []byte {
	var b bytes.Buffer
	b.Grow(len(canonical) + len(f.SearchText) + len(f.RefURLs) + 512)
	b.Write(canonical[:len(canonical)-1])
	b.WriteString(`,"gtcIndex":{"v":`)
	b.WriteString(strconv.Itoa(f.V))
	b.WriteString(`,"wid":"`)
	b.WriteString(wid)
	b.WriteString(`","searchText":`)
	writeString(&b, f.SearchText)
	b.WriteString(`,"refUrls":`)
	writeString(&b, f.RefURLs)
	b.WriteString(`,"sk":{`)
	for i, kv := range [...][2]string{
		{"reviewedAt", f.SK.ReviewedAt}, {"updatedAt", f.SK.UpdatedAt}, {"hasAnswer", f.SK.HasAnswer},
		{"tagCount", f.SK.TagCount}, {"references", f.SK.References}, {"assignedAt", f.SK.AssignedAt},
		{"recent", f.SK.Recent},
	} {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		b.WriteString(kv[0])
		b.WriteString(`":`)
		writeString(&b, kv[1])
	}
	b.WriteString("}}")
	if !numbersSurvive(canonical) {
		b.WriteString(`,"gtcExact":`)
		writeString(&b, string(canonical))
	}
	b.WriteByte('}')
	return b.Bytes()
}

func writeString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s) // a string cannot fail
	b.Write(enc)
}

// storedDoc is what one parse of a stored item document gives.
type storedDoc struct {
	item    *gtc.Item
	wid     string            // gtcIndex.wid: the write id of the write that stored it
	sk      map[string]string // gtcIndex.sk: the stored sort keys by name
	visible bool              // an item gtc wrote (docType and gtcIndex); item is nil otherwise
}

// decodeItemDoc reads a stored document: from gtcExact when present, else its fields.
func decodeItemDoc(doc []byte) (storedDoc, error) {
	var head struct {
		DocType  string `json:"docType"`
		ETag     string `json:"_etag"`
		GTCIndex *struct {
			WID string            `json:"wid"`
			SK  map[string]string `json:"sk"`
		} `json:"gtcIndex"`
		Exact *string `json:"gtcExact"`
	}
	if err := json.Unmarshal(doc, &head); err != nil {
		return storedDoc{}, fmt.Errorf("%w: stored document unreadable: %w", gtc.ErrUnavailable, err)
	}
	if head.DocType != gtc.DocTypeItem || head.GTCIndex == nil {
		return storedDoc{}, nil
	}
	src := doc
	if head.Exact != nil {
		src = []byte(*head.Exact)
	}
	it, err := codec.DecodeStoredItem(src)
	if err != nil {
		return storedDoc{}, fmt.Errorf("%w: stored document unreadable: %w", gtc.ErrUnavailable, err)
	}
	it.ETag = head.ETag
	return storedDoc{item: it, wid: head.GTCIndex.WID, sk: head.GTCIndex.SK, visible: true}, nil
}

// sortKey is the stored sort key of ordering k (the id for SortID).
func (d storedDoc) sortKey(k gtc.SortKey) string {
	if k == gtc.SortID {
		return d.item.ID
	}
	return d.sk[skName(k)]
}

// numbersSurvive reports whether every number literal of doc reads back with the same text
// after a round trip through an IEEE 754 double printed the way Cosmos DB and JavaScript
// print numbers.
func numbersSurvive(doc []byte) bool {
	inString := false
	for i := 0; i < len(doc); i++ {
		c := doc[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
		case c == '-' || (c >= '0' && c <= '9'):
			j := i + 1
			for j < len(doc) && strings.IndexByte("0123456789+-.eE", doc[j]) >= 0 {
				j++
			}
			lit := string(doc[i:j])
			f, err := strconv.ParseFloat(lit, 64)
			if err != nil || jsNumber(f) != lit {
				return false
			}
			i = j - 1
		}
	}
	return true
}

// jsNumber formats f as ECMAScript's Number::toString does (shortest round-trip digits;
// plain notation for exponents from -7 to 20).
func jsNumber(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "null"
	}
	if f == 0 {
		return "0"
	}
	neg := f < 0
	if neg {
		f = -f
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddddde±XX
	mant, expPart, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	exp, _ := strconv.Atoi(expPart)
	k := len(digits)
	n := exp + 1 // position of the decimal point
	var out string
	switch {
	case k <= n && n <= 21:
		out = digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		out = digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		out = "0." + strings.Repeat("0", -n) + digits
	default:
		sign := "+"
		if n-1 < 0 {
			sign = "-"
		}
		m := digits[:1]
		if k > 1 {
			m += "." + digits[1:]
		}
		out = m + "e" + sign + strconv.Itoa(abs(n-1))
	}
	if neg {
		return "-" + out
	}
	return out
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
