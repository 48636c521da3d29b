package api

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBodyDeadlineEndsWithTheBody: the read deadline that bounds the arrival of a body is
// lifted once the body is in, so a long operation (an export runs under GTC_EXPORT_TIMEOUT,
// not GTC_REQUEST_TIMEOUT) is not cancelled when the request deadline passes mid-way.
func TestBodyDeadlineEndsWithTheBody(t *testing.T) {
	t.Parallel()
	s := New(Deps{}, Options{RequestTimeout: 200 * time.Millisecond})
	s.long["/v1/test-long"] = true
	s.e.Add(http.MethodPost, "/v1/test-long", func(c echo.Context) error {
		time.Sleep(700 * time.Millisecond)
		if err := c.Request().Context().Err(); err != nil {
			return c.String(http.StatusOK, "cancelled: "+err.Error())
		}
		return c.String(http.StatusOK, "finished with "+string(body(c)))
	}, s.readBody)
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()

	res, err := http.Post(ts.URL+"/v1/test-long", "application/json", strings.NewReader(`{"a":1}`))
	require.NoError(t, err)
	defer res.Body.Close()
	got, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, `finished with {"a":1}`, string(got))
}
