package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
)

func (s *suite) jobTests() []namedTest {
	return []namedTest{
		{"RoundTripAndConditionalReplace", s.jobRoundTrip},
		{"UnfinishedAndRetention", s.jobUnfinished},
		{"TooLargeIsRefused", s.jobTooLarge},
	}
}

func (s *suite) newJob(id string, created time.Time) gtc.Job {
	by := "alice"
	return gtc.Job{ID: id, Type: "recompute-tags", Status: gtc.JobQueued, CreatedAt: created, CreatedBy: &by,
		Params: map[string]any{"dataset": "ds-é", "dry_run": false}}
}

// A job reads back as written, params and checkpoint included; a replace at a stale ETag is
// refused and changes nothing.
func (s *suite) jobRoundTrip(t *testing.T) {
	s.skipMissingRead(t)
	st := s.open(t)
	js := st.Jobs()
	_, err := js.Get(ctxT(t), "job-missing")
	require.ErrorIs(t, err, gtc.ErrNotFound)

	created := s.now().Truncate(time.Microsecond)
	j, err := js.Create(ctxT(t), s.newJob("job-1", created))
	require.NoError(t, err)
	require.NotEmpty(t, j.ETag)
	_, err = js.Create(ctxT(t), s.newJob("job-1", created))
	require.ErrorIs(t, err, gtc.ErrConflict, "one job per id")

	total := 40
	started := created.Add(time.Second)
	j.Status, j.StartedAt, j.Progress, j.Checkpoint = gtc.JobRunning, &started, gtc.JobProgress{Total: &total, Processed: 20}, []byte(`{"cursor":"x"}`)
	running, err := js.Replace(ctxT(t), j)
	require.NoError(t, err)
	assert.NotEqual(t, j.ETag, running.ETag)
	_, err = js.Replace(ctxT(t), j) // at the ETag before
	require.ErrorIs(t, err, gtc.ErrPreconditionFailed)

	got, err := js.Get(ctxT(t), "job-1")
	require.NoError(t, err)
	assert.Equal(t, running.ETag, got.ETag)
	assert.Equal(t, gtc.JobRunning, got.Status)
	assert.True(t, created.Equal(got.CreatedAt), "%s", got.CreatedAt)
	require.NotNil(t, got.StartedAt)
	assert.True(t, started.Equal(*got.StartedAt))
	assert.Equal(t, map[string]any{"dataset": "ds-é", "dry_run": false}, got.Params)
	assert.Equal(t, 20, got.Progress.Processed)
	assert.JSONEq(t, `{"cursor":"x"}`, string(got.Checkpoint))
	assert.Equal(t, "alice", *got.CreatedBy)

	finished := started.Add(time.Second)
	got.Status, got.FinishedAt, got.Result, got.Checkpoint = gtc.JobSucceeded, &finished, map[string]any{"updated": 3}, nil
	_, err = js.Replace(ctxT(t), got)
	require.NoError(t, err)
	done, err := js.Get(ctxT(t), "job-1")
	require.NoError(t, err)
	assert.True(t, done.Finished())
	assert.Equal(t, map[string]any{"updated": float64(3)}, done.Result)
	assert.Empty(t, done.Checkpoint)

	ghost := s.newJob("job-ghost", created)
	ghost.ETag = running.ETag
	_, err = js.Replace(ctxT(t), ghost)
	require.Error(t, err, "a replace of a job never stored")
}

// Unfinished lists the queued and running jobs oldest first, up to the limit; DeleteFinished
// removes the jobs finished before its time and no other.
func (s *suite) jobUnfinished(t *testing.T) {
	st := s.open(t)
	js := st.Jobs()
	base := s.now().Truncate(time.Microsecond)
	for i, id := range []string{"job-c", "job-a", "job-b", "job-old", "job-new"} {
		j, err := js.Create(ctxT(t), s.newJob(id, base.Add(time.Duration(i)*time.Second)))
		require.NoError(t, err)
		if id == "job-old" || id == "job-new" {
			at := base.Add(time.Hour)
			if id == "job-new" {
				at = base.Add(3 * time.Hour)
			}
			j.Status, j.FinishedAt = gtc.JobFailed, &at
			_, err = js.Replace(ctxT(t), j)
			require.NoError(t, err)
		}
	}
	ids := func(limit int) string {
		jobs, err := js.Unfinished(ctxT(t), limit)
		require.NoError(t, err)
		var out []string
		for _, j := range jobs {
			out = append(out, j.ID)
		}
		return strings.Join(out, ",")
	}
	assert.Equal(t, "job-c,job-a,job-b", ids(10), "oldest first, finished ones left out")
	assert.Equal(t, "job-c,job-a", ids(2))

	n, err := js.DeleteFinished(ctxT(t), base.Add(2*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	_, err = js.Get(ctxT(t), "job-new")
	assert.NoError(t, err, "finished after the cut: kept")
	assert.Equal(t, "job-c,job-a,job-b", ids(10), "unfinished jobs are never deleted")
}

// A job whose params, result and checkpoint exceed what a stored job holds is refused before
// anything is written.
func (s *suite) jobTooLarge(t *testing.T) {
	s.skipMissingRead(t)
	st := s.open(t)
	j := s.newJob("job-big", s.now())
	j.Params = strings.Repeat("x", gtc.MaxJobDocumentBytes)
	_, err := st.Jobs().Create(ctxT(t), j)
	require.ErrorIs(t, err, gtc.ErrTooLarge)
	_, err = st.Jobs().Get(ctxT(t), "job-big")
	require.ErrorIs(t, err, gtc.ErrNotFound)
}
