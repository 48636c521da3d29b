package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two gtc serve processes on one Cosmos DB database: an async recompute started on A is
// answered for by B while A runs it; when A gets SIGTERM in the middle, it hands the job back
// and exits cleanly, and B takes the job over from A's checkpoint and finishes it.
func TestAJobStartedOnOneReplicaFinishesOnAnotherAfterSIGTERM(t *testing.T) {
	const n = 80
	e, _ := cosmosEnv(t, t.TempDir(), "GTC_COSMOS_CREATE_CONTAINERS=true", "GTC_RECOMPUTE_BATCH_SIZE=1", "GTC_JOB_LEASE_TTL=1s")
	a := startServer(t, e)
	b := startServer(t, e)
	importItems(t, a, "jobs", n, "topic:a")

	code, job, hdr := doJSON(t, http.MethodPost, a.base+"/v1/ground-truths/recompute-tags?async=true&dataset=jobs", nil, nil)
	require.Equal(t, http.StatusAccepted, code, "%v", job)
	id := job["id"].(string)
	assert.Equal(t, "/v1/jobs/"+id, hdr.Get("Location"))

	poll := func(s *server, until func(map[string]any) bool) map[string]any {
		t.Helper()
		var last map[string]any
		require.Eventually(t, func() bool {
			code, body, _ := doJSON(t, http.MethodGet, s.base+"/v1/jobs/"+id, nil, nil)
			require.Equal(t, http.StatusOK, code, "%v", body)
			last = body
			return until(body)
		}, 60*time.Second, 20*time.Millisecond, "job on %s: %v", s.base, last)
		return last
	}
	running := poll(b, func(j map[string]any) bool { return j["status"] == "running" })
	assert.Equal(t, float64(0), running["resumed"], "B answers for the job A runs")

	faultStop(t, a) // SIGTERM; exits 0
	a.logContains(t, `"msg":"job handed back"`)

	done := poll(b, func(j map[string]any) bool { return j["status"] == "succeeded" || j["status"] == "failed" })
	require.Equal(t, "succeeded", done["status"], "%v", done)
	assert.Equal(t, float64(1), done["resumed"], "taken over once, from A")
	result := done["result"].(map[string]any)
	assert.Equal(t, float64(n), result["total"])
	assert.Equal(t, float64(n), result["processed"], "every item once: A's pages and B's")
	b.logContains(t, `"msg":"job resumed"`)
	assert.False(t, strings.Contains(b.stderr.String(), `"level":"ERROR"`), "no errors on B:\n%s", b.stderr.String())
}
