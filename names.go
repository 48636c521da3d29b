package gtc

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The name rules: what an item id and a dataset name may be. One rule serves every caller:
// the import decoder, gtc import, gtc migrate and the API's path parameters, so a name the
// API refuses in a path is a name no stored item can have.
//
// Both are 1–MaxNameChars characters of valid UTF-8 and must not contain
//   - '/', '\', '?' or '#': they would change the meaning of a URL or a storage key;
//   - control characters;
//   - invisible format characters (Unicode category Cf: zero-width spaces and joiners, the
//     byte-order mark, bidirectional overrides and isolates, the soft hyphen, …): two names
//     that look the same would be different names, and a bidirectional override makes a
//     name display as another one;
//
// and must not be exactly "." or "..": as a URL path segment (the Location of a new item,
// a client building an item URL) those are dot-segments and resolve to another path.

// MaxNameChars bounds id and datasetName, in characters (code points).
const MaxNameChars = 255

// Messages of the name rules.
const (
	MsgIDEmpty      = "id cannot be empty"
	MsgIDChars      = "id contains characters that are not allowed"
	MsgIDDots       = "id cannot be '.' or '..'"
	MsgDatasetEmpty = "datasetName cannot be empty"
	MsgDatasetChars = "datasetName contains characters that are not allowed"
	MsgDatasetDots  = "datasetName cannot be '.' or '..'"
)

// CheckItemID validates an item id as it is stored (trimmed; a blank id on import is
// generated before it is stored). It returns "" for a valid id, else the message.
func CheckItemID(id string) string {
	if id == "" {
		return MsgIDEmpty
	}
	return checkName("id", id, MsgIDChars, MsgIDDots)
}

// CheckDatasetName validates a dataset name as sent (names are stored exactly as sent, so
// surrounding spaces are part of the name, but a blank name is refused). It returns "" for
// a valid name, else the message.
func CheckDatasetName(name string) string {
	if strings.TrimSpace(name) == "" {
		return MsgDatasetEmpty
	}
	return checkName("datasetName", name, MsgDatasetChars, MsgDatasetDots)
}

func checkName(field, s, charsMsg, dotsMsg string) string {
	if charCount(s) > MaxNameChars {
		return atMost(MaxNameChars)
	}
	if !utf8.ValidString(s) || strings.ContainsFunc(s, badNameRune) {
		return charsMsg
	}
	if r, ok := FormatChar(s); ok {
		return InvisibleCharMessage(field, r)
	}
	if s == "." || s == ".." {
		return dotsMsg
	}
	return ""
}

// badNameRune reports whether r is '/', '\', '?', '#' or a control character.
func badNameRune(r rune) bool {
	return r == '/' || r == '\\' || r == '?' || r == '#' || unicode.IsControl(r)
}

// FormatChar returns the first invisible format character of s (Unicode category Cf, such
// as U+200B ZERO WIDTH SPACE, U+FEFF BYTE ORDER MARK or U+202E RIGHT-TO-LEFT OVERRIDE).
// Ids, dataset names and tags refuse them.
func FormatChar(s string) (rune, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] < utf8.RuneSelf {
			continue // no ASCII character is in Cf
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if unicode.Is(unicode.Cf, r) {
			return r, true
		}
		i += size - 1
	}
	return 0, false
}

// InvisibleCharMessage is the message for a value of what (a field name, or "tag") that
// holds the invisible format character r.
func InvisibleCharMessage(what string, r rune) string {
	return fmt.Sprintf("%s contains an invisible format character (U+%04X), which is not allowed", what, r)
}

func charCount(s string) int { return utf8.RuneCountInString(s) }

func atMost(n int) string { return fmt.Sprintf("must be at most %d characters", n) }
