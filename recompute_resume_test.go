// Left out of the fuzz builds with the other tests of package gtc_test that open a store.

//go:build !fuzzing

package gtc_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
)

// A recompute stopped after its first page goes on from the checkpoint it left: the second
// run reads only the pages after it, and the two together count what one whole run counts.
func TestRecomputeResumesFromItsCheckpoint(t *testing.T) {
	ctx := context.Background()
	st := recomputeFixture(t)
	cur := gtc.NewCurator(gtc.CuratorDeps{Store: st, Tagger: lengthTagger{}, RecomputeBatch: 10})

	stopped, stop := context.WithCancel(ctx)
	var cp *gtc.RecomputeCheckpoint
	_, err := cur.RecomputeTags(stopped, gtc.RecomputeRequest{}, gtc.RecomputeHooks{Checkpoint: func(c gtc.RecomputeCheckpoint) {
		cp = &c
		stop() // the server shuts down after the first page
	}})
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, cp)
	assert.Equal(t, 25, cp.Total)
	assert.Equal(t, 10, cp.Matched)
	assert.NotEmpty(t, cp.Cursor)

	var seen []gtc.RecomputeItem
	var progress []gtc.JobProgress
	res, err := cur.RecomputeTags(ctx, gtc.RecomputeRequest{From: cp}, gtc.RecomputeHooks{
		Item:     func(it gtc.RecomputeItem) { seen = append(seen, it) },
		Progress: func(p gtc.JobProgress) { progress = append(progress, p) },
	})
	require.NoError(t, err)
	for _, it := range seen {
		assert.Greater(t, it.ID, "it-09", "the first page is not read again")
	}
	assert.Equal(t, 10, progress[0].Processed, "the resumed run starts from the first run's counts")
	whole, err := gtc.NewCurator(gtc.CuratorDeps{Store: recomputeFixture(t), Tagger: lengthTagger{}, RecomputeBatch: 10}).
		RecomputeTags(ctx, gtc.RecomputeRequest{}, gtc.RecomputeHooks{})
	require.NoError(t, err)
	assert.Equal(t, 25, res.Total)
	assert.Equal(t, []int{whole.Processed, whole.Updated, whole.Skipped}, []int{res.Processed, res.Updated, res.Skipped},
		"processed, updated and skipped as one whole run on the same items")
	assert.Equal(t, whole.Errors, res.Errors)
	assert.Greater(t, res.Updated, 0)

	again, err := cur.RecomputeTags(ctx, gtc.RecomputeRequest{}, gtc.RecomputeHooks{})
	require.NoError(t, err)
	assert.Equal(t, 0, again.Updated, "the two runs left nothing stale")
}
