package gtc_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
)

func TestRepeatedInCallRefusesAllButTheFirstOfAnID(t *testing.T) {
	item := func(ds, id, bucket string) *gtc.Item {
		it := gtc.NewItem(ds, id)
		it.Bucket = bucket
		return it
	}
	const b1, b2 = "11428b3b-6aaf-538d-b00a-ee67737d6bed", "0f8fad5b-d9cb-469f-a165-70867728950e"
	items := []*gtc.Item{
		item("ds", "a", b1),
		item("ds", "b", b1),
		item("ds", "a", b2), // the same id in another bucket: still the same item
		nil,
		item("other", "a", b1), // another dataset: another item
		item("ds", "a", b1),
	}
	got := gtc.RepeatedInCall(items)
	require.Len(t, got, 2)
	for _, i := range []int{2, 5} {
		var ce *gtc.ConflictError
		require.ErrorAs(t, got[i], &ce, "item %d", i)
		assert.Equal(t, items[0].Key(), ce.Existing, "item %d names the first of its id", i)
	}
	assert.Empty(t, gtc.RepeatedInCall(items[:2]))
}
