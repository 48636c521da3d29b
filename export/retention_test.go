// The fuzz builds (scripts/fuzz.sh, -tags fuzzing) leave these tests out: they run on the
// SQLite store (sqlite_test.go), which a fuzz build would instrument.

//go:build !fuzzing

package export

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
)

// Retain deletes incomplete snapshots past their age and complete ones past the retention;
// a retention of 0 keeps complete snapshots however old.
func TestRetain(t *testing.T) {
	h := newHarness(t, 3)
	ctx := context.Background()
	h.clock.Set(time.Now().UTC()) // the storage stamps objects with the wall clock
	done, err := h.x.Artifact(ctx, h.plan(t, "jsonl"))
	require.NoError(t, err)
	writeObject(t, h.local, "exports/snapshots/20200101T000000Z/.reserved", "")
	writeObject(t, h.local, "exports/snapshots/20200101T000000Z/ground-truth-x.json", "{}")
	dirOf := func(id string) string { return filepath.Join(h.root, "exports/snapshots", id) }
	opts := RetainOptions{Complete: 30 * 24 * time.Hour, Incomplete: 24 * time.Hour}

	got, err := h.x.Retain(ctx, opts)
	require.NoError(t, err)
	assert.Empty(t, got, "both snapshots are younger than their ages")

	h.clock.Advance(25 * time.Hour)
	got, err = h.x.Retain(ctx, opts)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, Pruned{SnapshotID: "20200101T000000Z", Complete: false, Modified: got[0].Modified, Objects: 2}, got[0])
	assert.NoDirExists(t, dirOf("20200101T000000Z"))
	assert.DirExists(t, dirOf(done.SnapshotID), "a complete snapshot within the retention stays")

	h.clock.Advance(30 * 24 * time.Hour)
	got, err = h.x.Retain(ctx, RetainOptions{Incomplete: 24 * time.Hour})
	require.NoError(t, err)
	assert.Empty(t, got, "a retention of 0 keeps complete snapshots")
	got, err = h.x.Retain(ctx, opts)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, done.SnapshotID, got[0].SnapshotID)
	assert.True(t, got[0].Complete)
	assert.NoDirExists(t, dirOf(done.SnapshotID))
	_, total, err := h.x.ListSnapshots(ctx, 0, 10)
	require.NoError(t, err)
	assert.Equal(t, 0, total, "a pruned snapshot is no longer listed")
}

// An artifact export to local storage with less free space than MinFreeBytes is refused
// before anything is written; storage that cannot tell its free space (Blob) is not checked.
func TestArtifactRefusedBelowMinFreeSpace(t *testing.T) {
	h := newHarness(t, 3)
	ctx := context.Background()
	free, err := h.local.FreeBytes()
	if err != nil {
		t.Skipf("free space is not measured here: %v", err)
	}
	require.Positive(t, free)
	pr, fr := Builtins(nil)
	newExporter := func(arts gtc.ArtifactStore, minFree uint64) *Exporter {
		x, err := New(Config{Items: h.st.Items(), Artifacts: arts, Clock: h.clock, Processors: pr, Formatters: fr,
			TempDir: filepath.Join(h.root, "tmp"), MinFreeBytes: minFree})
		require.NoError(t, err)
		return x
	}
	plan := func(x *Exporter) *Plan { return planOf(t, x, "jsonl", gtc.DeliveryArtifact) }

	x := newExporter(h.local, 1<<62)
	_, err = x.Artifact(ctx, plan(x))
	ge, ok := gtc.AsError(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, gtc.CodeInsufficientStorage, ge.Code)
	assert.Regexp(t, `^Export storage has [0-9.]+ [KMGTPE]?i?B free, less than the 4.0 EiB kept free for the server \(GTC_EXPORT_MIN_FREE_BYTES\); nothing was written\.`, ge.Message)
	entries, err := os.ReadDir(filepath.Join(h.root, "exports"))
	if err == nil {
		assert.Empty(t, entries, "nothing was written")
	} else {
		assert.ErrorIs(t, err, os.ErrNotExist)
	}

	x = newExporter(h.local, 1)
	res, err := x.Artifact(ctx, plan(x))
	require.NoError(t, err, "enough room")
	assert.Equal(t, 3, res.Count)

	x = newExporter(h.spy, 1<<62) // storage that does not report its free space
	_, err = x.Artifact(ctx, plan(x))
	require.NoError(t, err)
}
