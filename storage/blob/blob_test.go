package blob

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/storetest/testenv"
)

const (
	azuriteKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	// wrongKey is valid base64, so the request is signed and refused by the server.
	wrongKey = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
)

var quiet = slog.New(slog.DiscardHandler)

// containerName is a fresh name of the form t-<16 hex>, one per test.
func containerName() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "t-" + hex.EncodeToString(b)
}

// rawClient is the SDK client the tests use behind the store's back.
func rawClient(t testing.TB, cs string) *azblob.Client {
	c, err := azblob.NewClientFromConnectionString(cs, nil)
	require.NoError(t, err)
	return c
}

// newStore returns a store on a fresh container, created through Check (so the creation
// path runs on every test) and deleted at cleanup.
func newStore(t testing.TB) *Store {
	t.Helper()
	cs := testenv.BlobConnectionString(t)
	name := containerName()
	s, err := New(Options{Container: name, ConnectionString: cs, Logger: quiet})
	require.NoError(t, err)
	require.NoError(t, s.Check(t.Context(), true))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := rawClient(t, cs).DeleteContainer(ctx, name, nil); err != nil {
			t.Logf("deleting container %s: %v", name, err)
		}
	})
	return s
}

// rawNames lists every committed blob in the store's container with the SDK directly.
// Uncommitted blocks of a cancelled upload are not objects (the service discards them), so
// they are not listed.
func rawNames(t *testing.T, s gtc.ArtifactStore) []string {
	t.Helper()
	bs := s.(*Store)
	var names []string
	pager := bs.c.NewListBlobsFlatPager(nil)
	for pager.More() {
		page, err := pager.NextPage(t.Context())
		require.NoError(t, err)
		for _, it := range page.Segment.BlobItems {
			names = append(names, *it.Name)
		}
	}
	return names
}

