package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	gtc "github.com/gtc-dev/gtc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ArtifactHarness builds stores for the artifact conformance suite, which storage/localfs
// and storage/blob both run.
type ArtifactHarness struct {
	// New returns an empty, isolated store (a fresh directory, or a fresh Blob container
	// deleted at cleanup). The harness releases it at cleanup; the suite never does.
	New func(t *testing.T) gtc.ArtifactStore
	// Raw lists every name the backend physically holds for that store, bypassing the
	// store (for local disk: every file path relative to the root, temporary files
	// included; for Blob: every blob name). The suite uses it to prove that invalid keys
	// do no I/O and cancelled puts leave nothing behind.
	Raw func(t *testing.T, s gtc.ArtifactStore) []string
	// ManyObjects is how many small objects the listing-paging behaviour writes; 0 means
	// 1050, more than one Blob listing page.
	ManyObjects int
}

// RunArtifacts runs every behaviour of the suite as subtests. The streaming behaviour
// measures the process heap, so it runs first and alone; the others run in parallel, each
// on its own store. Callers should not run other tests in parallel with RunArtifacts, or
// their allocations count against the streaming bound.
func RunArtifacts(t *testing.T, h ArtifactHarness) {
	require.NotNil(t, h.New, "ArtifactHarness.New is required")
	require.NotNil(t, h.Raw, "ArtifactHarness.Raw is required")
	if h.ManyObjects <= 0 {
		h.ManyObjects = 1050
	}
	a := &artSuite{h: h}
	t.Run("09_Streaming", a.streaming)
	tests := []namedTest{
		{"01_PutThenOpen", a.putThenOpen},
		{"02_Overwrite", a.overwrite},
		{"03_IfNotExists", a.ifNotExists},
		{"04_IfNotExistsRace", a.ifNotExistsRace},
		{"05_Missing", a.missing},
		{"06_ListFlat", a.listFlat},
		{"06_ListPaging", a.listPaging},
		{"07_ListDelimiter", a.listDelimiter},
		{"08_DeletePrefix", a.deletePrefix},
		{"10_Cancellation", a.cancellation},
		{"11_InvalidKeys", a.invalidKeys},
		{"12_ContentTypes", a.contentTypes},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t)
		})
	}
}

type artSuite struct {
	h ArtifactHarness
}

func (a *artSuite) store(t *testing.T) gtc.ArtifactStore {
	t.Helper()
	s := a.h.New(t)
	require.NotNil(t, s, "ArtifactHarness.New returned nil")
	return s
}

// rawUnder is Raw restricted to names starting with prefix, sorted.
func (a *artSuite) rawUnder(t *testing.T, s gtc.ArtifactStore, prefix string) []string {
	t.Helper()
	var out []string
	for _, name := range a.h.Raw(t, s) {
		if strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func artPut(t *testing.T, s gtc.ArtifactStore, key string, body []byte) gtc.ArtifactInfo {
	t.Helper()
	info, err := s.Put(t.Context(), key, bytes.NewReader(body), gtc.PutOptions{ContentType: gtc.ContentTypeFor(key)})
	require.NoError(t, err, "Put %s", key)
	return info
}

func artRead(t *testing.T, s gtc.ArtifactStore, key string) []byte {
	t.Helper()
	obj, err := s.Open(t.Context(), key)
	require.NoError(t, err, "Open %s", key)
	defer obj.Body.Close()
	b, err := io.ReadAll(obj.Body)
	require.NoError(t, err, "read %s", key)
	return b
}

func artList(t *testing.T, s gtc.ArtifactStore, prefix string, delimiter bool) []gtc.ArtifactEntry {
	t.Helper()
	var out []gtc.ArtifactEntry
	for e, err := range s.List(t.Context(), prefix, gtc.ListOptions{Delimiter: delimiter}) {
		require.NoError(t, err, "List %s", prefix)
		out = append(out, e)
	}
	return out
}

func artKeys(entries []gtc.ArtifactEntry) []string {
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.Key)
	}
	return out
}

