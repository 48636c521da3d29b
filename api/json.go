package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/gtc-dev/gtc"
)

// writeJSON answers with compact JSON: UTF-8, no HTML escaping, non-ASCII kept as is
// (api.md §1.3).
func writeJSON(c echo.Context, status int, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	b := buf.Bytes()
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	return writeRaw(c, status, b)
}

func writeRaw(c echo.Context, status int, b []byte) error {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "application/json")
	h.Set(echo.HeaderContentLength, strconv.Itoa(len(b)))
	c.Response().WriteHeader(status)
	if c.Request().Method == http.MethodHead {
		return nil
	}
	_, err := c.Response().Write(b)
	return err
}

// writeItem answers with one item and its ETag header (api.md §1.7).
func writeItem(c echo.Context, status int, it *gtc.Item) error {
	var buf bytes.Buffer
	it.AppendAPIJSON(&buf)
	c.Response().Header().Set("ETag", gtc.ETagHeader(it.ETag))
	return writeRaw(c, status, buf.Bytes())
}

// writeItems answers with a bare JSON array of items.
func writeItems(c echo.Context, items []*gtc.Item) error {
	var buf bytes.Buffer
	appendItems(&buf, items)
	return writeRaw(c, http.StatusOK, buf.Bytes())
}

func appendItems(buf *bytes.Buffer, items []*gtc.Item) {
	buf.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			buf.WriteByte(',')
		}
		it.AppendAPIJSON(buf)
	}
	buf.WriteByte(']')
}
