package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/jobs"
)

// recomputeParams are the recompute parameters as the server understood them; a job shows
// them as its params.
type recomputeParams struct {
	Dataset *string `json:"dataset"`
	Status  *string `json:"status"`
	DryRun  bool    `json:"dry_run"`
}

func (s *Server) handleRecompute(c echo.Context) error {
	req, params, async, err := parseRecompute(c.Request().URL)
	if err != nil {
		return err
	}
	if !async {
		res, err := s.cur.RecomputeTags(c.Request().Context(), req, gtc.RecomputeHooks{})
		s.recomputed(res)
		if err != nil {
			return err
		}
		return writeJSON(c, http.StatusOK, res)
	}
	caller := gtc.CallerFrom(c.Request().Context())
	if err := caller.Require(jobRole(JobRecomputeTags), "the job "+JobRecomputeTags); err != nil {
		return err
	}
	job, err := s.jobs.Submit(c.Request().Context(), JobRecomputeTags, caller.UserID, params)
	if busy, ok := errors.AsType[*gtc.JobsBusyError](err); ok {
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(busy.RetryAfter/time.Second)))
	}
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, s.opts.Prefix+"/jobs/"+job.ID)
	return writeJSON(c, http.StatusAccepted, job)
}

// maxJobErrors bounds the per-item problems a recompute job keeps in its result and its
// checkpoints, so a stored job stays within gtc.MaxJobDocumentBytes whatever fails.
const maxJobErrors = 1000

// capErrors keeps the first maxJobErrors problems of res and says how many more there were.
func capErrors(res *gtc.RecomputeResult) {
	if n := len(res.Errors); n > maxJobErrors {
		res.Errors = append(res.Errors[:maxJobErrors:maxJobErrors], fmt.Sprintf("... and %d more", n-maxJobErrors))
	}
}

// recomputeJob is the work of a recompute-tags job, on whichever server runs it: from the
// start, or from the checkpoint of a server that stopped.
func (s *Server) recomputeJob(ctx context.Context, run *jobs.Run) (any, error) {
	var params recomputeParams
	if err := remarshal(run.Job.Params, &params); err != nil {
		return nil, &gtc.Error{Code: gtc.CodeInternal, Message: "The job's parameters do not read back"}
	}
	req := gtc.RecomputeRequest{Dataset: params.Dataset, DryRun: params.DryRun}
	if params.Status != nil {
		st := gtc.Status(*params.Status)
		req.Status = &st
	}
	if len(run.Job.Checkpoint) > 0 {
		var cp gtc.RecomputeCheckpoint
		if err := json.Unmarshal(run.Job.Checkpoint, &cp); err != nil {
			return nil, &gtc.Error{Code: gtc.CodeInternal, Message: "The job's checkpoint does not read back"}
		}
		req.From = &cp
	}
	var last gtc.JobProgress
	res, err := s.cur.RecomputeTags(ctx, req, gtc.RecomputeHooks{
		Progress: func(p gtc.JobProgress) {
			last = p
			run.Update(p, nil)
		},
		Checkpoint: func(cp gtc.RecomputeCheckpoint) {
			capErrors(&cp.Result)
			b, err := json.Marshal(cp)
			if err == nil {
				run.Update(last, b)
			}
		},
	})
	if res != nil {
		capErrors(res)
	}
	s.recomputed(res)
	return res, err
}

// remarshal reads v (a typed value, or the decoded JSON of a stored one) into out.
func remarshal(v any, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

func (s *Server) handleGetJob(c echo.Context) error {
	job, err := s.jobs.Get(c.Request().Context(), param(c, "id"))
	if errors.Is(err, gtc.ErrNotFound) {
		return &gtc.Error{Code: gtc.CodeNotFound, Message: "Job not found"}
	}
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, job)
}

// RecomputeObserver is implemented by an Observer that counts tag recomputes: it is told of
// every recompute the API ran, inline or as a job, once it ends.
type RecomputeObserver interface {
	Recomputed(res *gtc.RecomputeResult)
}

func (s *Server) recomputed(res *gtc.RecomputeResult) {
	if ro, ok := s.observer.(RecomputeObserver); ok && res != nil && !res.DryRun {
		ro.Recomputed(res)
	}
}
