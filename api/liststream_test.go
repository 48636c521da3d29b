// Left out of the fuzz builds with the rest of package api_test (see harness_test.go).

//go:build !fuzzing

package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
)

// itemsStore is a store whose item store a test can replace.
type itemsStore struct {
	gtc.Store
	items gtc.ItemStore
}

func (s itemsStore) Items() gtc.ItemStore { return s.items }

// gatedItems passes QueryAll through, but can hold it before the item at index holdAt until
// release is closed, and fail it with an unreachable store at index failAt.
type gatedItems struct {
	gtc.ItemStore
	holdAt, failAt atomic.Int64 // -1: never
	release        chan struct{}
}

func (g *gatedItems) QueryAll(ctx context.Context, q gtc.Query) iter.Seq2[*gtc.Item, error] {
	return func(yield func(*gtc.Item, error) bool) {
		var n int64
		for it, err := range g.ItemStore.QueryAll(ctx, q) {
			if err != nil {
				yield(nil, err)
				return
			}
			if n == g.failAt.Load() {
				yield(nil, fmt.Errorf("disk gone: %w", gtc.ErrUnavailable))
				return
			}
			if n == g.holdAt.Load() {
				select {
				case <-g.release:
				case <-ctx.Done():
					yield(nil, ctx.Err())
					return
				}
			}
			if !yield(it, nil) {
				return
			}
			n++
		}
	}
}

// streamHarness is a harness whose dataset list reads through gatedItems, with n items
// of about 700 bytes each in the dataset "alpha".
func streamHarness(t *testing.T, n int) (*harness, *gatedItems) {
	g := &gatedItems{release: make(chan struct{})}
	g.holdAt.Store(-1)
	g.failAt.Store(-1)
	h := newHarnessWith(t, func(d *gtc.CuratorDeps) {
		g.ItemStore = d.Store.Items()
		d.Store = itemsStore{Store: d.Store, items: g}
	})
	h.storeItems(n, "alpha")
	return h, g
}

// The list of a dataset is sent as it is read: a long answer is chunked, and its bytes are
// exactly the items' own JSON (as GET of each item answers it) in list order.
func TestListDatasetIsStreamedWithTheSameBytes(t *testing.T) {
	t.Parallel()
	h, _ := streamHarness(t, 200)
	res := h.get("/v1/ground-truths/alpha")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Empty(t, res.Header.Get("Content-Length"), "a long list is chunked")
	assert.Equal(t, "application/json", res.Header.Get("Content-Type"))
	list := res.Array(t)
	require.Len(t, list, 200)
	var want bytes.Buffer
	want.WriteByte('[')
	for i, v := range list {
		it := v.(map[string]any)
		if i > 0 {
			want.WriteByte(',')
		}
		one := h.get("/v1/ground-truths/alpha/" + it["bucket"].(string) + "/" + it["id"].(string))
		require.Equal(t, http.StatusOK, one.Status)
		want.Write(one.Body)
	}
	want.WriteByte(']')
	assert.Greater(t, want.Len(), 128<<10, "the answer is longer than the stream buffer")
	assert.Equal(t, want.String(), string(res.Body), "the same bytes as the items one by one")

	// A short list is still sent whole, with its length.
	short := h.get("/v1/ground-truths/nope")
	assert.Equal(t, "2", short.Header.Get("Content-Length"))
	assert.Equal(t, "[]", string(short.Body))
}

// The first items reach the client while the store is still being read: the server does
// not hold the whole answer.
func TestListDatasetReachesTheClientBeforeTheEnd(t *testing.T) {
	t.Parallel()
	h, g := streamHarness(t, 200)
	g.holdAt.Store(150) // about 100 KiB are out before the store is held
	type got struct {
		res  *http.Response
		head []byte
		err  error
	}
	first := make(chan got, 1)
	go func() {
		res, err := http.Get(h.srv.URL + "/v1/ground-truths/alpha")
		if err != nil {
			first <- got{err: err}
			return
		}
		head := make([]byte, 64<<10)
		_, err = io.ReadFull(res.Body, head)
		first <- got{res: res, head: head, err: err}
	}()
	var r got
	select {
	case r = <-first:
	case <-time.After(20 * time.Second):
		close(g.release)
		t.Fatal("no byte of the list arrived while the store was held: the answer is not streamed")
	}
	require.NoError(t, r.err)
	defer r.res.Body.Close()
	assert.Equal(t, http.StatusOK, r.res.StatusCode)
	assert.True(t, bytes.HasPrefix(r.head, []byte(`[{"`)))
	close(g.release)
	rest, err := io.ReadAll(r.res.Body)
	require.NoError(t, err)
	var list []map[string]any
	require.NoError(t, json.Unmarshal(append(r.head, rest...), &list))
	assert.Len(t, list, 200)
}

// A store that fails after the answer has started cuts the connection, so the client
// cannot take a truncated list for the whole dataset; one that fails before gets an
// ordinary JSON error.
func TestListDatasetStoreFailure(t *testing.T) {
	t.Parallel()
	h, g := streamHarness(t, 200)
	g.failAt.Store(150)
	resp, err := http.Get(h.srv.URL + "/v1/ground-truths/alpha")
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.Error(t, err, "the body must not look complete")
	assert.True(t, errors.Is(err, io.ErrUnexpectedEOF), "%v", err)
	assert.True(t, strings.HasPrefix(string(body), `[{"`))
	assert.False(t, json.Valid(body), "a cut list is not valid JSON")

	g.failAt.Store(0)
	res := h.get("/v1/ground-truths/alpha")
	assert.Equal(t, http.StatusServiceUnavailable, res.Status)
	assert.Equal(t, "STORE_UNAVAILABLE", res.Object(t)["code"])

	g.failAt.Store(20) // fails while the answer is still in the buffer
	res = h.get("/v1/ground-truths/alpha")
	assert.Equal(t, http.StatusServiceUnavailable, res.Status)
	assert.Equal(t, "STORE_UNAVAILABLE", res.Object(t)["code"])
}

// The caller's queue is streamed like a dataset list: chunked when long, cut when the store
// fails part-way.
func TestMyAssignmentsIsStreamed(t *testing.T) {
	t.Parallel()
	h, g := streamHarness(t, 0)
	user := "anonymous" // the dev-mode caller
	for i := range 200 {
		it := gtc.NewItem("queue", fmt.Sprintf("item-%03d", i))
		it.Bucket = "6f1c3d2e-0000-4000-8000-000000000001"
		it.History = []gtc.HistoryEntry{{Role: "user", Msg: strings.Repeat("How do I rotate the keys? ", 20)}}
		it.UpdatedAt = t0
		at := t0.Add(time.Duration(i) * time.Second)
		it.AssignedTo, it.AssignedAt = &user, &at
		_, err := h.store.Items().Create(context.Background(), it)
		require.NoError(t, err)
	}
	res := h.get("/v1/assignments/my")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Empty(t, res.Header.Get("Content-Length"), "a long queue is chunked")
	got := ids(t, res.Array(t))
	require.Len(t, got, 200)
	assert.Equal(t, "item-000", got[0], "oldest assignment first")
	assert.Equal(t, "item-199", got[199])

	g.failAt.Store(150)
	resp, err := http.Get(h.srv.URL + "/v1/assignments/my")
	require.NoError(t, err)
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	assert.True(t, errors.Is(err, io.ErrUnexpectedEOF), "the body must not look complete: %v", err)
}