// pattern is deterministic, incompressible-looking content of n bytes.
func pattern(n int, seed uint64) []byte {
	r := mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	for i := n - n%8; i < n; i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

func hexSHA(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestPutSizes crosses the single-request/staged-block boundary: the hash, size and bytes
// must survive both paths, and the staged path must really commit 4 MiB blocks.
func TestPutSizes(t *testing.T) {
	s := newStore(t)
	cases := []struct {
		size   int
		blocks int // committed blocks; 0 for a single Put Blob
	}{
		{0, 0},
		{1, 0},
		{blockSize - 1, 0},
		{blockSize, 1},
		{blockSize + 1, 2},
		{2*blockSize + 12345, 3},
	}
	for i, tc := range cases {
		t.Run(fmt.Sprint(tc.size), func(t *testing.T) {
			key := fmt.Sprintf("sizes/%d.bin", tc.size)
			body := pattern(tc.size, uint64(i))
			// A reader without WriterTo/Len, so nothing can learn the size in advance.
			info, err := s.Put(t.Context(), key, io.MultiReader(bytes.NewReader(body)), gtc.PutOptions{
				ContentType: gtc.ContentTypeOctet,
				Metadata:    map[string]string{"snapshot": "s1", "sha256": "forged"},
			})
			require.NoError(t, err)
			assert.Equal(t, int64(tc.size), info.Size)
			assert.Equal(t, hexSHA(body), info.SHA256)

			st, err := s.Stat(t.Context(), key)
			require.NoError(t, err)
			assert.Equal(t, hexSHA(body), st.SHA256, "the hash kept as metadata, not the caller's")
			assert.Equal(t, int64(tc.size), st.Size)
			assert.Equal(t, gtc.ContentTypeOctet, st.ContentType)
			assert.Equal(t, info.ETag, st.ETag)

			obj, err := s.Open(t.Context(), key)
			require.NoError(t, err)
			got, err := io.ReadAll(obj.Body)
			require.NoError(t, err)
			require.NoError(t, obj.Body.Close())
			assert.Equal(t, hexSHA(body), hexSHA(got))
			assert.Equal(t, hexSHA(body), obj.SHA256)

			props, err := s.c.NewBlobClient(key).GetProperties(t.Context(), nil)
			require.NoError(t, err)
			md := map[string]string{}
			for k, v := range props.Metadata {
				md[strings.ToLower(k)] = *v
			}
			assert.Equal(t, map[string]string{"snapshot": "s1", "sha256": hexSHA(body)}, md)

			if tc.blocks > 0 {
				bl, err := s.c.NewBlockBlobClient(key).GetBlockList(t.Context(), blockblob.BlockListTypeCommitted, nil)
				require.NoError(t, err)
				require.Len(t, bl.CommittedBlocks, tc.blocks)
				for j, b := range bl.CommittedBlocks {
					if j < tc.blocks-1 {
						assert.Equal(t, int64(blockSize), *b.Size, "block %d", j)
					}
				}
			}
		})
	}
}

// TestStagedIfNotExists: the create-only condition holds on the commit of a staged upload,
// and the existing object is untouched.
func TestStagedIfNotExists(t *testing.T) {
	s := newStore(t)
	key := "big/object.bin"
	first := pattern(blockSize+100, 1)
	_, err := s.Put(t.Context(), key, bytes.NewReader(first), gtc.PutOptions{ContentType: gtc.ContentTypeOctet, IfNotExists: true})
	require.NoError(t, err)
	_, err = s.Put(t.Context(), key, bytes.NewReader(pattern(blockSize+100, 2)), gtc.PutOptions{ContentType: gtc.ContentTypeOctet, IfNotExists: true})
	require.ErrorIs(t, err, gtc.ErrArtifactExists)
	st, err := s.Stat(t.Context(), key)
	require.NoError(t, err)
	assert.Equal(t, hexSHA(first), st.SHA256)
}

// slowReader yields n bytes of pattern and cancels the context once after bytes have been
// read, so the cancellation lands while blocks are in flight.
type slowReader struct {
	data   []byte
	off    int
	after  int
	cancel context.CancelFunc
}

func (r *slowReader) Read(p []byte) (int, error) {
	if r.off >= len(r.data) {
		return 0, io.EOF
	}
	if r.off >= r.after && r.cancel != nil {
		r.cancel()
		r.cancel = nil
		time.Sleep(10 * time.Millisecond)
	}
	n := copy(p, r.data[r.off:min(len(r.data), r.off+64<<10)])
	r.off += n
	return n, nil
}

// TestStagedCancel: cancelling a staged upload reports context.Canceled and leaves the
// previous object in place; a fresh key stays absent.
func TestStagedCancel(t *testing.T) {
	s := newStore(t)
	old := []byte("previous version\n")
	_, err := s.Put(t.Context(), "c/existing.bin", bytes.NewReader(old), gtc.PutOptions{ContentType: gtc.ContentTypeOctet})
	require.NoError(t, err)
	for _, key := range []string{"c/existing.bin", "c/fresh.bin"} {
		ctx, cancel := context.WithCancel(t.Context())
		_, err := s.Put(ctx, key, &slowReader{data: pattern(3*blockSize, 3), after: blockSize + 1, cancel: cancel}, gtc.PutOptions{ContentType: gtc.ContentTypeOctet})
		cancel()
		require.ErrorIs(t, err, context.Canceled, key)
	}
	obj, err := s.Open(t.Context(), "c/existing.bin")
	require.NoError(t, err)
	got, _ := io.ReadAll(obj.Body)
	obj.Body.Close()
	assert.Equal(t, old, got)
	_, err = s.Stat(t.Context(), "c/fresh.bin")
	assert.ErrorIs(t, err, gtc.ErrArtifactNotFound)
	assert.Equal(t, []string{"c/existing.bin"}, rawNames(t, s))
}

// failingReader fails after some bytes, as a broken export stage would.
type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, errors.New("stage exploded")
	}
	n := min(len(p), r.n)
	clear(p[:n])
	r.n -= n
	return n, nil
}

func TestPutBodyError(t *testing.T) {
	s := newStore(t)
	for _, n := range []int{10, 2*blockSize + 5} {
		_, err := s.Put(t.Context(), "e/broken.bin", &failingReader{n: n}, gtc.PutOptions{ContentType: gtc.ContentTypeOctet})
		require.ErrorContains(t, err, "stage exploded")
		assert.NotErrorIs(t, err, gtc.ErrStorageUnavailable, "a body error is the caller's, not storage's")
	}
	assert.Empty(t, rawNames(t, s))
}

