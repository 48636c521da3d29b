package migrate

import "maps"

// IsLegacyElement reports whether an import element is a legacy v1 document. IsLegacy judges
// stored documents, which always have manualTags, computedTags and history; an import
// element may leave those out, and an export record carries the output-only tags (next to
// manualTags) and totalReferences. The probe fills in the first and drops the second, so
// what decides is what only a legacy document has: a legacy key, a legacy history entry or
// rag-compat data, or a tags list without manualTags.
func IsLegacyElement(doc map[string]any) bool {
	probe := maps.Clone(doc)
	if _, ok := probe["manualTags"]; ok {
		delete(probe, "tags")
	} else if _, ok := probe["tags"]; !ok {
		probe["manualTags"] = []any{}
	}
	if _, ok := probe["computedTags"]; !ok {
		probe["computedTags"] = []any{}
	}
	if probe["history"] == nil {
		probe["history"] = []any{}
	}
	delete(probe, "totalReferences")
	return IsLegacy(probe)
}
