package loadkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// Client sends JSON requests to one server, or in turn to the replicas of one service.
type Client struct {
	Base string // root URL, without a trailing slash
	// Replicas are further root URLs of the same service: requests go to Base and to each of
	// these in turn.
	Replicas []string
	HTTP     *http.Client
	next     atomic.Uint64
}

// base returns the root URL of the next request.
func (c *Client) base() string {
	if len(c.Replicas) == 0 {
		return c.Base
	}
	i := c.next.Add(1) % uint64(len(c.Replicas)+1)
	if i == 0 {
		return c.Base
	}
	return c.Replicas[i-1]
}

// NewClient returns a client for base that keeps up to conns connections open and gives
// each request timeout (0: none).
func NewClient(base string, conns int, timeout time.Duration) *Client {
	return &Client{Base: base, HTTP: &http.Client{
		Transport: &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns},
		Timeout:   timeout,
	}}
}

// Do sends one request (body nil: none; Content-Type is application/json either way, as the
// curator frontend sends it) with the headers hdr, and reads the whole answer.
func (c *Client) Do(method, path string, body []byte, hdr map[string]string) (*http.Response, []byte, error) {
	return c.DoContext(context.Background(), method, path, body, hdr)
}

// DoContext is Do under ctx.
func (c *Client) DoContext(ctx context.Context, method, path string, body []byte, hdr map[string]string) (*http.Response, []byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base()+path, r)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := c.HTTP.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	return res, data, err
}

// GetJSON GETs path and decodes a 200 answer into v; any other status is an error that
// quotes the answer.
func (c *Client) GetJSON(path string, v any) error {
	res, data, err := c.Do(http.MethodGet, path, nil, nil)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %.300s", path, res.StatusCode, data)
	}
	return json.Unmarshal(data, v)
}
