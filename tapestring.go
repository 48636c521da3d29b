package gtc

import "github.com/go-json-experiment/json/jsontext"

// storedReader unquotes one string token of the PII scan's token tape (pii.go).
type storedReader struct{ b []byte }

// str is the text of the string token; a token that is not a valid string reads as "".
func (r *storedReader) str() string {
	s, err := jsontext.AppendUnquote(nil, r.b)
	if err != nil {
		return ""
	}
	return string(s)
}
