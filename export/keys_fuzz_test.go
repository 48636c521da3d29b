package export

import (
	"bytes"
	"context"
	"errors"
	"io"
	"iter"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/localfs"
)

// fuzzRoot stands for the configured local export root in the pure key checks.
const fuzzRoot = "/srv/gtc/data"

// confined fails unless key, accepted as an artifact key, stays under the root on every
// backend: no ".." or "." segment, no empty segment, not absolute, no backslash or NUL,
// valid UTF-8, already clean, and still below the root after filepath.Join.
func confined(t *testing.T, what, key string) {
	t.Helper()
	bad := func(why string) { t.Fatalf("%s %q was accepted but %s", what, key, why) }
	switch {
	case !utf8.ValidString(key):
		bad("is not UTF-8")
	case strings.ContainsAny(key, "\\\x00:"):
		bad("holds a backslash, NUL or drive colon")
	case strings.HasPrefix(key, "/"), filepath.IsAbs(key):
		bad("is absolute")
	case path.Clean(key) != key:
		bad("is not clean (" + path.Clean(key) + ")")
	case !filepath.IsLocal(filepath.FromSlash(key)):
		bad("is not local")
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			bad("has the segment " + `"` + seg + `"`)
		}
	}
	joined := filepath.Join(fuzzRoot, filepath.FromSlash(key))
	if !strings.HasPrefix(joined, fuzzRoot+string(filepath.Separator)) {
		bad("joins to " + joined)
	}
	if rel, err := filepath.Rel(fuzzRoot, joined); err != nil || filepath.ToSlash(rel) != key {
		bad("does not name itself under the root")
	}
}

// FuzzArtifactKeys checks the artifact key rules (gtc.ValidateKey) against the file system's
// own idea of a path that stays under the root, and checks that the key builder of the
// artifact writer (SnapshotDir, ItemFileName) only builds keys the validation accepts, one
// segment per item file, reversibly and without collisions.
func FuzzArtifactKeys(f *testing.F) {
	keys := []string{
		"exports/snapshots/20250102T100000Z/manifest.json", "exports/snapshots/20250102T100000Z-2/ground-truth-items.jsonl",
		"../x", "a/../b", "/abs", `a\b`, "a//b", "%2e%2e", "%2e%2e/%2f", "a\x00b", "é", strings.Repeat("k", 1025),
		".", "..", "./a", "a/.", "a/", "/", "", "C:", "c:/windows", ".tmp-x", "...", "....", "a/..%2f", "..%5c..",
		strings.Repeat("s", 255), strings.Repeat("s", 256), "exports/snapshots/" + strings.Repeat("x/", 300),
		"exports/snapshots/20250102T100000Z/../../../etc/passwd", "~/.ssh/id_rsa", "a+b=c@d,e", "\xff\xfe",
	}
	ids := []string{"gt-001", "../../etc/passwd", "a/b cé%~", "..", ".", "", "\x00", "\xff", "~", "%2e%2e%2f",
		"CON", "a\\b", strings.Repeat("a", 250) + "1", strings.Repeat("é", 100), strings.Repeat("%", 100), "ground-truth-x.json"}
	for i, k := range keys {
		f.Add(k, ids[i%len(ids)], ids[(i+1)%len(ids)])
	}
	f.Add("20250102T100000Z", strings.Repeat("a", 250)+"1", strings.Repeat("a", 250)+"2")
	f.Add("20250102T100000Z-10", "a%2Fb", "a/b")
	f.Fuzz(func(t *testing.T, key, id, other string) {
		if err := gtc.ValidateKey(key); err == nil {
			confined(t, "key", key)
			if gtc.ValidatePrefix(key+"/") != nil {
				t.Fatalf("key %q is valid but %q is not a valid prefix", key, key+"/")
			}
		} else if !errors.Is(err, gtc.ErrInvalidKey) {
			t.Fatalf("ValidateKey(%q): %v is not ErrInvalidKey", key, err)
		}
		if gtc.ValidatePrefix(key) == nil {
			if gtc.ValidateKey(strings.TrimSuffix(key, "/")) != nil {
				t.Fatalf("prefix %q is valid but its key form is not", key)
			}
			confined(t, "prefix", strings.TrimSuffix(key, "/"))
		}

		// Snapshot ids: the pattern alone keeps the directory and manifest keys valid.
		if ValidSnapshotID(key) {
			confined(t, "manifest key", SnapshotDir(key)+"/"+manifestName)
			if gtc.ValidateKey(SnapshotDir(key)+"/"+manifestName) != nil || gtc.ValidatePrefix(SnapshotDir(key)+"/") != nil {
				t.Fatalf("snapshot id %q builds invalid keys", key)
			}
		}

		// Item file names: one valid segment below the snapshot directory, whatever the id.
		name := ItemFileName(id)
		full := SnapshotDir("20250102T100000Z") + "/" + name
		if err := gtc.ValidateKey(full); err != nil {
			t.Fatalf("ItemFileName(%q) = %q builds an invalid key: %v", id, name, err)
		}
		confined(t, "item file key", full)
		if path.Dir(full) != SnapshotDir("20250102T100000Z") {
			t.Fatalf("ItemFileName(%q) = %q is not one segment", id, name)
		}
		if len(name) > 218 || !legacyFileRE.MatchString(name) || strings.HasPrefix(name, ".") || name == manifestName {
			t.Fatalf("ItemFileName(%q) = %q breaks the file name rules of the file route", id, name)
		}
		enc := strings.TrimSuffix(strings.TrimPrefix(name, "ground-truth-"), ".json")
		if !strings.Contains(enc, "~") {
			if dec, err := url.PathUnescape(enc); err != nil || dec != id {
				t.Fatalf("ItemFileName(%q) = %q does not decode back (%q, %v)", id, name, dec, err)
			}
		}
		if other != id && ItemFileName(other) == name {
			t.Fatalf("ids %q and %q share the file name %q", id, other, name)
		}

		// Qualified names (a record whose plain name is taken): the same rules, and an
		// unshortened one decodes back to its id, dataset name and number.
		n := 1 + len(key)%3
		q := QualifiedItemFileName(other, id, n)
		full = SnapshotDir("20250102T100000Z") + "/" + q
		if err := gtc.ValidateKey(full); err != nil {
			t.Fatalf("QualifiedItemFileName(%q, %q, %d) = %q builds an invalid key: %v", other, id, n, q, err)
		}
		confined(t, "qualified item file key", full)
		if path.Dir(full) != SnapshotDir("20250102T100000Z") || len(q) > 218 || !legacyFileRE.MatchString(q) ||
			strings.HasPrefix(q, ".") || q == manifestName || q == name {
			t.Fatalf("QualifiedItemFileName(%q, %q, %d) = %q breaks the file name rules", other, id, n, q)
		}
		stem := strings.TrimSuffix(strings.TrimPrefix(q, "ground-truth-"), ".json")
		if unshortened := len(encodeNamePart(nil, id)) + 1 + len(encodeNamePart(nil, other)); unshortened <= 198 {
			parts := strings.Split(stem, "~")
			want := []string{id, other}
			if n > 1 {
				want = append(want, strconv.Itoa(n))
			}
			if len(parts) != len(want) {
				t.Fatalf("QualifiedItemFileName(%q, %q, %d) = %q does not split into %d parts", other, id, n, q, len(want))
			}
			for i, part := range parts {
				if dec, err := url.PathUnescape(part); err != nil || dec != want[i] {
					t.Fatalf("QualifiedItemFileName(%q, %q, %d) = %q: part %d decodes to %q, %v", other, id, n, q, i, dec, err)
				}
			}
		}
	})
}