func artSHA(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// putAll writes each key with the key itself as body, so sizes are distinct and known.
func putAll(t *testing.T, s gtc.ArtifactStore, keys []string) {
	t.Helper()
	for _, k := range keys {
		artPut(t, s, k, []byte(k))
	}
}

// 1. Put then Open: same bytes, size, content type; Put reports the SHA-256 of the bytes.
func (a *artSuite) putThenOpen(t *testing.T) {
	s := a.store(t)
	assert.Contains(t, []string{"local", "blob"}, s.Backend())
	big := make([]byte, 200<<10+17) // not a multiple of any buffer size
	for i := range big {
		big[i] = byte(i*7 + i>>9)
	}
	cases := []struct {
		name, key string
		body      []byte
		reader    func(io.Reader) io.Reader
	}{
		{"json", "obj/hello.json", []byte("{\n  \"hello\": \"world\"\n}\n"), nil},
		{"empty", "obj/snap/.reserved", []byte{}, nil},
		{"top level", "top-level.csv", []byte("a,b\n1,2\n"), nil},
		{"large", "obj/bin/data.bin", big, nil},
		{"data with EOF", "obj/eof.jsonl", []byte("{}\n{}\n"), iotest.DataErrReader},
		{"one byte reads", "obj/one.txt", []byte("one byte at a time"), iotest.OneByteReader},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader = bytes.NewReader(tc.body)
			if tc.reader != nil {
				body = tc.reader(body)
			}
			opts := gtc.PutOptions{ContentType: gtc.ContentTypeFor(tc.key), Metadata: map[string]string{"snapshot": "t1"}}
			info, err := s.Put(t.Context(), tc.key, body, opts)
			require.NoError(t, err)
			assert.Equal(t, tc.key, info.Key)
			assert.Equal(t, int64(len(tc.body)), info.Size)
			assert.Equal(t, artSHA(tc.body), info.SHA256)
			assert.Equal(t, gtc.ContentTypeFor(tc.key), info.ContentType)
			assert.NotEmpty(t, info.ETag)
			assert.WithinDuration(t, time.Now(), info.LastModified, time.Hour)

			obj, err := s.Open(t.Context(), tc.key)
			require.NoError(t, err)
			got, err := io.ReadAll(obj.Body)
			require.NoError(t, err)
			require.NoError(t, obj.Body.Close())
			assert.True(t, bytes.Equal(tc.body, got), "read back %d bytes that differ from the %d written", len(got), len(tc.body))
			for what, oi := range map[string]gtc.ArtifactInfo{"Open": obj.ArtifactInfo, "Stat": a.stat(t, s, tc.key)} {
				assert.Equal(t, tc.key, oi.Key, what)
				assert.Equal(t, int64(len(tc.body)), oi.Size, what)
				assert.Equal(t, gtc.ContentTypeFor(tc.key), oi.ContentType, what)
				assert.Equal(t, info.ETag, oi.ETag, "%s: the ETag Put reported", what)
				assert.WithinDuration(t, info.LastModified, oi.LastModified, time.Second, what)
				if oi.SHA256 != "" {
					assert.Equal(t, info.SHA256, oi.SHA256, "%s: a kept hash is the one Put reported", what)
				}
			}
		})
	}
}

func (a *artSuite) stat(t *testing.T, s gtc.ArtifactStore, key string) gtc.ArtifactInfo {
	t.Helper()
	info, err := s.Stat(t.Context(), key)
	require.NoError(t, err, "Stat %s", key)
	return info
}

