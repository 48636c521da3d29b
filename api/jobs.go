package api

import (
	"context"
	"net/http"

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
		if err != nil {
			return err
		}
		return writeJSON(c, http.StatusOK, res)
	}
	caller := gtc.CallerFrom(c.Request().Context())
	job := s.jobs.Submit("recompute-tags", caller.UserID, params, func(ctx context.Context, update func(gtc.JobProgress)) (any, error) {
		return s.cur.RecomputeTags(ctx, req, gtc.RecomputeHooks{Progress: update})
	})
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
