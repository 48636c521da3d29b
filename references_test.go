package gtc

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// referencesReflect is the encoding/json reading of the references, kept as the reference the
// single-pass reader is compared with.
func referencesReflect(it *Item) []Reference {
	p, ok := it.Plugins[RAGCompatSlot]
	if !ok || len(p.Data) == 0 {
		return nil
	}
	var data map[string]json.RawMessage
	if json.Unmarshal(p.Data, &data) != nil {
		return nil
	}
	var entries []json.RawMessage
	if json.Unmarshal(data["references"], &entries) != nil {
		return nil
	}
	str := func(r json.RawMessage) string {
		var s string
		_ = json.Unmarshal(r, &s)
		return s
	}
	var out []Reference
	for _, e := range entries {
		var m map[string]json.RawMessage
		if json.Unmarshal(e, &m) != nil || m == nil {
			continue
		}
		var u string
		if json.Unmarshal(m["url"], &u) != nil || strings.TrimSpace(u) == "" {
			continue
		}
		ref := Reference{URL: strings.TrimSpace(u), Title: str(m["title"]), Content: str(m["content"]),
			KeyExcerpt: str(m["keyExcerpt"]), Type: str(m["type"])}
		_ = json.Unmarshal(m["bonus"], &ref.Bonus)
		var mi int64
		if v, ok := m["messageIndex"]; ok && string(v) != "null" && json.Unmarshal(v, &mi) == nil {
			ref.MessageIndex = &mi
		}
		out = append(out, ref)
	}
	return out
}

func FuzzReferences(f *testing.F) {
	for _, s := range []string{`{"references":[{"url":" https://a/x ","title":"T","bonus":true,"messageIndex":3}]}`,
		`{"references":[null,1,{"url":""},{"url":5},{"url":"u","url":"v"}],"references":[{"url":"w","content":"c\u00e9"}]}`,
		`{"references":{}}`, `[]`, `{"references":[{"url":"a","messageIndex":1.5,"keyExcerpt":null,"type":7}]}`, `{"x":1} y`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !utf8.Valid(data) {
			return // the import decoder refuses invalid UTF-8 before anything is stored
		}
		it := NewItem("d", "i")
		it.Plugins[RAGCompatSlot] = PluginPayload{Kind: RAGCompatSlot, Data: data}
		got, want := References(it), referencesReflect(it)
		var urls []string
		for _, r := range got {
			urls = append(urls, r.URL)
		}
		require.Equal(t, urls, ReferenceURLs(it), "ReferenceURLs of %q", data)
		if len(got) == 0 && len(want) == 0 {
			return
		}
		require.Equal(t, want, got, "%q", data)
	})
}