// 2. Overwrite: a second Put replaces the content and changes the ETag.
func (a *artSuite) overwrite(t *testing.T) {
	s := a.store(t)
	const key = "ow/doc.json"
	first := artPut(t, s, key, []byte(`{"v":1}`))
	// Same size, written straight after: a time-and-size ETag alone would not change.
	second := artPut(t, s, key, []byte(`{"v":2}`))
	assert.Equal(t, []byte(`{"v":2}`), artRead(t, s, key))
	assert.NotEqual(t, first.ETag, second.ETag, "ETag after a same-size overwrite")
	assert.Equal(t, second.ETag, a.stat(t, s, key).ETag)

	third := artPut(t, s, key, []byte(`{}`))
	assert.Equal(t, []byte(`{}`), artRead(t, s, key), "a shorter overwrite leaves no tail")
	st := a.stat(t, s, key)
	assert.Equal(t, int64(2), st.Size)
	assert.Equal(t, third.ETag, st.ETag)
	assert.NotEqual(t, second.ETag, third.ETag)
	assert.Equal(t, []string{key}, a.rawUnder(t, s, "ow/"), "nothing but the object is left behind")
}

// 3. IfNotExists creates a new key; on an existing key it fails and changes nothing.
func (a *artSuite) ifNotExists(t *testing.T) {
	s := a.store(t)
	ctx := t.Context()
	const key = "exports/snapshots/20250314T092653Z/.reserved"
	create := gtc.PutOptions{ContentType: gtc.ContentTypeOctet, IfNotExists: true}
	info, err := s.Put(ctx, key, bytes.NewReader(nil), create)
	require.NoError(t, err)
	assert.Equal(t, int64(0), info.Size)

	_, err = s.Put(ctx, key, strings.NewReader("intruder"), create)
	require.ErrorIs(t, err, gtc.ErrArtifactExists)
	assert.Empty(t, artRead(t, s, key), "content unchanged")
	assert.Equal(t, info.ETag, a.stat(t, s, key).ETag, "ETag unchanged")

	// A plain Put still overwrites; IfNotExists only guards creation.
	artPut(t, s, "ine/x.json", []byte("1"))
	_, err = s.Put(ctx, "ine/x.json", strings.NewReader("2"), gtc.PutOptions{ContentType: gtc.ContentTypeJSON, IfNotExists: true})
	require.ErrorIs(t, err, gtc.ErrArtifactExists)
	assert.Equal(t, []byte("1"), artRead(t, s, "ine/x.json"))

	// After a delete the name is free again.
	require.NoError(t, s.Delete(ctx, key))
	_, err = s.Put(ctx, key, strings.NewReader("again"), create)
	require.NoError(t, err)
	assert.Equal(t, []byte("again"), artRead(t, s, key))
	assert.Equal(t, []string{key}, a.rawUnder(t, s, "exports/"), "no temporary leftovers")
}

// 4. Race: of 16 concurrent create-only Puts of one key exactly one wins. A check-then-write
// store loses only when two writers meet in a short window, so the race runs several rounds.
func (a *artSuite) ifNotExistsRace(t *testing.T) {
	s := a.store(t)
	const rounds, writers = 8, 16
	var keys []string
	for r := range rounds {
		key := fmt.Sprintf("race/%d/.reserved", r)
		keys = append(keys, key)
		errs := make([]error, writers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				<-start
				body := strings.NewReader(fmt.Sprintf("writer-%02d", i))
				_, errs[i] = s.Put(t.Context(), key, body, gtc.PutOptions{ContentType: gtc.ContentTypeOctet, IfNotExists: true})
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			if err == nil {
				assert.Equal(t, -1, winner, "%s: writers %d and %d both succeeded", key, winner, i)
				winner = i
				continue
			}
			assert.ErrorIs(t, err, gtc.ErrArtifactExists, "%s: writer %d", key, i)
		}
		require.NotEqual(t, -1, winner, "%s: no writer succeeded", key)
		assert.Equal(t, fmt.Sprintf("writer-%02d", winner), string(artRead(t, s, key)), "%s: the winner's content", key)
	}
	assert.Equal(t, keys, a.rawUnder(t, s, "race/"), "losers leave nothing behind")
}

