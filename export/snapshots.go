package export

import (
	"bytes"
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gtc-dev/gtc"
)

var (
	snapshotIDRE    = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z(-[0-9]+)?$`)
	legacyFileRE    = regexp.MustCompile(`^[A-Za-z0-9._~%-]{1,255}$`)
	errSnapshotGone = &gtc.Error{Code: gtc.CodeNotFound, Message: "Snapshot not found"}
	errFileGone     = &gtc.Error{Code: gtc.CodeNotFound, Message: "File not found"}
)

// ValidSnapshotID reports whether id has the snapshot id form YYYYMMDDTHHMMSSZ[-n].
func ValidSnapshotID(id string) bool { return snapshotIDRE.MatchString(id) }

// snapshotLess orders ids newest first: snapshotAt descending, then the numeric suffix
// descending (no suffix counts as 1), so -10 sorts above -9.
func snapshotLess(a, b string) int {
	at := func(id string) (string, int) {
		base, suffix, ok := strings.Cut(id, "-")
		if !ok {
			return base, 1
		}
		n, err := strconv.Atoi(suffix)
		if err != nil {
			n = 0
		}
		return base, n
	}
	ab, an := at(a)
	bb, bn := at(b)
	if c := strings.Compare(bb, ab); c != 0 {
		return c
	}
	return bn - an
}

// SnapshotSummary is one entry of the snapshot list. Pointers are nil when an older
// manifest lacks the key.
type SnapshotSummary struct {
	SnapshotID   string
	SnapshotAt   *string
	CreatedAt    *string
	CreatedBy    *string
	Format       *string
	Count        *json.Number
	DatasetNames []string // nil when absent
	FileCount    int
	TotalBytes   int64

	modern bool // the manifest has snapshotId and files
}

// snapshotCache remembers which snapshots are complete (a complete snapshot stays complete
// until it is pruned) and the summaries of their manifests by storage ETag.
type snapshotCache struct {
	mu        sync.Mutex
	max       int
	order     *list.List // of string ids, most recent first
	complete  map[string]*list.Element
	summaries map[string]summaryEntry
}

type summaryEntry struct {
	etag string
	sum  SnapshotSummary
}

func newSnapshotCache(max int) *snapshotCache {
	return &snapshotCache{max: max, order: list.New(), complete: map[string]*list.Element{}, summaries: map[string]summaryEntry{}}
}

func (c *snapshotCache) isComplete(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.complete[id]; ok {
		c.order.MoveToFront(e)
		return true
	}
	return false
}

func (c *snapshotCache) markComplete(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.complete[id]; ok {
		c.order.MoveToFront(e)
		return
	}
	c.complete[id] = c.order.PushFront(id)
	for c.order.Len() > c.max {
		old := c.order.Remove(c.order.Back()).(string)
		delete(c.complete, old)
		delete(c.summaries, old)
	}
}

func (c *snapshotCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.complete[id]; ok {
		c.order.Remove(e)
		delete(c.complete, id)
	}
	delete(c.summaries, id)
}

func (c *snapshotCache) summary(id, etag string) (SnapshotSummary, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.summaries[id]
	if !ok || e.etag != etag || etag == "" {
		return SnapshotSummary{}, false
	}
	return e.sum, true
}

func (c *snapshotCache) putSummary(id, etag string, s SnapshotSummary) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.complete[id]; ok {
		c.summaries[id] = summaryEntry{etag, s}
	}
}

func (x *Exporter) storage() (gtc.ArtifactStore, error) {
	if x.artifacts == nil {
		return nil, errors.New("export: no artifact storage configured")
	}
	return x.artifacts, nil
}

// storageRead maps a storage error met while reading snapshots.
func storageRead(err error) error {
	if errors.Is(err, gtc.ErrStorageUnavailable) {
		return &storageError{public: errStorageUnreachable, cause: err}
	}
	return err
}

// snapshotIDs lists the snapshot directories, newest first, without enumerating files.
func (x *Exporter) snapshotIDs(ctx context.Context) ([]string, error) {
	st, err := x.storage()
	if err != nil {
		return nil, err
	}
	var ids []string
	for e, err := range st.List(ctx, SnapshotsPrefix, gtc.ListOptions{Delimiter: true}) {
		if err != nil {
			return nil, storageRead(err)
		}
		if !e.IsPrefix {
			continue
		}
		id := strings.TrimSuffix(strings.TrimPrefix(e.Key, SnapshotsPrefix), "/")
		if ValidSnapshotID(id) {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, snapshotLess)
	return ids, nil
}

// completeIDs keeps the ids whose manifest exists, checking 8 at a time.
func (x *Exporter) completeIDs(ctx context.Context, ids []string) ([]string, error) {
	ok := make([]bool, len(ids))
	errs := make([]error, len(ids))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, id := range ids {
		if x.snapshots.isComplete(id) {
			ok[i] = true
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			_, err := x.artifacts.Stat(ctx, SnapshotDir(id)+"/"+manifestName)
			switch {
			case err == nil:
				ok[i] = true
				x.snapshots.markComplete(id)
			case errors.Is(err, gtc.ErrArtifactNotFound):
			default:
				errs[i] = err
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, storageRead(err)
	}
	out := make([]string, 0, len(ids))
	for i, id := range ids {
		if ok[i] {
			out = append(out, id)
		}
	}
	return out, nil
}

// ListSnapshots returns one page of the complete snapshots, newest first, and how many
// there are in all.
func (x *Exporter) ListSnapshots(ctx context.Context, offset, limit int) ([]SnapshotSummary, int, error) {
	ids, err := x.snapshotIDs(ctx)
	if err != nil {
		return nil, 0, err
	}
	ids, err = x.completeIDs(ctx, ids)
	if err != nil {
		return nil, 0, err
	}
	total := len(ids)
	if offset >= total {
		return []SnapshotSummary{}, total, nil
	}
	page := ids[offset:min(total, offset+limit)]
	out := make([]SnapshotSummary, len(page))
	errs := make([]error, len(page))
	var wg sync.WaitGroup
	for i, id := range page {
		wg.Go(func() { out[i], errs[i] = x.summary(ctx, id) })
	}
	wg.Wait()
	// A snapshot pruned meanwhile drops out of the page.
	kept := out[:0]
	for i, s := range out {
		switch {
		case errs[i] == nil:
			kept = append(kept, s)
		case errors.Is(errs[i], gtc.ErrArtifactNotFound):
			total--
		default:
			return nil, 0, storageRead(errs[i])
		}
	}
	return kept, total, nil
}

// summary reads (or recalls) the summary of a complete snapshot's manifest.
func (x *Exporter) summary(ctx context.Context, id string) (SnapshotSummary, error) {
	key := SnapshotDir(id) + "/" + manifestName
	info, err := x.artifacts.Stat(ctx, key)
	if err != nil {
		if errors.Is(err, gtc.ErrArtifactNotFound) {
			x.snapshots.forget(id)
		}
		return SnapshotSummary{}, err
	}
	if s, ok := x.snapshots.summary(id, info.ETag); ok {
		return s, nil
	}
	obj, err := x.artifacts.Open(ctx, key)
	if err != nil {
		return SnapshotSummary{}, err
	}
	s, err := decodeSummary(obj.Body, id, nil)
	obj.Body.Close()
	if err != nil {
		return SnapshotSummary{}, err
	}
	if !s.modern {
		if err := x.legacyFiles(ctx, id, func(_ string, size int64) {
			s.FileCount++
			s.TotalBytes += size
		}); err != nil {
			return SnapshotSummary{}, err
		}
	}
	x.snapshots.putSummary(id, info.ETag, s)
	return s, nil
}

// legacyFiles walks the data files of a snapshot directory whose manifest has no files
// list: every object but the manifest and names starting with ".".
func (x *Exporter) legacyFiles(ctx context.Context, id string, fn func(name string, size int64)) error {
	prefix := SnapshotDir(id) + "/"
	for e, err := range x.artifacts.List(ctx, prefix, gtc.ListOptions{Delimiter: true}) {
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(e.Key, prefix)
		if e.IsPrefix || name == manifestName || strings.HasPrefix(name, ".") {
			continue
		}
		fn(name, e.Size)
	}
	return nil
}

// decodeSummary reads a manifest as a stream: scalar keys are kept, files is walked entry
// by entry (calling onFile when set) without keeping the entries.
func decodeSummary(r io.Reader, id string, onFile func(FileEntry) bool) (SnapshotSummary, error) {
	s := SnapshotSummary{SnapshotID: id}
	dec := json.NewDecoder(r)
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return s, fmt.Errorf("export: manifest of %s is not a JSON object", id)
	}
	hasID, hasFiles := false, false
	str := func() (*string, error) {
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if x, ok := v.(string); ok {
			return &x, nil
		}
		return nil, nil
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return s, err
		}
		key, _ := t.(string)
		switch key {
		case "snapshotId":
			v, err := str()
			if err != nil {
				return s, err
			}
			hasID = v != nil
		case "snapshotAt":
			if s.SnapshotAt, err = str(); err != nil {
				return s, err
			}
		case "createdAt":
			if s.CreatedAt, err = str(); err != nil {
				return s, err
			}
		case "createdBy":
			if s.CreatedBy, err = str(); err != nil {
				return s, err
			}
		case "format":
			if s.Format, err = str(); err != nil {
				return s, err
			}
		case "count":
			var v any
			if err := dec.Decode(&v); err != nil {
				return s, err
			}
			if n, ok := v.(json.Number); ok {
				s.Count = &n
			}
		case "datasetNames":
			var v any
			if err := dec.Decode(&v); err != nil {
				return s, err
			}
			if list, ok := v.([]any); ok {
				s.DatasetNames = []string{}
				for _, e := range list {
					if n, ok := e.(string); ok {
						s.DatasetNames = append(s.DatasetNames, n)
					}
				}
			}
		case "files":
			t, err := dec.Token()
			if err != nil {
				return s, err
			}
			if t != json.Delim('[') {
				continue // null or another value: treated as absent
			}
			hasFiles = true
			for dec.More() {
				var e FileEntry
				if err := dec.Decode(&e); err != nil {
					return s, err
				}
				s.FileCount++
				s.TotalBytes += e.Bytes
				if onFile != nil && !onFile(e) {
					return s, nil
				}
			}
			if _, err := dec.Token(); err != nil {
				return s, err
			}
		case "items":
			// Walked entry by entry: a large snapshot's list is never held whole.
			t, err := dec.Token()
			if err != nil {
				return s, err
			}
			if t != json.Delim('[') {
				continue
			}
			for dec.More() {
				var skip json.RawMessage
				if err := dec.Decode(&skip); err != nil {
					return s, err
				}
			}
			if _, err := dec.Token(); err != nil {
				return s, err
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return s, err
			}
		}
	}
	s.modern = hasID && hasFiles
	return s, nil
}

// Manifest is a snapshot's manifest ready to be sent: either the stored object, streamed
// unchanged, or (for a manifest written by the reference backend) the completed document.
type Manifest struct {
	Body io.ReadCloser
	Size int64
}

// OpenManifest returns the manifest of a complete snapshot. A malformed id never reaches
// storage.
func (x *Exporter) OpenManifest(ctx context.Context, id string) (*Manifest, error) {
	if !ValidSnapshotID(id) {
		return nil, errSnapshotGone
	}
	if _, err := x.storage(); err != nil {
		return nil, err
	}
	s, err := x.summary(ctx, id)
	if errors.Is(err, gtc.ErrArtifactNotFound) {
		return nil, errSnapshotGone
	}
	if err != nil {
		return nil, storageRead(err)
	}
	x.snapshots.markComplete(id)
	obj, err := x.artifacts.Open(ctx, SnapshotDir(id)+"/"+manifestName)
	if errors.Is(err, gtc.ErrArtifactNotFound) {
		x.snapshots.forget(id)
		return nil, errSnapshotGone
	}
	if err != nil {
		return nil, storageRead(err)
	}
	if s.modern {
		return &Manifest{Body: obj.Body, Size: obj.Size}, nil
	}
	defer obj.Body.Close()
	doc, err := x.completeLegacyManifest(ctx, id, obj.Body)
	if err != nil {
		return nil, storageRead(err)
	}
	return &Manifest{Body: io.NopCloser(bytes.NewReader(doc)), Size: int64(len(doc))}, nil
}

// completeLegacyManifest adds snapshotId and, from a listing, files (sha256 and
// contentType null, items left out) to a manifest of the reference backend.
func (x *Exporter) completeLegacyManifest(ctx context.Context, id string, r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, 16<<20))
	if err != nil {
		return nil, err
	}
	v, err := DecodeJSON(data)
	if err != nil {
		return nil, fmt.Errorf("export: manifest of %s: %w", id, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("export: manifest of %s is not an object", id)
	}
	if _, ok := m["snapshotId"].(string); !ok {
		m["snapshotId"] = id
	}
	if _, ok := m["files"].([]any); !ok {
		files := []any{}
		if err := x.legacyFiles(ctx, id, func(name string, size int64) {
			files = append(files, map[string]any{"name": name, "bytes": json.Number(strconv.FormatInt(size, 10)), "sha256": nil, "contentType": nil})
		}); err != nil {
			return nil, err
		}
		m["files"] = files
	}
	return AppendIndented(nil, m)
}

// SnapshotFile is one data file of a snapshot, open for reading.
type SnapshotFile struct {
	Name        string
	ContentType string
	Size        int64
	SHA256      string // "" when the manifest has no hash
	Body        io.ReadCloser
}

// OpenFile opens one file of a complete snapshot. The name must be manifest.json or listed
// in the manifest (for a reference-era manifest: a plain file name present in the
// directory); anything else is refused before the file is looked up.
func (x *Exporter) OpenFile(ctx context.Context, id, name string) (*SnapshotFile, error) {
	if !ValidSnapshotID(id) {
		return nil, errSnapshotGone
	}
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return nil, errFileGone
	}
	if _, err := x.storage(); err != nil {
		return nil, err
	}
	if name == manifestName {
		m, err := x.OpenManifest(ctx, id)
		if err != nil {
			return nil, err
		}
		return &SnapshotFile{Name: name, ContentType: gtc.ContentTypeJSON, Size: m.Size, Body: m.Body}, nil
	}
	manifestKey := SnapshotDir(id) + "/" + manifestName
	obj, err := x.artifacts.Open(ctx, manifestKey)
	if errors.Is(err, gtc.ErrArtifactNotFound) {
		x.snapshots.forget(id)
		return nil, errSnapshotGone
	}
	if err != nil {
		return nil, storageRead(err)
	}
	var found *FileEntry
	s, err := decodeSummary(obj.Body, id, func(e FileEntry) bool {
		if e.Name == name {
			found = &e
			return false
		}
		return true
	})
	obj.Body.Close()
	if err != nil {
		return nil, storageRead(err)
	}
	x.snapshots.markComplete(id)
	switch {
	case found != nil:
	case s.modern:
		return nil, errFileGone
	case strings.HasPrefix(name, ".") || !legacyFileRE.MatchString(name):
		return nil, errFileGone
	}
	key := SnapshotDir(id) + "/" + name
	if gtc.ValidateKey(key) != nil {
		return nil, errFileGone
	}
	f, err := x.artifacts.Open(ctx, key)
	if errors.Is(err, gtc.ErrArtifactNotFound) {
		return nil, errFileGone
	}
	if err != nil {
		return nil, storageRead(err)
	}
	out := &SnapshotFile{Name: name, ContentType: gtc.ContentTypeFor(name), Size: f.Size, Body: f.Body}
	if found != nil {
		out.SHA256 = found.SHA256
	}
	return out, nil
}

// PruneOptions select the snapshots gtc export prune removes.
type PruneOptions struct {
	Incomplete bool          // reserved but without a manifest
	Complete   bool          // complete snapshots (retention)
	OlderThan  time.Duration // by the reservation's (incomplete) or manifest's (complete) time
	DryRun     bool
}

// Pruned is one snapshot directory prune removed (or would remove).
type Pruned struct {
	SnapshotID string
	Complete   bool
	Modified   time.Time
	Objects    int // objects deleted; 0 in a dry run
}

// Prune deletes the snapshot directories that match opts and lists them.
func (x *Exporter) Prune(ctx context.Context, opts PruneOptions) ([]Pruned, error) {
	return x.prune(ctx, opts.DryRun, func(complete bool) (time.Duration, bool) {
		if complete {
			return opts.OlderThan, opts.Complete
		}
		return opts.OlderThan, opts.Incomplete
	})
}

// RetainOptions are the ages past which Retain deletes snapshots.
type RetainOptions struct {
	Complete   time.Duration // complete snapshots, by their manifest's time; 0 keeps them
	Incomplete time.Duration // snapshots without a manifest, by their reservation's time; 0 keeps them
}

// Retain deletes, in one pass over the snapshots, the complete ones older than
// opts.Complete and the incomplete ones older than opts.Incomplete (an export that failed
// or was interrupted leaves its reservation behind), and lists them. gtc serve runs it at
// startup and hourly.
func (x *Exporter) Retain(ctx context.Context, opts RetainOptions) ([]Pruned, error) {
	return x.prune(ctx, false, func(complete bool) (time.Duration, bool) {
		if complete {
			return opts.Complete, opts.Complete > 0
		}
		return opts.Incomplete, opts.Incomplete > 0
	})
}

// prune deletes the snapshot directories that rule selects: for a complete or an
// incomplete snapshot, whether such snapshots go at all and past which age.
func (x *Exporter) prune(ctx context.Context, dryRun bool, rule func(complete bool) (time.Duration, bool)) ([]Pruned, error) {
	ids, err := x.snapshotIDs(ctx)
	if err != nil {
		return nil, err
	}
	now := x.clock.Now()
	var out []Pruned
	for _, id := range ids {
		dir := SnapshotDir(id) + "/"
		info, err := x.artifacts.Stat(ctx, dir+manifestName)
		complete := err == nil
		if err != nil && !errors.Is(err, gtc.ErrArtifactNotFound) {
			return out, storageRead(err)
		}
		age, selected := rule(complete)
		if !selected {
			continue
		}
		if !complete {
			if info, err = x.artifacts.Stat(ctx, dir+reservedName); err != nil {
				if errors.Is(err, gtc.ErrArtifactNotFound) {
					continue // not a directory this program made
				}
				return out, storageRead(err)
			}
		}
		if !info.LastModified.Before(now.Add(-age)) {
			continue
		}
		p := Pruned{SnapshotID: id, Complete: complete, Modified: info.LastModified}
		if !dryRun {
			x.snapshots.forget(id)
			n, err := x.artifacts.DeletePrefix(ctx, dir)
			if err != nil {
				return out, storageRead(err)
			}
			p.Objects = n
		}
		out = append(out, p)
	}
	return out, nil
}
