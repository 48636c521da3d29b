package gtc

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheckDatasetName(t *testing.T) {
	for name, want := range map[string]string{
		"support":                 "",
		" spaced name ":           "",
		"...":                     "", // not a dot-segment
		". ":                      "",
		"%2e%2e":                  "", // percent signs are ordinary characters
		"café":                    "",
		"日本語":                     "",
		"emoji 🙂":                 "",
		strings.Repeat("d", 255):  "",
		"":                        MsgDatasetEmpty,
		" \t":                     MsgDatasetEmpty,
		strings.Repeat("d", 256):  "must be at most 255 characters",
		".":                       MsgDatasetDots,
		"..":                      MsgDatasetDots,
		"a/b":                     MsgDatasetChars,
		`a\b`:                     MsgDatasetChars,
		"a?b":                     MsgDatasetChars,
		"a#b":                     MsgDatasetChars,
		"a\x00b":                  MsgDatasetChars,
		"a\nb":                    MsgDatasetChars,
		"a\u0085b":                MsgDatasetChars, // C1 control
		"a\xffb":                  MsgDatasetChars, // not UTF-8
		"sup\u200bport":           "datasetName contains an invisible format character (U+200B), which is not allowed",
		"\ufeffsupport":           "datasetName contains an invisible format character (U+FEFF), which is not allowed",
		"support\u202e":           "datasetName contains an invisible format character (U+202E), which is not allowed",
		"sup\u00adport":           "datasetName contains an invisible format character (U+00AD), which is not allowed",
		"a\u2066b\u2069":          "datasetName contains an invisible format character (U+2066), which is not allowed",
		"tag\U000E0041characters": "datasetName contains an invisible format character (U+E0041), which is not allowed",
	} {
		assert.Equal(t, want, CheckDatasetName(name), "%q", name)
	}
}

func TestCheckItemID(t *testing.T) {
	for id, want := range map[string]string{
		"gt-001":                   "",
		"...":                      "",
		"a.b":                      "",
		"ids with spaces":          "",
		strings.Repeat("i", 255):   "",
		"":                         MsgIDEmpty,
		strings.Repeat("i", 256):   "must be at most 255 characters",
		".":                        MsgIDDots,
		"..":                       MsgIDDots,
		"../etc":                   MsgIDChars,
		"a\rb":                     MsgIDChars,
		"gt\u200d001":              "id contains an invisible format character (U+200D), which is not allowed",
		"gt\u2060001":              "id contains an invisible format character (U+2060), which is not allowed",
		"\u202agt-001\u202c":       "id contains an invisible format character (U+202A), which is not allowed",
		"gt-00\u0031\u200c":        "id contains an invisible format character (U+200C), which is not allowed",
		"gt-001\U000E007F":         "id contains an invisible format character (U+E007F), which is not allowed",
		"é-with-combining-e\u0301": "", // a combining mark is visible (category Mn, not Cf)
	} {
		assert.Equal(t, want, CheckItemID(id), "%q", id)
	}
}

func TestFormatChar(t *testing.T) {
	r, ok := FormatChar("plain ascii")
	assert.False(t, ok)
	assert.Zero(t, r)
	r, ok = FormatChar("é\u00ad\u200b")
	assert.True(t, ok)
	assert.Equal(t, '\u00ad', r, "the first one")
	_, ok = FormatChar("\xff\xfe invalid UTF-8 is not a format character")
	assert.False(t, ok)
}
