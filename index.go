package gtc

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// IndexVersion is the version of the derived index fields. Raising it makes gtc migrate
// rebuild them.
const IndexVersion = 1

// SearchTextMax caps the search text at 512 KiB.
const SearchTextMax = 524288

// fieldSep separates fields in the search text and the reference URL list, so a keyword can
// never match across two fields.
const fieldSep = "\x1f"

// IndexFields are the values both stores derive from an item on every write and never
// return.
type IndexFields struct {
	V          int
	SearchText string
	RefURLs    string
	SK         SortKeys
}

// SortKeys are the precomputed sort-key strings, compared byte-wise.
type SortKeys struct {
	ReviewedAt string
	UpdatedAt  string
	HasAnswer  string
	TagCount   string
	References string
	AssignedAt string
	Recent     string
}

// Of returns the sort key of the given ordering.
func (s SortKeys) Of(k SortKey, id string) string {
	switch k {
	case SortReviewedAt:
		return s.ReviewedAt
	case SortUpdatedAt:
		return s.UpdatedAt
	case SortHasAnswer:
		return s.HasAnswer
	case SortTagCount:
		return s.TagCount
	case SortReferences:
		return s.References
	case SortAssignedAt:
		return s.AssignedAt
	case SortRecent:
		return s.Recent
	default:
		return id
	}
}

// Derive computes the index fields of an item.
func Derive(it *Item) IndexFields {
	refs := References(it)
	var st strings.Builder
	st.WriteString(strings.ToLower(it.ID))
	st.WriteString(fieldSep)
	st.WriteString(strings.ToLower(it.DatasetName))
	st.WriteString(fieldSep)
	st.WriteString(strings.ToLower(it.Comment))
	for _, h := range it.History {
		st.WriteString(fieldSep)
		st.WriteString(strings.ToLower(h.Msg))
	}
	urls := make([]string, 0, len(refs))
	for _, r := range refs {
		for _, f := range [...]string{r.URL, r.Title, r.Content, r.KeyExcerpt} {
			st.WriteString(fieldSep)
			st.WriteString(strings.ToLower(f))
		}
		urls = append(urls, r.URL)
	}
	search := st.String()
	if len(search) > SearchTextMax {
		cut := SearchTextMax
		for cut > 0 && !utf8.RuneStart(search[cut]) {
			cut--
		}
		search = search[:cut]
	}
	reviewed := sortTime(it.ReviewedAt)
	updated := sortTimeV(it.UpdatedAt)
	hasAnswer := "0"
	if AnswerText(it) != "" {
		hasAnswer = "1"
	}
	return IndexFields{
		V:          IndexVersion,
		SearchText: search,
		RefURLs:    strings.Join(urls, fieldSep),
		SK: SortKeys{
			ReviewedAt: reviewed + updated + it.ID,
			UpdatedAt:  UpdatedAtSortKey(it),
			HasAnswer:  hasAnswer + reviewed + updated + it.ID,
			TagCount:   pad6(len(it.Tags())) + it.ID,
			References: pad6(len(refs)) + it.ID,
			AssignedAt: sortTime(it.AssignedAt) + it.ID,
			Recent:     complementDigits(updated) + it.ID,
		},
	}
}

// UpdatedAtSortKey is the sort key of SortUpdatedAt (SortKeys.UpdatedAt): the update time in
// microseconds, then the id. The stores order items by it byte-wise, so a descending query
// lists the most recently updated first, equal times by id, descending.
func UpdatedAtSortKey(it *Item) string { return sortTimeV(it.UpdatedAt) + it.ID }

const zeroTime20 = "00000000000000000000"

func sortTime(t *time.Time) string {
	if t == nil {
		return zeroTime20
	}
	return sortTimeV(*t)
}

// sortTimeV writes t as the 20 digits YYYYMMDDhhmmssffffff (microseconds, UTC).
func sortTimeV(t time.Time) string {
	t = t.UTC()
	b := make([]byte, 0, 20)
	b = appendInt(b, t.Year(), 4)
	b = appendInt(b, int(t.Month()), 2)
	b = appendInt(b, t.Day(), 2)
	b = appendInt(b, t.Hour(), 2)
	b = appendInt(b, t.Minute(), 2)
	b = appendInt(b, t.Second(), 2)
	b = appendInt(b, t.Nanosecond()/1000, 6)
	return string(b)
}

func appendInt(b []byte, v, width int) []byte {
	s := strconv.Itoa(v)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

func pad6(n int) string {
	if n > 999999 {
		n = 999999
	}
	return string(appendInt(nil, n, 6))
}

// complementDigits replaces each digit d by 9-d, which reverses the order of fixed-width
// digit strings.
func complementDigits(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= '0' && c <= '9' {
			b[i] = '9' - (c - '0')
		}
	}
	return string(b)
}