func TestCheck(t *testing.T) {
	cs := testenv.BlobConnectionString(t)
	name := containerName()
	s, err := New(Options{Container: name, ConnectionString: cs, Logger: quiet})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = rawClient(t, cs).DeleteContainer(context.Background(), name, nil) })

	err = s.Check(t.Context(), false)
	require.EqualError(t, err, "export container '"+name+"' does not exist (create it, or set GTC_EXPORT_BLOB_CREATE_CONTAINER=true)")
	assert.NotErrorIs(t, err, gtc.ErrStorageUnavailable, "a missing container stops startup")

	// Operations on the missing container are "unavailable", naming the container, never
	// "not found".
	_, err = s.Stat(t.Context(), "a.json")
	require.ErrorIs(t, err, gtc.ErrStorageUnavailable)
	assert.NotErrorIs(t, err, gtc.ErrArtifactNotFound)
	assert.Contains(t, err.Error(), name)
	_, err = s.Put(t.Context(), "a.json", strings.NewReader("{}"), gtc.PutOptions{ContentType: gtc.ContentTypeJSON})
	require.ErrorIs(t, err, gtc.ErrStorageUnavailable)
	assert.Contains(t, err.Error(), "container '"+name+"' does not exist")

	require.NoError(t, s.Check(t.Context(), true))
	props, err := rawClient(t, cs).ServiceClient().NewContainerClient(name).GetProperties(t.Context(), nil)
	require.NoError(t, err)
	assert.Nil(t, props.BlobPublicAccess, "created private")
	require.NoError(t, s.Check(t.Context(), false), "exists now")
	require.NoError(t, s.Check(t.Context(), true), "create is idempotent")
}

func TestCheckAccessDenied(t *testing.T) {
	cs := testenv.BlobConnectionString(t)
	endpoint := connectionStringField(cs, "BlobEndpoint")
	if endpoint == "" {
		t.Skip("needs a connection string with BlobEndpoint")
	}
	s, err := New(Options{Container: "never-created", AccountURL: endpoint, AccountKey: wrongKey, Logger: quiet})
	require.NoError(t, err)
	err = s.Check(t.Context(), true)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "HTTP 403")
	assert.NotErrorIs(t, err, gtc.ErrStorageUnavailable, "a refused identity stops startup")

	_, err = s.Stat(t.Context(), "a.json")
	require.ErrorIs(t, err, gtc.ErrStorageUnavailable)
	assert.Contains(t, err.Error(), "HTTP 403")
	var re *azcore.ResponseError
	assert.False(t, errors.As(err, &re), "no Azure type above storage")
}

// TestSharedKeyFromPathStyleURL: the shared-key mode derives the account from the first path
// segment of an emulator URL and reaches the same objects as the connection string.
func TestSharedKeyFromPathStyleURL(t *testing.T) {
	viaCS := newStore(t)
	endpoint := connectionStringField(testenv.BlobConnectionString(t), "BlobEndpoint")
	key := connectionStringField(testenv.BlobConnectionString(t), "AccountKey")
	if endpoint == "" || key == "" {
		t.Skip("needs a connection string with BlobEndpoint and AccountKey")
	}
	viaKey, err := New(Options{Container: viaCS.Container(), AccountURL: endpoint, AccountKey: key, Logger: quiet})
	require.NoError(t, err)
	assert.Equal(t, viaCS.Account(), viaKey.Account())

	_, err = viaCS.Put(t.Context(), "k/one.json", strings.NewReader("{}\n"), gtc.PutOptions{ContentType: gtc.ContentTypeJSON})
	require.NoError(t, err)
	st, err := viaKey.Stat(t.Context(), "k/one.json")
	require.NoError(t, err)
	assert.Equal(t, hexSHA([]byte("{}\n")), st.SHA256)
}

// TestConnectionReuse: 64 concurrent Puts (an export's widest fan-out) reuse the idle
// connections of the previous round instead of dialling anew; azcore's default transport
// keeps only 10 per host.
func TestConnectionReuse(t *testing.T) {
	s := newStore(t)
	var fresh, total atomic.Int64
	ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		total.Add(1)
		if !i.Reused {
			fresh.Add(1)
		}
	}})
	round := func(r int) {
		var wg sync.WaitGroup
		for i := range 64 {
			wg.Go(func() {
				_, err := s.Put(ctx, fmt.Sprintf("r%d/%02d.json", r, i), strings.NewReader("{}"), gtc.PutOptions{ContentType: gtc.ContentTypeJSON})
				assert.NoError(t, err)
			})
		}
		wg.Wait()
	}
	round(0)
	fresh.Store(0)
	total.Store(0)
	round(1)
	assert.Equal(t, int64(64), total.Load())
	assert.LessOrEqual(t, fresh.Load(), int64(8), "new connections in the second round")
}

// deadEndpoint is a loopback port nothing listens on.
func deadEndpoint(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return "http://" + addr + "/devstoreaccount1"
}