// 5. Open, Stat and Delete of a missing key fail with ErrArtifactNotFound.
func (a *artSuite) missing(t *testing.T) {
	s := a.store(t)
	ctx := t.Context()
	artPut(t, s, "m/file.json", []byte("{}"))
	for _, key := range []string{
		"missing.json",
		"no/such/dir/x.json",
		"m/file.json/child", // "below" an object
		"m",                 // a "directory" holding an object
		"m/fil",             // a prefix of a name
	} {
		_, err := s.Open(ctx, key)
		assert.ErrorIs(t, err, gtc.ErrArtifactNotFound, "Open %s", key)
		_, err = s.Stat(ctx, key)
		assert.ErrorIs(t, err, gtc.ErrArtifactNotFound, "Stat %s", key)
		assert.ErrorIs(t, s.Delete(ctx, key), gtc.ErrArtifactNotFound, "Delete %s", key)
	}
	assert.Equal(t, []byte("{}"), artRead(t, s, "m/file.json"), "failed deletes left the object alone")

	require.NoError(t, s.Delete(ctx, "m/file.json"))
	_, err := s.Stat(ctx, "m/file.json")
	assert.ErrorIs(t, err, gtc.ErrArtifactNotFound, "Stat after Delete")
	assert.ErrorIs(t, s.Delete(ctx, "m/file.json"), gtc.ErrArtifactNotFound, "second Delete")
	assert.Empty(t, artList(t, s, "m/", false))
}

// artListFixture mixes names with bytes below '/' ("b-c", "b.d") and above it, sibling
// prefixes ("a/b/" vs "a/bc/" vs "a/b-c/") and neighbours of "a/" itself ("a-z", "a0",
// "ab"), so that per-directory walking order or a missing "/" in a prefix match shows.
var artListFixture = []string{
	"a/%41", "a/+p", "a/,c", "a/0", "a/=e", "a/@x", "a/B", "a/_u",
	"a/b-c/5.json", "a/b-e", "a/b.d",
	"a/b/1.json", "a/b/2.json", "a/b/sub/3.json",
	"a/bc/4.json", "a/~t",
	"a-z/x", "a0", "ab/y", "b/x",
}

func artUnder(prefix string, keys []string) []string {
	var out []string
	for _, k := range keys {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// 6. Flat List: every key under the prefix, ascending, nothing outside it.
func (a *artSuite) listFlat(t *testing.T) {
	s := a.store(t)
	putAll(t, s, artListFixture)

	for _, prefix := range []string{"a/", "a/b/", "a/bc/", "a/b/sub/", "b/"} {
		got := artList(t, s, prefix, false)
		assert.Equal(t, artUnder(prefix, artListFixture), artKeys(got), "List %s", prefix)
		for _, e := range got {
			assert.False(t, e.IsPrefix, "flat listing entry %s", e.Key)
			assert.Equal(t, int64(len(e.Key)), e.Size, "size of %s", e.Key)
		}
	}
	// Spelled out once, so the expectation does not rest on sort.Strings alone.
	assert.Equal(t, []string{
		"a/%41", "a/+p", "a/,c", "a/0", "a/=e", "a/@x", "a/B", "a/_u",
		"a/b-c/5.json", "a/b-e", "a/b.d", "a/b/1.json", "a/b/2.json", "a/b/sub/3.json",
		"a/bc/4.json", "a/~t",
	}, artKeys(artList(t, s, "a/", false)))
	assert.Empty(t, artList(t, s, "nope/", false), "missing prefix")
	assert.Empty(t, artList(t, s, "a/b.d/", false), "prefix through an object")

	var seen []string
	for e, err := range s.List(t.Context(), "a/", gtc.ListOptions{}) {
		require.NoError(t, err)
		seen = append(seen, e.Key)
		if len(seen) == 2 {
			break // the iterator must stop cleanly
		}
	}
	assert.Equal(t, []string{"a/%41", "a/+p"}, seen)
}

// 6. Listing pages: more objects than one Blob listing page, in order, none lost.
func (a *artSuite) listPaging(t *testing.T) {
	s := a.store(t)
	n := a.h.ManyObjects
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("many/obj-%05d.json", i)
	}
	work := make(chan string)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for k := range work {
				_, err := s.Put(t.Context(), k, strings.NewReader("{}"), gtc.PutOptions{ContentType: gtc.ContentTypeJSON})
				assert.NoError(t, err, "Put %s", k)
			}
		})
	}
	for _, k := range keys {
		work <- k
	}
	close(work)
	wg.Wait()
	artPut(t, s, "many0/outside.json", []byte("{}"))

	assert.Equal(t, keys, artKeys(artList(t, s, "many/", false)), "flat")
	assert.Equal(t, keys, artKeys(artList(t, s, "many/", true)), "with delimiter")
}