// keyGuard is an artifact store that records every key and prefix the exporter asks for.
type keyGuard struct {
	gtc.ArtifactStore
	mu   sync.Mutex
	keys []string
}

func (g *keyGuard) note(k string) {
	g.mu.Lock()
	g.keys = append(g.keys, k)
	g.mu.Unlock()
}

func (g *keyGuard) take() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	k := g.keys
	g.keys = nil
	return k
}

func (g *keyGuard) Open(ctx context.Context, key string) (*gtc.ArtifactObject, error) {
	g.note(key)
	return g.ArtifactStore.Open(ctx, key)
}

func (g *keyGuard) Stat(ctx context.Context, key string) (gtc.ArtifactInfo, error) {
	g.note(key)
	return g.ArtifactStore.Stat(ctx, key)
}

func (g *keyGuard) List(ctx context.Context, prefix string, o gtc.ListOptions) iter.Seq2[gtc.ArtifactEntry, error] {
	g.note(prefix)
	return g.ArtifactStore.List(ctx, prefix, o)
}

// FuzzSnapshotFileLookup drives the file and manifest routes' lookups (OpenFile,
// OpenManifest) with arbitrary snapshot ids and file names over a
// real local export root that holds a modern and a reference-era snapshot, decoy files
// beside them and a file outside the root. Every answer is either the exact bytes of a file
// of that snapshot or 404, and storage is never asked for a key outside the snapshot's
// directory.
func FuzzSnapshotFileLookup(f *testing.F) {
	root := f.TempDir()
	local, err := localfs.Open(root)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { local.Close() })
	put := func(key, body string) {
		if _, err := local.Put(context.Background(), key, strings.NewReader(body), gtc.PutOptions{ContentType: gtc.ContentTypeFor(key)}); err != nil {
			f.Fatal(err)
		}
	}
	const modern, legacy = "20260102T000000Z-3", "20251231T235959Z"
	put(SnapshotDir(modern)+"/.reserved", "")
	put(SnapshotDir(modern)+"/ground-truth-a.json", `{"id":"a"}`)
	put(SnapshotDir(modern)+"/ground-truth-unlisted.json", `{"id":"unlisted"}`)
	put(SnapshotDir(modern)+"/manifest.json", `{"schemaVersion":"v2","snapshotId":"`+modern+`","files":[`+
		`{"name":"ground-truth-a.json","bytes":10,"sha256":"00","contentType":"application/json","items":1},`+
		`{"name":"../secret.json","bytes":1},{"name":"..","bytes":1},{"name":"a\\b","bytes":1}]}`)
	put(SnapshotDir(legacy)+"/manifest.json", `{"schemaVersion":"v2","snapshotAt":"`+legacy+`","count":1}`)
	put(SnapshotDir(legacy)+"/ground-truth-b.json", `{"id":"b"}`)
	put(SnapshotDir(legacy)+"/.hidden", `{"secret":"hidden"}`)
	secrets := map[string]string{
		"secret.json":                   `{"secret":"root"}`,
		"exports/secret.json":           `{"secret":"exports"}`,
		"exports/snapshots/secret.json": `{"secret":"snapshots"}`,
	}
	for k, v := range secrets {
		put(k, v)
	}
	outside := filepath.Join(filepath.Dir(root), "outside-secret.json")
	if err := os.WriteFile(outside, []byte(`{"secret":"outside"}`), 0o600); err != nil {
		f.Fatal(err)
	}
	secretBodies := [][]byte{[]byte(`{"secret":"outside"}`), []byte(`{"secret":"hidden"}`)}
	for _, v := range secrets {
		secretBodies = append(secretBodies, []byte(v))
	}
	guard := &keyGuard{ArtifactStore: local}
	pr, fr := Builtins(nil)
	x, err := New(Config{Artifacts: guard, Processors: pr, Formatters: fr, TempDir: f.TempDir()})
	if err != nil {
		f.Fatal(err)
	}

	for _, id := range []string{modern, legacy, "../" + modern, modern + "/..", "..", ".", "", "20260102T000000Z-3\x00",
		"20260102T000000Z-", "20990101T000000Z", "..%2f..%2fetc", "/etc", `..\..`, "exports/snapshots/" + modern} {
		for _, name := range []string{"manifest.json", "ground-truth-a.json", "ground-truth-b.json", "ground-truth-unlisted.json",
			"../secret.json", "..", ".", "", "a\\b", ".hidden", ".reserved", "..%2fmanifest.json", "%2e%2e", "manifest.json\x00",
			"/etc/passwd", "../../../outside-secret.json", "secret.json", "ground-truth-a.json/", "GROUND-TRUTH-A.JSON", "\xff"} {
			f.Add(id, name)
		}
	}
	f.Fuzz(func(t *testing.T, id, name string) {
		ctx := context.Background()
		guard.take()
		checkKeys := func(op string) {
			for _, k := range guard.take() {
				var err error
				if strings.HasSuffix(k, "/") {
					err = gtc.ValidatePrefix(k)
				} else {
					err = gtc.ValidateKey(k)
				}
				if err != nil || !strings.HasPrefix(k, SnapshotDir(id)+"/") {
					t.Fatalf("%s(%q, %q) asked storage for %q", op, id, name, k)
				}
			}
		}
		notFound := func(op string, err error) {
			ge, ok := gtc.AsError(err)
			if !ok || ge.Code != gtc.CodeNotFound || (ge.Message != "Snapshot not found" && ge.Message != "File not found") {
				t.Fatalf("%s(%q, %q): %v, want a 404", op, id, name, err)
			}
		}

		m, err := x.OpenManifest(ctx, id)
		checkKeys("OpenManifest")
		if err != nil {
			notFound("OpenManifest", err)
		} else {
			body, _ := io.ReadAll(io.LimitReader(m.Body, 1<<20))
			m.Body.Close()
			if id != modern && id != legacy || !bytes.Contains(body, []byte(`"snapshotId"`)) {
				t.Fatalf("OpenManifest(%q) served %q", id, body)
			}
		}

		file, err := x.OpenFile(ctx, id, name)
		checkKeys("OpenFile")
		if err != nil {
			notFound("OpenFile", err)
			return
		}
		body, _ := io.ReadAll(io.LimitReader(file.Body, 1<<20))
		file.Body.Close()
		for _, s := range secretBodies {
			if bytes.Equal(body, s) {
				t.Fatalf("OpenFile(%q, %q) served a file outside the snapshot: %s", id, name, body)
			}
		}
		dir := filepath.Join(root, "exports", "snapshots", id)
		p := filepath.Join(dir, name)
		if filepath.Dir(p) != dir || name != filepath.Base(p) {
			t.Fatalf("OpenFile(%q, %q) served a name that is not a file of the snapshot", id, name)
		}
		if name == manifestName {
			return // the manifest route's answer, checked above
		}
		onDisk, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(body, onDisk) {
			t.Fatalf("OpenFile(%q, %q) served %q, the file holds %q (%v)", id, name, body, onDisk, err)
		}
		if id == modern && name != "ground-truth-a.json" {
			t.Fatalf("OpenFile(%q, %q): the manifest does not list that file", id, name)
		}
	})
}
