package export

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/gtc-dev/gtc"
)

// project is the rag-compat projection that runs on every record after the chain:
// totalReferences, always, and a copy of the references when there is at least one.
// plugins stays as it is.
func project(rec fields) error {
	refs := recordReferences(rec)
	if err := rec.set("totalReferences", json.Number(strconv.Itoa(len(refs)))); err != nil {
		return err
	}
	if len(refs) == 0 {
		return nil
	}
	out := make([]any, len(refs))
	for i, r := range refs {
		out[i] = r
	}
	return rec.set("references", out)
}

// recordReferences is the rag-compat reader applied to a record: the entries of
// plugins["rag-compat"].data.references that are objects with a non-blank string url,
// copied, with the url trimmed.
func recordReferences(rec fields) []map[string]any {
	pv, _ := rec.get("plugins")
	plugins, _ := pv.(map[string]any)
	slot, _ := plugins[gtc.RAGCompatSlot].(map[string]any)
	data, _ := slot["data"].(map[string]any)
	return references(data["references"])
}

// references is the rag-compat reader applied to the value at
// plugins["rag-compat"].data.references: the entries that are objects with a non-blank
// string url, copied, with the url trimmed.
func references(v any) []map[string]any {
	list, _ := v.([]any)
	var out []map[string]any
	for _, e := range list {
		ref, ok := e.(map[string]any)
		if !ok {
			continue
		}
		u, _ := ref["url"].(string)
		if u = strings.TrimSpace(u); u == "" {
			continue
		}
		c := deepCopy(ref).(map[string]any)
		c["url"] = u
		out = append(out, c)
	}
	return out
}

// referenceURLs lists the trimmed urls the rag-compat reader finds in a record.
func referenceURLs(rec Record) []string {
	refs := recordReferences(rec)
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r["url"].(string)
	}
	return out
}