// 7. List with Delimiter: one entry per child "directory", plus the objects directly under
// the prefix, in ascending key order.
func (a *artSuite) listDelimiter(t *testing.T) {
	s := a.store(t)
	putAll(t, s, artListFixture)
	dir := func(k string) gtc.ArtifactEntry { return gtc.ArtifactEntry{Key: k, IsPrefix: true} }
	obj := func(k string) gtc.ArtifactEntry { return gtc.ArtifactEntry{Key: k, Size: int64(len(k))} }

	assert.Equal(t, []gtc.ArtifactEntry{
		obj("a/%41"), obj("a/+p"), obj("a/,c"), obj("a/0"), obj("a/=e"), obj("a/@x"), obj("a/B"), obj("a/_u"),
		dir("a/b-c/"), obj("a/b-e"), obj("a/b.d"), dir("a/b/"), dir("a/bc/"), obj("a/~t"),
	}, artList(t, s, "a/", true))
	assert.Equal(t, []gtc.ArtifactEntry{obj("a/b/1.json"), obj("a/b/2.json"), dir("a/b/sub/")}, artList(t, s, "a/b/", true))
	assert.Equal(t, []gtc.ArtifactEntry{obj("a/b/sub/3.json")}, artList(t, s, "a/b/sub/", true))
	assert.Empty(t, artList(t, s, "nope/", true), "missing prefix")

	// A "directory" exists only while it holds an object.
	require.NoError(t, s.Delete(t.Context(), "a/bc/4.json"))
	assert.NotContains(t, artKeys(artList(t, s, "a/", true)), "a/bc/", "after its only object was deleted")

	n := 0
	for _, err := range s.List(t.Context(), "a/", gtc.ListOptions{Delimiter: true}) {
		require.NoError(t, err)
		if n++; n == 3 {
			break
		}
	}
	assert.Equal(t, 3, n)
}

// 8. DeletePrefix removes exactly the objects under the prefix and returns their number.
func (a *artSuite) deletePrefix(t *testing.T) {
	s := a.store(t)
	ctx := t.Context()
	putAll(t, s, artListFixture)

	n, err := s.DeletePrefix(ctx, "a/b/")
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	for _, k := range artUnder("a/b/", artListFixture) {
		_, err := s.Stat(ctx, k)
		assert.ErrorIs(t, err, gtc.ErrArtifactNotFound, "Stat %s", k)
	}
	var rest []string
	for _, k := range artListFixture {
		if !strings.HasPrefix(k, "a/b/") {
			rest = append(rest, k)
		}
	}
	assert.Equal(t, artUnder("a/", rest), artKeys(artList(t, s, "a/", false)), "siblings a/bc/, a/b-c/, a/b.d untouched")
	assert.NotContains(t, artKeys(artList(t, s, "a/", true)), "a/b/")

	n, err = s.DeletePrefix(ctx, "a/b/")
	require.NoError(t, err)
	assert.Equal(t, 0, n, "again")
	n, err = s.DeletePrefix(ctx, "nope/")
	require.NoError(t, err)
	assert.Equal(t, 0, n, "missing prefix")
	n, err = s.DeletePrefix(ctx, "a/b.d/")
	require.NoError(t, err)
	assert.Equal(t, 0, n, "prefix through an object")
	assert.Equal(t, []byte("a/b.d"), artRead(t, s, "a/b.d"), "the object named like the prefix survives")

	n, err = s.DeletePrefix(ctx, "a/")
	require.NoError(t, err)
	assert.Equal(t, len(artUnder("a/", rest)), n)
	assert.Empty(t, artList(t, s, "a/", false))
	assert.Empty(t, a.rawUnder(t, s, "a/"))
	assert.Equal(t, []string{"a-z/x", "a0", "ab/y", "b/x"}, a.rawUnder(t, s, ""), "neighbours of a/ untouched")

	artPut(t, s, "a/b/1.json", []byte("back"))
	assert.Equal(t, []byte("back"), artRead(t, s, "a/b/1.json"), "the prefix is usable again")
}

