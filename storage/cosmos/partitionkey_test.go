package cosmos

import (
	"encoding/json"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	gtc "github.com/gtc-dev/gtc"
)

// Stored key values become the partition key the SDK's point operations address; values it
// cannot name make the document unaddressable (gtc migrate: UNADDRESSABLE_DOCUMENT).
func TestRawPartitionKeys(t *testing.T) {
	ds := azcosmos.NewPartitionKeyString("ds")
	for _, c := range []struct {
		name   string
		values []any
		body   map[string]any
		want   *azcosmos.PartitionKey
	}{
		{"uuid string", []any{"ds", "3f0e7c10-0000-4000-8000-000000000000"}, nil, ptr(ds.AppendString("3f0e7c10-0000-4000-8000-000000000000"))},
		{"number", []any{"ds", json.Number("3")}, nil, ptr(ds.AppendNumber(3))},
		{"decimal", []any{"ds", json.Number("-2.5")}, nil, ptr(ds.AppendNumber(-2.5))},
		{"boolean", []any{"ds", false}, nil, ptr(ds.AppendBool(false))},
		{"null", []any{"ds", nil}, map[string]any{"bucket": nil}, ptr(ds.AppendNull())},
		{"absent", []any{"ds", nil}, map[string]any{}, nil},
		{"absent dataset", []any{nil, "b"}, map[string]any{"bucket": "b"}, nil},
		{"object", []any{"ds", map[string]any{"v": json.Number("1")}}, nil, nil},
		{"array", []any{"ds", []any{"a"}}, nil, nil},
		{"number beyond a double", []any{"ds", json.Number("1e400")}, nil, nil},
		{"one value", []any{"ds"}, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := rawPartitionKey(gtc.RawDoc{PartitionKey: c.values, ID: "x", Body: c.body})
			if c.want == nil {
				require.ErrorIs(t, err, gtc.ErrUnaddressable)
				assert.ErrorIs(t, err, gtc.ErrInvalidArgument)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, *c.want, got)
		})
	}
}

func ptr[T any](v T) *T { return &v }
