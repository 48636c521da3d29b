package gtc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"path"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// ArtifactStore keeps exported snapshots: objects under relative, "/"-separated keys.
// storage/localfs and storage/blob implement it, and storage/storetest holds the conformance
// suite both run. Every operation validates its key (or prefix) with ValidateKey before it
// touches storage.
type ArtifactStore interface {
	// Put writes the object at key, streaming from body. It returns after the object is
	// durable and visible. With IfNotExists it fails with ErrArtifactExists when the key is
	// taken. Info carries the byte count and SHA-256 of what was written.
	Put(ctx context.Context, key string, body io.Reader, opts PutOptions) (ArtifactInfo, error)
	// Open returns a reader over the whole object. The caller closes Body.
	Open(ctx context.Context, key string) (*ArtifactObject, error)
	// Stat returns the object's info without its bytes.
	Stat(ctx context.Context, key string) (ArtifactInfo, error)
	// List yields the objects under prefix (which ends in "/") in ascending key order. With
	// Delimiter it yields, instead of deeper objects, one entry per "directory" directly
	// under prefix, plus the objects directly under it.
	List(ctx context.Context, prefix string, opts ListOptions) iter.Seq2[ArtifactEntry, error]
	// Delete removes one object; a missing object is ErrArtifactNotFound.
	Delete(ctx context.Context, key string) error
	// DeletePrefix removes every object under prefix (which ends in "/") and returns how
	// many it removed.
	DeletePrefix(ctx context.Context, prefix string) (int, error)
	// Backend is "local" or "blob".
	Backend() string
}

// PutOptions are the options of ArtifactStore.Put.
type PutOptions struct {
	ContentType string            // required; ContentTypeFor gives the one for a key
	IfNotExists bool              // create only
	Metadata    map[string]string // optional; keys match ^[a-z][a-z0-9]{0,31}$
}

// ArtifactInfo describes a stored object.
type ArtifactInfo struct {
	Key          string
	Size         int64
	ContentType  string
	SHA256       string // lower-case hex; always set by Put, by Stat/Open when the backend kept it
	ETag         string // opaque; changes on every write
	LastModified time.Time
}

// ArtifactObject is an open object: its info and a reader over its bytes.
type ArtifactObject struct {
	ArtifactInfo
	Body io.ReadCloser
}

// ListOptions are the options of ArtifactStore.List.
type ListOptions struct {
	Delimiter bool
}

// ArtifactEntry is one result of ArtifactStore.List.
type ArtifactEntry struct {
	Key      string // for a "directory" entry: the prefix, ending in "/"
	IsPrefix bool
	Size     int64
}

// Artifact storage errors. Backends wrap their causes so errors.Is works on these.
var (
	ErrArtifactNotFound   = errors.New("artifacts: not found")
	ErrArtifactExists     = errors.New("artifacts: already exists")
	ErrInvalidKey         = errors.New("artifacts: invalid key")
	ErrStorageUnavailable = errors.New("artifacts: storage unavailable")
)

// MaxKeyBytes is the longest artifact key.
const MaxKeyBytes = 1024

// ValidateKey checks an artifact key: 1–1024 bytes, no leading "/", no "//", no trailing "/",
// segments of 1–255 bytes that are neither "." nor "..", and only the bytes
// [A-Za-z0-9._~%+=@,-] besides "/". The rules keep keys identical on every file system and in
// Blob names, and close path traversal before any I/O.
func ValidateKey(key string) error { return validateKey(key, false) }

// ValidatePrefix checks a listing or deletion prefix: a key that ends in "/".
func ValidatePrefix(prefix string) error { return validateKey(prefix, true) }

func validateKey(key string, prefix bool) error {
	bad := func(why string) error { return fmt.Errorf("%w %q: %s", ErrInvalidKey, key, why) }
	if len(key) == 0 || len(key) > MaxKeyBytes {
		return bad("length must be 1–1024 bytes")
	}
	if !utf8.ValidString(key) {
		return bad("not valid UTF-8")
	}
	body := key
	if prefix {
		if !strings.HasSuffix(key, "/") {
			return bad("a prefix must end in /")
		}
		body = key[:len(key)-1]
		if body == "" {
			return bad("empty prefix")
		}
	} else if strings.HasSuffix(key, "/") {
		return bad("trailing /")
	}
	if strings.HasPrefix(key, "/") {
		return bad("absolute path")
	}
	for i := 0; i < len(body); i++ {
		if !keyByte(body[i]) && body[i] != '/' {
			return bad(fmt.Sprintf("byte 0x%02x is not allowed", body[i]))
		}
	}
	for seg := range strings.SplitSeq(body, "/") {
		switch {
		case seg == "":
			return bad("empty segment")
		case seg == "." || seg == "..":
			return bad("relative segment")
		case len(seg) > 255:
			return bad("segment longer than 255 bytes")
		}
	}
	return nil
}

func keyByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("._~%+=@,-", c) >= 0
}

// Content types stored and served for artifacts, by extension.
const (
	ContentTypeJSON    = "application/json"
	ContentTypeNDJSON  = "application/x-ndjson"
	ContentTypeCSV     = "text/csv; charset=utf-8"
	ContentTypeParquet = "application/vnd.apache.parquet"
	ContentTypeOctet   = "application/octet-stream"
	// ContentTypeMarkdown is a release's dataset card.
	ContentTypeMarkdown = "text/markdown; charset=utf-8"
)

// ContentTypeFor is the content type of the object at key, chosen by its extension.
func ContentTypeFor(key string) string {
	switch path.Ext(key) {
	case ".json":
		return ContentTypeJSON
	case ".jsonl":
		return ContentTypeNDJSON
	case ".csv":
		return ContentTypeCSV
	case ".parquet":
		return ContentTypeParquet
	case ".md":
		return ContentTypeMarkdown
	}
	return ContentTypeOctet
}

var metadataKeyRE = regexp.MustCompile(`^[a-z][a-z0-9]{0,31}$`)

// ValidatePutOptions checks the options every backend requires.
func ValidatePutOptions(o PutOptions) error {
	if o.ContentType == "" {
		return fmt.Errorf("artifacts: put needs a content type")
	}
	for k := range o.Metadata {
		if !metadataKeyRE.MatchString(k) {
			return fmt.Errorf("artifacts: invalid metadata key %q", k)
		}
	}
	return nil
}