// artLazy produces size deterministic bytes on demand without holding them.
type artLazy struct {
	off, size int64
}

func (r *artLazy) Read(p []byte) (int, error) {
	if r.off >= r.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), r.size-r.off))
	for i := range p[:n] {
		x := uint64(r.off+int64(i)) * 0x9E3779B97F4A7C15
		p[i] = byte(x >> 56)
	}
	r.off += int64(n)
	return n, nil
}

// heapObjectsBytes samples the live-and-unswept heap of the whole process.
func heapObjectsBytes(s []metrics.Sample) uint64 {
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// 9. Streaming: a 9 MiB object from a lazy reader, read back in 32 KiB reads, within a
// bounded heap: neither Put nor Open may hold the object in memory.
func (a *artSuite) streaming(t *testing.T) {
	const size, bound = 9 << 20, 32 << 20
	s := a.store(t)
	const key = "big/stream.bin"
	h := sha256.New()
	_, err := io.Copy(h, &artLazy{size: size})
	require.NoError(t, err)
	want := hex.EncodeToString(h.Sum(nil))

	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	base := heapObjectsBytes(sample)
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if v := heapObjectsBytes(s); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})

	info, err := s.Put(t.Context(), key, &artLazy{size: size}, gtc.PutOptions{ContentType: gtc.ContentTypeOctet})
	var got int64
	var gotSHA string
	if err == nil {
		var obj *gtc.ArtifactObject
		obj, err = s.Open(t.Context(), key)
		if err == nil {
			rh := sha256.New()
			buf := make([]byte, 32<<10)
			for {
				n, rerr := obj.Body.Read(buf)
				rh.Write(buf[:n])
				got += int64(n)
				if rerr != nil {
					if rerr != io.EOF {
						err = rerr
					}
					break
				}
			}
			obj.Body.Close()
			gotSHA = hex.EncodeToString(rh.Sum(nil))
		}
	}
	close(stop)
	wg.Wait()
	require.NoError(t, err)

	assert.Equal(t, int64(size), info.Size)
	assert.Equal(t, want, info.SHA256)
	assert.Equal(t, int64(size), got, "bytes read back")
	assert.Equal(t, want, gotSHA, "SHA-256 of the bytes read back")
	grown := int64(peak.Load()) - int64(base)
	assert.Less(t, grown, int64(bound), "heap grew by %.1f MiB over %.1f MiB while streaming a %d MiB object",
		float64(grown)/(1<<20), float64(base)/(1<<20), size>>20)
	t.Logf("heap peak %.1f MiB above a %.1f MiB baseline", float64(grown)/(1<<20), float64(base)/(1<<20))
}

// artCanceller produces data; after `before` bytes it cancels the Put's context. Then it
// either keeps producing until `after` more bytes (a store must notice the context between
// reads), or blocks until the context is done and fails with its error, as an io.Pipe whose
// producer gave up does.
type artCanceller struct {
	ctx      context.Context
	cancel   context.CancelFunc
	before   int64
	after    int64
	block    bool
	produced atomic.Int64
}