// TestUnreachable needs no server: every operation against a dead endpoint fails quickly
// with ErrStorageUnavailable, which the API answers with 503.
func TestUnreachable(t *testing.T) {
	endpoint := deadEndpoint(t)
	s, err := New(Options{
		Container:        "exports",
		ConnectionString: "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + azuriteKey + ";BlobEndpoint=" + endpoint + ";",
		Retry:            &policy.RetryOptions{MaxRetries: 1, RetryDelay: time.Millisecond, MaxRetryDelay: time.Millisecond},
		Logger:           quiet,
	})
	require.NoError(t, err)
	start := time.Now()
	ctx := t.Context()

	err = s.Check(ctx, true)
	assert.ErrorIs(t, err, gtc.ErrStorageUnavailable, "Check: the server starts anyway")
	_, err = s.Put(ctx, "a/b.json", strings.NewReader("{}"), gtc.PutOptions{ContentType: gtc.ContentTypeJSON})
	assert.ErrorIs(t, err, gtc.ErrStorageUnavailable, "Put")
	_, err = s.Put(ctx, "a/big.bin", bytes.NewReader(make([]byte, blockSize+1)), gtc.PutOptions{ContentType: gtc.ContentTypeOctet})
	assert.ErrorIs(t, err, gtc.ErrStorageUnavailable, "staged Put")
	_, err = s.Open(ctx, "a/b.json")
	assert.ErrorIs(t, err, gtc.ErrStorageUnavailable, "Open")
	_, err = s.Stat(ctx, "a/b.json")
	assert.ErrorIs(t, err, gtc.ErrStorageUnavailable, "Stat")
	for _, err := range s.List(ctx, "a/", gtc.ListOptions{}) {
		assert.ErrorIs(t, err, gtc.ErrStorageUnavailable, "List")
	}
	for _, err := range s.List(ctx, "a/", gtc.ListOptions{Delimiter: true}) {
		assert.ErrorIs(t, err, gtc.ErrStorageUnavailable, "List with delimiter")
	}
	assert.ErrorIs(t, s.Delete(ctx, "a/b.json"), gtc.ErrStorageUnavailable, "Delete")
	_, err = s.DeletePrefix(ctx, "a/")
	assert.ErrorIs(t, err, gtc.ErrStorageUnavailable, "DeletePrefix")
	assert.Less(t, time.Since(start), 5*time.Second)
}

// TestInvalidKeysNeedNoServer: key checks come before any I/O, so they hold against a dead
// endpoint too (the conformance suite proves nothing was written on a live one).
func TestInvalidKeysNeedNoServer(t *testing.T) {
	s, err := New(Options{Container: "exports", AccountURL: deadEndpoint(t), AccountKey: azuriteKey, Retry: &policy.RetryOptions{MaxRetries: -1}})
	require.NoError(t, err)
	ctx := t.Context()
	for _, key := range []string{"../x", "a/../b", "/abs", `a\b`, "a//b", "a\x00b", "é", strings.Repeat("a", 1025), "dir/"} {
		_, err := s.Put(ctx, key, strings.NewReader("x"), gtc.PutOptions{ContentType: gtc.ContentTypeOctet})
		assert.ErrorIs(t, err, gtc.ErrInvalidKey, "Put %q", key)
		_, err = s.Open(ctx, key)
		assert.ErrorIs(t, err, gtc.ErrInvalidKey, "Open %q", key)
		_, err = s.Stat(ctx, key)
		assert.ErrorIs(t, err, gtc.ErrInvalidKey, "Stat %q", key)
		assert.ErrorIs(t, s.Delete(ctx, key), gtc.ErrInvalidKey, "Delete %q", key)
	}
	for _, prefix := range []string{"a", "../", "/a/", "a//"} {
		for _, err := range s.List(ctx, prefix, gtc.ListOptions{}) {
			assert.ErrorIs(t, err, gtc.ErrInvalidKey, "List %q", prefix)
		}
		_, err := s.DeletePrefix(ctx, prefix)
		assert.ErrorIs(t, err, gtc.ErrInvalidKey, "DeletePrefix %q", prefix)
	}
	_, err = s.Put(ctx, "ok.json", strings.NewReader("{}"), gtc.PutOptions{})
	assert.ErrorContains(t, err, "content type")
}

type fakeCredential struct{}

func (fakeCredential) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: "t", ExpiresOn: time.Now().Add(time.Hour)}, nil
}

