package cosmos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/gtc-dev/gtc"
)

// Jobs live in the meta container, in one partition ("jobs"): the jobs of a store are few
// (a retention period's worth), and one partition lets the scan for unfinished jobs and the
// retention sweep filter on its key, so the service reads that partition only. A document embeds the job's record; finished
// is a boolean the queries filter on. Every write after the create is conditional on the
// document's ETag.

const jobsPK = "jobs"

type jobDoc struct {
	ID       string         `json:"id"`
	PK       string         `json:"pk"`
	Kind     string         `json:"kind"`
	Finished bool           `json:"finished"`
	Job      *gtc.JobRecord `json:"job"`
}

// jobStore implements gtc.JobStore.
type jobStore struct{ s *Store }

var _ gtc.JobStore = jobStore{}

// Jobs returns the store's jobs.
func (s *Store) Jobs() gtc.JobStore { return jobStore{s} }

func encodeJob(op string, j gtc.Job) ([]byte, error) {
	r, err := gtc.NewJobRecord(j)
	if err != nil {
		return nil, fmt.Errorf("cosmos: %s: %w", op, err)
	}
	b, err := json.Marshal(jobDoc{ID: r.ID, PK: jobsPK, Kind: "job", Finished: r.FinishedAt != nil, Job: r})
	if err != nil {
		return nil, fmt.Errorf("cosmos: %s %s: %w: %w", op, j.ID, gtc.ErrInvalidArgument, err)
	}
	return b, nil
}

func decodeJob(op string, raw []byte, etag string) (gtc.Job, error) {
	var d jobDoc
	if err := json.Unmarshal(raw, &d); err != nil || d.Job == nil {
		return gtc.Job{}, fmt.Errorf("cosmos: %s: %w: stored job unreadable: %v", op, gtc.ErrUnavailable, err)
	}
	if etag == "" {
		var e struct {
			ETag string `json:"_etag"`
		}
		_ = json.Unmarshal(raw, &e) // the document decoded above
		etag = e.ETag
	}
	j, err := d.Job.Job(etag)
	if err != nil {
		return gtc.Job{}, fmt.Errorf("cosmos: %w", err)
	}
	return j, nil
}

func (js jobStore) Create(ctx context.Context, j gtc.Job) (gtc.Job, error) {
	const op = "create job"
	body, err := encodeJob(op, j)
	if err != nil {
		return gtc.Job{}, err
	}
	if js.s.closed.Load() {
		return gtc.Job{}, errClosed(op)
	}
	resp, err := js.s.meta.CreateItem(ctx, azcosmos.NewPartitionKeyString(jobsPK), body, nil)
	if err != nil {
		return gtc.Job{}, wrapErr(op+" "+j.ID, err)
	}
	j.ETag = string(resp.ETag)
	return j, nil
}

func (js jobStore) Get(ctx context.Context, id string) (gtc.Job, error) {
	const op = "read job"
	if js.s.closed.Load() {
		return gtc.Job{}, errClosed(op)
	}
	if id == "" || len(id) > gtc.MaxJobIDBytes {
		return gtc.Job{}, fmt.Errorf("cosmos: %s: %w", op, gtc.ErrNotFound)
	}
	resp, err := js.s.meta.ReadItem(ctx, azcosmos.NewPartitionKeyString(jobsPK), id, nil)
	if err != nil {
		return gtc.Job{}, wrapErr(op+" "+id, err)
	}
	return decodeJob(op, resp.Value, string(resp.ETag))
}

func (js jobStore) Replace(ctx context.Context, j gtc.Job) (gtc.Job, error) {
	const op = "replace job"
	body, err := encodeJob(op, j)
	if err != nil {
		return gtc.Job{}, err
	}
	if js.s.closed.Load() {
		return gtc.Job{}, errClosed(op)
	}
	resp, err := js.s.meta.ReplaceItem(ctx, azcosmos.NewPartitionKeyString(jobsPK), j.ID, body,
		&azcosmos.ItemOptions{IfMatchEtag: etagPtr(j.ETag)})
	if err != nil {
		return gtc.Job{}, wrapErr(op+" "+j.ID, err)
	}
	j.ETag = string(resp.ETag)
	return j, nil
}

// jobsQuery is a query of the jobs partition: its filter on the partition key keeps it to
// that partition.
func jobsQuery(text string) sqlQuery {
	return sqlQuery{text: text, params: []azcosmos.QueryParameter{{Name: "@pk", Value: jobsPK}}}
}

func (js jobStore) Unfinished(ctx context.Context, limit int) ([]gtc.Job, error) {
	const op = "list unfinished jobs"
	var out []gtc.Job
	err := js.s.rows(ctx, js.s.meta, op, jobsQuery("SELECT * FROM c WHERE c.pk = @pk AND c.kind = 'job' AND c.finished = false"),
		func(row []byte) error {
			j, err := decodeJob(op, row, "")
			if err != nil {
				return err
			}
			out = append(out, j)
			return nil
		})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(a, b int) bool { return out[a].CreatedAt.Before(out[b].CreatedAt) })
	return out[:min(len(out), max(limit, 0))], nil
}

func (js jobStore) DeleteFinished(ctx context.Context, t time.Time) (int, error) {
	const op = "delete finished jobs"
	cut := gtc.FormatStoredTime(t)
	type finished struct {
		ID         string `json:"id"`
		FinishedAt string `json:"finishedAt"`
	}
	rows, err := collectRows[finished](ctx, js.s, js.s.meta, op,
		jobsQuery("SELECT c.id, c.job.finishedAt FROM c WHERE c.pk = @pk AND c.kind = 'job' AND c.finished = true"))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range rows {
		if r.FinishedAt >= cut { // the stored format sorts as text
			continue
		}
		_, err := js.s.meta.DeleteItem(ctx, azcosmos.NewPartitionKeyString(jobsPK), r.ID, nil)
		if err != nil && statusOf(err) != http.StatusNotFound {
			return n, wrapErr(op, err)
		}
		n++
	}
	return n, nil
}