func (r *artCanceller) Read(p []byte) (int, error) {
	done := r.produced.Load()
	if done >= r.before {
		r.cancel()
		if r.block {
			<-r.ctx.Done()
			return 0, fmt.Errorf("producer gave up: %w", r.ctx.Err())
		}
		if done >= r.before+r.after {
			return 0, io.EOF
		}
	}
	n := min(len(p), 8<<10)
	for i := range p[:n] {
		p[i] = 'x'
	}
	r.produced.Add(int64(n))
	return n, nil
}

// 10. Cancellation in the middle of a Put: context.Canceled, no object, no leftovers.
func (a *artSuite) cancellation(t *testing.T) {
	const before, after = 256 << 10, 16 << 20
	cases := []struct {
		name     string
		key      string
		existing []byte
		block    bool
	}{
		{"reader keeps producing", "cancel/new.jsonl", nil, false},
		{"reader blocks", "cancel/fresh/dir/new.jsonl", nil, true},
		{"overwrite keeps the old content", "cancel/doc.jsonl", []byte("{\"old\":true}\n"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := a.store(t)
			artPut(t, s, "cancel/other.json", []byte("{}"))
			if tc.existing != nil {
				artPut(t, s, tc.key, tc.existing)
			}
			rawBefore := a.rawUnder(t, s, "")
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			body := &artCanceller{ctx: ctx, cancel: cancel, before: before, after: after, block: tc.block}
			_, err := s.Put(ctx, tc.key, body, gtc.PutOptions{ContentType: gtc.ContentTypeNDJSON})
			require.ErrorIs(t, err, context.Canceled)
			if !tc.block {
				assert.Less(t, body.produced.Load(), int64(before+after), "Put drained the body after the cancel")
			}
			if tc.existing != nil {
				assert.Equal(t, tc.existing, artRead(t, s, tc.key), "the previous content survives")
			} else {
				_, err = s.Stat(t.Context(), tc.key)
				assert.ErrorIs(t, err, gtc.ErrArtifactNotFound, "no object under the key")
				assert.NotContains(t, artKeys(artList(t, s, "cancel/", false)), tc.key)
			}
			assert.Equal(t, rawBefore, a.rawUnder(t, s, ""), "no temporary leftovers")
		})
	}
	t.Run("already cancelled", func(t *testing.T) {
		t.Parallel()
		s := a.store(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := s.Put(ctx, "cancel/late.json", strings.NewReader("{}"), gtc.PutOptions{ContentType: gtc.ContentTypeJSON})
		require.ErrorIs(t, err, context.Canceled)
		_, err = s.Stat(t.Context(), "cancel/late.json")
		assert.ErrorIs(t, err, gtc.ErrArtifactNotFound)
		assert.Empty(t, a.rawUnder(t, s, ""))
	})
}

// artJoinSegments builds a key of n bytes from valid segments, so that only its length
// can make it invalid.
func artJoinSegments(n int) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte('/')
		}
		seg := min(200, n-b.Len())
		b.WriteString(strings.Repeat("k", seg))
	}
	return b.String()
}

// artInvalidKeys are invalid keys, which every operation must refuse before any I/O.
var artInvalidKeys = []string{
	"",
	"../x",
	"a/../b",
	"..",
	".",
	"./x",
	"a/./b",
	"/abs",
	`a\b`,
	"a//b",
	"a\x00b",
	"é",
	"\xff",
	"a b",
	"C:x",
	"a\nb",
	"a/",
	"/",
	strings.Repeat("s", 256),
	artJoinSegments(1025),
}

var artInvalidPrefixes = []string{
	"",
	"a",
	"/",
	"../",
	"a/../",
	"./",
	"/abs/",
	`a\b/`,
	"a//",
	"a//b/",
	"a\x00b/",
	"é/",
	"a b/",
	strings.Repeat("s", 256) + "/",
	artJoinSegments(1024) + "/",
}

// artTouchReader records whether anyone read it.
type artTouchReader struct{ read atomic.Bool }

func (r *artTouchReader) Read([]byte) (int, error) {
	r.read.Store(true)
	return 0, io.EOF
}

