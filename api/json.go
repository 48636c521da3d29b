package api

import (
	"bytes"
	"context"
	stdjson "encoding/json"
	"errors"
	"iter"
	"net/http"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
	"github.com/labstack/echo/v4"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

// jsonOptions encode answers: the semantics of encoding/json (nil slices and maps are null,
// map keys sorted, MarshalJSON output kept as written, an encoding/json Number written as the
// number it holds) with jsontext's escaping (<, >, &, U+2028 and U+2029 as they are; invalid
// UTF-8 as U+FFFD).
var jsonOptions = json.JoinOptions(jsonv1.DefaultOptionsV1(), jsontext.EscapeForHTML(false), jsontext.EscapeForJS(false),
	json.WithMarshalers(json.MarshalFunc(func(n stdjson.Number) ([]byte, error) {
		if n == "" {
			return []byte("0"), nil // as encoding/json writes it
		}
		return []byte(n), nil
	})))

// marshal encodes v compactly with jsonOptions.
func marshal(v any) ([]byte, error) { return json.Marshal(v, jsonOptions) }

// writeJSON answers with compact JSON: UTF-8, no HTML escaping, non-ASCII kept as is.
func writeJSON(c echo.Context, status int, v any) error {
	b, err := marshal(v)
	if err != nil {
		return err
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

// writeItem answers with one item and its ETag header.
func writeItem(c echo.Context, status int, it *gtc.Item) error {
	c.Response().Header().Set("ETag", gtc.ETagHeader(it.ETag))
	return writeRaw(c, status, codec.ItemAPIJSON(it))
}

func appendItems(buf *bytes.Buffer, items []*gtc.Item) {
	buf.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(codec.AppendItemAPI(buf.AvailableBuffer(), it))
	}
	buf.WriteByte(']')
}

// streamBuffer is how many bytes of a streamed item array are held before they are sent.
const streamBuffer = 64 << 10

// streamItems answers with a bare JSON array of the items seq yields, the same bytes as
// appendItems writes. Each item is encoded as it arrives and the encoded bytes go out in chunks of
// about streamBuffer, so the answer is never held whole: memory is one store page and one
// buffer, however many items there are. An answer that fits in the buffer is sent whole
// with Content-Length; a longer one is chunked.
//
// An error before the first chunk is an ordinary error answer. After it the status line is
// out, so the connection is dropped instead (http.ErrAbortHandler) and the client sees a
// cut body, never a complete-looking array.
func (s *Server) streamItems(c echo.Context, seq iter.Seq2[*gtc.Item, error]) error {
	var buf bytes.Buffer
	buf.WriteByte('[')
	res := c.Response()
	started := false
	send := func() error {
		if !started {
			res.Header().Set(echo.HeaderContentType, "application/json")
			res.WriteHeader(http.StatusOK)
			started = true
		}
		_, err := res.Write(buf.Bytes())
		buf.Reset()
		return err
	}
	n := 0
	var failed error // the loop ends before the abort, so the store's iterator finishes cleanly
	for it, err := range seq {
		if err != nil {
			failed = err
			break
		}
		if n > 0 {
			buf.WriteByte(',')
		}
		buf.Write(codec.AppendItemAPI(buf.AvailableBuffer(), it))
		n++
		if buf.Len() >= streamBuffer {
			if err := send(); err != nil {
				failed = err // the client has gone; stop reading the store
				break
			}
		}
	}
	switch {
	case failed != nil && !started:
		return failed
	case failed != nil:
		s.abortStream(c, n, failed)
	}
	buf.WriteByte(']')
	if !started {
		return writeRaw(c, http.StatusOK, buf.Bytes())
	}
	if err := send(); err != nil {
		s.abortStream(c, n, err)
	}
	return nil
}

// abortStream ends a streamed answer that cannot be finished by dropping the connection.
// A store failure is logged as an error; a client that went away (or the request deadline)
// only as a warning.
func (s *Server) abortStream(c echo.Context, items int, err error) {
	ctx := c.Request().Context()
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		s.log.WarnContext(ctx, "item list stream stopped", "request_id", requestID(c), "items", items, "err", err)
	} else {
		s.log.ErrorContext(ctx, "item list stream aborted", "request_id", requestID(c), "items", items, "err", err)
	}
	panic(http.ErrAbortHandler)
}
