package screen

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/sqlite"
)

// BenchmarkImportScreen screens an import of 10,000 realistic drafts in batches of 100
// against the 1,000 approved items of their dataset in a SQLite store (duplicate check only;
// one draft in ten repeats a candidate's conversation): the Screen of every batch, which
// reads and signs the candidates for each batch, against one Run for all of them.
func BenchmarkImportScreen(b *testing.B) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(b.TempDir(), "gtc.db"), Synchronous: "NORMAL"})
	require.NoError(b, err)
	b.Cleanup(func() { _ = st.Close() })
	ticket := func(it *gtc.Item, n int) *gtc.Item {
		it.History[2].Msg = fmt.Sprintf("%s (ticket %d)", it.History[2].Msg, n)
		return it
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cands := make([]*gtc.Item, DuplicateCandidateLimit)
	for j := range cands {
		c := ticket(realisticItem("ds", 100000+j), j)
		c.Status, c.Bucket, c.UpdatedAt = gtc.StatusApproved, gtc.DeriveBucket(c.DatasetName, c.ID), t0.Add(time.Duration(j)*time.Second)
		cands[j] = c
	}
	for i, err := range st.Items().CreateEach(ctx, cands) {
		require.NoError(b, err, "candidate %d", i)
	}
	const batchSize = 100
	var batches [][]*gtc.ImportEntry
	for i := range 10000 {
		if i%batchSize == 0 {
			batches = append(batches, nil)
		}
		d := realisticItem("ds", i)
		if i%10 == 0 {
			d = ticket(d, i%DuplicateCandidateLimit)
		} else {
			d = ticket(d, DuplicateCandidateLimit+i)
		}
		batches[len(batches)-1] = append(batches[len(batches)-1], &gtc.ImportEntry{Item: d})
	}
	s := New(Options{Duplicates: true, Items: st.Items()})
	for _, bc := range []struct {
		name   string
		screen func() gtc.ImportScreen
	}{
		{"per-batch", func() gtc.ImportScreen { return s }},
		{"run", func() gtc.ImportScreen { return s.ForRun() }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				scr := bc.screen()
				n = 0
				for _, batch := range batches {
					res := &gtc.ImportResult{Errors: []gtc.ImportIssue{}, DuplicateWarnings: []gtc.DuplicateWarning{}}
					scr.Screen(ctx, batch, res)
					n += len(res.DuplicateWarnings)
				}
			}
			b.ReportMetric(float64(n), "warnings/op")
		})
	}
}