// 11. Invalid keys and prefixes are refused with ErrInvalidKey before any I/O; literal
// look-alikes such as "%2e%2e" are ordinary names.
func (a *artSuite) invalidKeys(t *testing.T) {
	s := a.store(t)
	ctx := t.Context()
	artPut(t, s, "keep/me.json", []byte("{}"))
	before := a.rawUnder(t, s, "")

	for _, key := range artInvalidKeys {
		body := &artTouchReader{}
		_, err := s.Put(ctx, key, body, gtc.PutOptions{ContentType: gtc.ContentTypeOctet})
		assert.ErrorIs(t, err, gtc.ErrInvalidKey, "Put %q", key)
		assert.False(t, body.read.Load(), "Put %q read the body", key)
		_, err = s.Open(ctx, key)
		assert.ErrorIs(t, err, gtc.ErrInvalidKey, "Open %q", key)
		_, err = s.Stat(ctx, key)
		assert.ErrorIs(t, err, gtc.ErrInvalidKey, "Stat %q", key)
		assert.ErrorIs(t, s.Delete(ctx, key), gtc.ErrInvalidKey, "Delete %q", key)
	}
	for _, prefix := range artInvalidPrefixes {
		var entries []gtc.ArtifactEntry
		var errs []error
		for e, err := range s.List(ctx, prefix, gtc.ListOptions{}) {
			if err != nil {
				errs = append(errs, err)
				continue
			}
			entries = append(entries, e)
		}
		assert.Empty(t, entries, "List %q", prefix)
		if assert.Len(t, errs, 1, "List %q", prefix) {
			assert.ErrorIs(t, errs[0], gtc.ErrInvalidKey, "List %q", prefix)
		}
		n, err := s.DeletePrefix(ctx, prefix)
		assert.ErrorIs(t, err, gtc.ErrInvalidKey, "DeletePrefix %q", prefix)
		assert.Zero(t, n)
	}
	// Options are checked before any I/O too.
	for name, opts := range map[string]gtc.PutOptions{
		"no content type":      {},
		"invalid metadata key": {ContentType: gtc.ContentTypeJSON, Metadata: map[string]string{"Bad-Key": "x"}},
	} {
		body := &artTouchReader{}
		_, err := s.Put(ctx, "opts/x.json", body, opts)
		assert.Error(t, err, name)
		assert.False(t, body.read.Load(), "%s: the body was read", name)
	}
	assert.Equal(t, before, a.rawUnder(t, s, ""), "storage unchanged")

	valid := []string{
		"%2e%2e",
		"a/%2e%2e/b",
		"~",
		"a~b%c+d=e@f,g-h.i_j",
		strings.Repeat("s", 255),
		artJoinSegments(1024),
	}
	for _, key := range valid {
		artPut(t, s, key, []byte(key))
		assert.Equal(t, []byte(key), artRead(t, s, key), "valid key %q", key)
	}
	want := slices.Concat(before, valid)
	sort.Strings(want)
	assert.Equal(t, want, a.rawUnder(t, s, ""), "valid keys are stored under their literal names")
}

// 12. The content types of the extension table round-trip through Put, Stat and Open.
func (a *artSuite) contentTypes(t *testing.T) {
	s := a.store(t)
	for key, want := range map[string]string{
		"ct/x.json":        "application/json",
		"ct/manifest.json": "application/json",
		"ct/x.jsonl":       "application/x-ndjson",
		"ct/x.csv":         "text/csv; charset=utf-8",
		"ct/.reserved":     "application/octet-stream",
		"ct/x.bin":         "application/octet-stream",
		"ct/noext":         "application/octet-stream",
	} {
		info := artPut(t, s, key, []byte("x"))
		assert.Equal(t, want, info.ContentType, "Put %s", key)
		assert.Equal(t, want, a.stat(t, s, key).ContentType, "Stat %s", key)
		obj, err := s.Open(t.Context(), key)
		require.NoError(t, err)
		assert.Equal(t, want, obj.ContentType, "Open %s", key)
		require.NoError(t, obj.Body.Close())
	}
}