func TestNewOptions(t *testing.T) {
	const cs = "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + azuriteKey + ";BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"
	ok := []struct {
		name    string
		opts    Options
		account string
	}{
		{"connection string", Options{ConnectionString: cs}, "devstoreaccount1"},
		{"connection string without BlobEndpoint", Options{ConnectionString: "DefaultEndpointsProtocol=https;AccountName=prodacct;AccountKey=" + azuriteKey + ";EndpointSuffix=core.windows.net"}, "prodacct"},
		{"key, path-style URL", Options{AccountURL: "http://127.0.0.1:10000/devstoreaccount1", AccountKey: azuriteKey}, "devstoreaccount1"},
		{"key, localhost URL", Options{AccountURL: "http://localhost:10000/devstoreaccount1/", AccountKey: azuriteKey}, "devstoreaccount1"},
		{"key, emulator host name", Options{AccountURL: "http://azurite:10000/devstoreaccount1", AccountKey: azuriteKey}, "devstoreaccount1"},
		{"key, Azure URL", Options{AccountURL: "https://myacct.blob.core.windows.net/", AccountKey: azuriteKey}, "myacct"},
		{"key, sovereign cloud URL", Options{AccountURL: "https://myacct.blob.core.chinacloudapi.cn", AccountKey: azuriteKey}, "myacct"},
		{"key, explicit name", Options{AccountURL: "https://custom.example.com", AccountKey: azuriteKey, AccountName: "named"}, "named"},
		{"token", Options{AccountURL: "https://myacct.blob.core.windows.net", Credential: fakeCredential{}}, "myacct"},
		{"token, custom domain", Options{AccountURL: "https://exports.example.com", Credential: fakeCredential{}}, "exports.example.com"},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Container = "gtc-exports"
			s, err := New(tc.opts)
			require.NoError(t, err)
			assert.Equal(t, tc.account, s.Account())
			assert.Equal(t, "gtc-exports", s.Container())
			assert.Equal(t, "blob", s.Backend())
		})
	}
	bad := []struct {
		name string
		opts Options
		want string
	}{
		{"nothing", Options{}, "set a connection string"},
		{"mixture", Options{ConnectionString: cs, AccountURL: "https://a.blob.core.windows.net"}, "excludes"},
		{"key and credential", Options{AccountURL: "https://a.blob.core.windows.net", AccountKey: azuriteKey, Credential: fakeCredential{}}, "excludes"},
		{"key alone", Options{AccountKey: azuriteKey}, "needs an account URL"},
		{"URL alone", Options{AccountURL: "https://a.blob.core.windows.net"}, "needs a token credential"},
		{"token over http", Options{AccountURL: "http://127.0.0.1:10000/devstoreaccount1", Credential: fakeCredential{}}, "must be https"},
		{"key not base64", Options{AccountURL: "https://a.blob.core.windows.net", AccountKey: "not base64!"}, "not valid base64"},
		{"no account in URL", Options{AccountURL: "https://custom.example.com", AccountKey: azuriteKey}, "GTC_EXPORT_BLOB_ACCOUNT_NAME"},
		{"broken connection string", Options{ConnectionString: "AccountKey=" + azuriteKey}, "cannot be parsed"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			if tc.opts.Container == "" {
				tc.opts.Container = "gtc-exports"
			}
			_, err := New(tc.opts)
			require.ErrorContains(t, err, tc.want)
			assert.NotContains(t, err.Error(), azuriteKey, "the key never appears in an error")
		})
	}
	for _, name := range []string{"", "ab", "Exports", "a--b", "-ab", "ab-", "a_b", strings.Repeat("a", 64)} {
		_, err := New(Options{Container: name, ConnectionString: cs})
		assert.ErrorContains(t, err, "container name", "%q", name)
	}
	for _, name := range []string{"abc", "a-b", "t-0123456789abcdef", strings.Repeat("a", 63)} {
		_, err := New(Options{Container: name, ConnectionString: cs})
		assert.NoError(t, err, "%q", name)
	}
}

// BenchmarkPut measures one small create against the configured server (Azurite under
// "make test").
func BenchmarkPut(b *testing.B) {
	for _, size := range []int{1 << 10, 9 << 20} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			s := newStore(b)
			body := pattern(size, 7)
			b.SetBytes(int64(size))
			i := 0
			for b.Loop() {
				i++
				if _, err := s.Put(b.Context(), fmt.Sprintf("b/%d.bin", i), bytes.NewReader(body), gtc.PutOptions{ContentType: gtc.ContentTypeOctet}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOpen measures Open plus reading the whole object.
func BenchmarkOpen(b *testing.B) {
	for _, size := range []int{1 << 10, 9 << 20} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			s := newStore(b)
			if _, err := s.Put(b.Context(), "b/obj.bin", bytes.NewReader(pattern(size, 7)), gtc.PutOptions{ContentType: gtc.ContentTypeOctet}); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(size))
			for b.Loop() {
				obj, err := s.Open(b.Context(), "b/obj.bin")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, obj.Body); err != nil {
					b.Fatal(err)
				}
				obj.Body.Close()
			}
		})
	}
}
