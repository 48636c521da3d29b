package migrate

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// An import element is legacy by what only a legacy document has, not by the keys an
// element may leave out or an export record adds.
func TestIsLegacyElement(t *testing.T) {
	assert.False(t, IsLegacyElement(map[string]any{"datasetName": "ds", "id": "a"}), "a minimal v2 element")
	assert.False(t, IsLegacyElement(map[string]any{"datasetName": "ds", "id": "a", "manualTags": []any{"topic:x"},
		"tags": []any{"topic:x", "turns:single"}, "totalReferences": 0.0}), "an export record")
	assert.True(t, IsLegacyElement(map[string]any{"datasetName": "ds", "id": "a", "tags": []any{"billing"}}),
		"a tags list without manualTags")
}
