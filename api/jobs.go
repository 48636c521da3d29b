package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/gtc-dev/gtc"
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
	job, err := s.jobs.Submit(JobRecomputeTags, caller.UserID, params, func(ctx context.Context, update func(gtc.JobProgress)) (any, error) {
		res, err := s.cur.RecomputeTags(ctx, req, gtc.RecomputeHooks{Progress: update})
		s.recomputed(res)
		return res, err
	})
	if busy, ok := errors.AsType[*gtc.JobsBusyError](err); ok {
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(busy.RetryAfter/time.Second)))
	}
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, s.opts.Prefix+"/jobs/"+job.ID)
	return writeJSON(c, http.StatusAccepted, job)
}

func (s *Server) handleGetJob(c echo.Context) error {
	job, ok := s.jobs.Get(param(c, "id"))
	if !ok {
		return &gtc.Error{Code: gtc.CodeNotFound, Message: "Job not found"}
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
