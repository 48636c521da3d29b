package export

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/gtc-dev/gtc"
)

func errReleaseNotFound(name string) error {
	return gtc.Errorf(gtc.CodeNotFound, "Release '%s' not found", name)
}

func errReleaseDeleted(t Tombstone) error {
	e := gtc.Errorf(gtc.CodeReleaseDeleted, "Release '%s' was deleted", t.Name)
	e.Extra = map[string]any{"deletedAt": t.DeletedAt, "deletedBy": t.DeletedBy}
	return e
}

// Tombstone is what a deleted release leaves: who deleted it, and when.
type Tombstone struct {
	Name      string `json:"name"`
	DeletedAt string `json:"deletedAt"`
	DeletedBy string `json:"deletedBy"`
}

// ReleaseSummary is the head of a release's manifest: everything but its files and items.
type ReleaseSummary struct {
	SchemaVersion string         `json:"schemaVersion"`
	Name          string         `json:"name"`
	CreatedAt     string         `json:"createdAt"`
	CreatedBy     string         `json:"createdBy"`
	Notes         string         `json:"notes"`
	Selection     map[string]any `json:"selection"`
	ContentHash   string         `json:"contentHash"`
	Count         int            `json:"count"`
	Records       int            `json:"records"`
	Counts        ReleaseCounts  `json:"counts"`
}

// ReleaseCounts are a release's item counts.
type ReleaseCounts struct {
	Datasets map[string]int `json:"datasets"`
	Statuses map[string]int `json:"statuses"`
	Tags     map[string]int `json:"tags"`
	Splits   map[string]int `json:"splits"`
}

// manifestReader reads a release manifest as a stream: the head, then the files and items
// lists entry by entry, so a release of any size is read in bounded memory.
type manifestReader struct {
	body io.ReadCloser
	dec  *jsontext.Decoder
	next string // the key the head stopped at ("files" or "items"), or "" at the end
}

// openManifest opens the manifest object of a complete release, or says why there is none.
func (x *Exporter) openManifest(ctx context.Context, name string) (*gtc.ArtifactObject, error) {
	if !gtc.ValidReleaseName(name) {
		return nil, errReleaseNotFound(name)
	}
	if x.artifacts == nil {
		return nil, errors.New("export: no artifact storage configured")
	}
	obj, err := x.artifacts.Open(ctx, ReleaseDir(name)+"/"+manifestName)
	if errors.Is(err, gtc.ErrArtifactNotFound) {
		return nil, x.missingRelease(ctx, name)
	}
	if err != nil {
		return nil, storageRead(err)
	}
	// A deletion writes the tombstone first: a release that has one is deleted, even while
	// its files are still being removed (or a deletion was cut short).
	if _, err := x.artifacts.Stat(ctx, ReleaseDir(name)+"/"+tombstoneName); !errors.Is(err, gtc.ErrArtifactNotFound) {
		obj.Body.Close()
		if err != nil {
			return nil, storageRead(err)
		}
		return nil, x.missingRelease(ctx, name)
	}
	return obj, nil
}

// openRelease opens the manifest of a complete release and reads its head.
func (x *Exporter) openRelease(ctx context.Context, name string) (*manifestReader, ReleaseSummary, error) {
	var s ReleaseSummary
	obj, err := x.openManifest(ctx, name)
	if err != nil {
		return nil, s, err
	}
	m := &manifestReader{body: obj.Body, dec: jsontext.NewDecoder(obj.Body)}
	if err := m.head(&s); err != nil {
		obj.Body.Close()
		return nil, s, fmt.Errorf("export: manifest of release %s: %w", name, err)
	}
	return m, s, nil
}

// missingRelease is the error for a release without a manifest: deleted (410) or unknown.
func (x *Exporter) missingRelease(ctx context.Context, name string) error {
	obj, err := x.artifacts.Open(ctx, ReleaseDir(name)+"/"+tombstoneName)
	if errors.Is(err, gtc.ErrArtifactNotFound) {
		return errReleaseNotFound(name)
	}
	if err != nil {
		return storageRead(err)
	}
	defer obj.Body.Close()
	var t Tombstone
	if err := json.UnmarshalRead(io.LimitReader(obj.Body, 64<<10), &t); err != nil {
		return fmt.Errorf("export: Tombstone of release %s: %w", name, err)
	}
	return errReleaseDeleted(t)
}

func (m *manifestReader) close() { m.body.Close() }

// head reads the members before the first list.
func (m *manifestReader) head(s *ReleaseSummary) error {
	if t, err := m.dec.ReadToken(); err != nil || t.Kind() != '{' {
		return errors.New("not a JSON object")
	}
	var head bytes.Buffer
	head.WriteByte('{')
	for m.dec.PeekKind() != '}' {
		k, err := m.dec.ReadToken()
		if err != nil {
			return err
		}
		key := k.String()
		if key == "files" || key == "items" {
			m.next = key
			break
		}
		v, err := m.dec.ReadValue()
		if err != nil {
			return err
		}
		if head.Len() > 1 {
			head.WriteByte(',')
		}
		q, _ := jsontext.AppendQuote(nil, key)
		head.Write(q)
		head.WriteByte(':')
		head.Write(v)
	}
	head.WriteByte('}')
	return json.Unmarshal(head.Bytes(), s)
}

// each calls fn with every entry of the list called key, skipping the lists before it.
func (m *manifestReader) each(key string, fn func(jsontext.Value) error) error {
	for m.next != "" {
		if m.next != key {
			if err := m.dec.SkipValue(); err != nil {
				return err
			}
		} else {
			if t, err := m.dec.ReadToken(); err != nil || t.Kind() != '[' {
				return fmt.Errorf("%s is not a list", key)
			}
			for m.dec.PeekKind() != ']' {
				v, err := m.dec.ReadValue()
				if err != nil {
					return err
				}
				if err := fn(v); err != nil {
					return err
				}
			}
			return nil
		}
		if m.dec.PeekKind() == '}' {
			m.next = ""
			break
		}
		k, err := m.dec.ReadToken()
		if err != nil {
			return err
		}
		m.next = k.String()
	}
	return fmt.Errorf("the manifest has no %s", key)
}

// ReleaseSummaryOf returns the head of a release's manifest.
func (x *Exporter) ReleaseSummaryOf(ctx context.Context, name string) (ReleaseSummary, error) {
	m, s, err := x.openRelease(ctx, name)
	if err != nil {
		return s, err
	}
	m.close()
	return s, nil
}

// ReleaseFiles returns the head of a release's manifest and the files it lists (the data
// files and the dataset card, by name), without reading its items.
func (x *Exporter) ReleaseFiles(ctx context.Context, name string) (ReleaseSummary, []FileEntry, error) {
	m, s, err := x.openRelease(ctx, name)
	if err != nil {
		return s, nil, err
	}
	defer m.close()
	files := []FileEntry{}
	err = m.each("files", func(v jsontext.Value) error {
		var e FileEntry
		if err := json.Unmarshal(v, &e); err != nil {
			return err
		}
		files = append(files, e)
		return nil
	})
	if err != nil {
		return s, nil, fmt.Errorf("export: files of release %s: %w", name, err)
	}
	return s, files, nil
}

// ReleaseItems yields the items of a release in (datasetName, id) order, read from its
// manifest as a stream.
func (x *Exporter) ReleaseItems(ctx context.Context, name string) iter.Seq2[ReleaseItem, error] {
	return func(yield func(ReleaseItem, error) bool) {
		m, _, err := x.openRelease(ctx, name)
		if err != nil {
			yield(ReleaseItem{}, err)
			return
		}
		defer m.close()
		stop := errors.New("stopped")
		err = m.each("items", func(v jsontext.Value) error {
			var it ReleaseItem
			if err := json.Unmarshal(v, &it); err != nil {
				return err
			}
			if !yield(it, nil) {
				return stop
			}
			return nil
		})
		if err != nil && err != stop {
			yield(ReleaseItem{}, fmt.Errorf("export: items of release %s: %w", name, err))
		}
	}
}

// ListReleases returns the complete releases, newest first (then by name), from offset, at
// most limit, and how many there are.
func (x *Exporter) ListReleases(ctx context.Context, offset, limit int) ([]ReleaseSummary, int, error) {
	if x.artifacts == nil {
		return nil, 0, errors.New("export: no artifact storage configured")
	}
	var all []ReleaseSummary
	for e, err := range x.artifacts.List(ctx, ReleasesPrefix, gtc.ListOptions{Delimiter: true}) {
		if err != nil {
			return nil, 0, storageRead(err)
		}
		if !e.IsPrefix {
			continue
		}
		name := strings.TrimSuffix(strings.TrimPrefix(e.Key, ReleasesPrefix), "/")
		s, err := x.ReleaseSummaryOf(ctx, name)
		var ge *gtc.Error
		if errors.As(err, &ge) {
			continue // deleted, being written, or not a release
		}
		if err != nil {
			return nil, 0, err
		}
		all = append(all, s)
	}
	slices.SortFunc(all, func(a, b ReleaseSummary) int {
		if c := strings.Compare(b.CreatedAt, a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	total := len(all)
	if offset >= total {
		return []ReleaseSummary{}, total, nil
	}
	return all[offset:min(total, offset+limit)], total, nil
}

// OpenReleaseFile opens one file of a complete release: manifest.json or a file its manifest
// lists. Any other name is refused before storage is asked for it.
func (x *Exporter) OpenReleaseFile(ctx context.Context, name, file string) (*SnapshotFile, error) {
	if file == manifestName {
		obj, err := x.openManifest(ctx, name)
		if err != nil {
			return nil, err
		}
		return &SnapshotFile{Name: file, ContentType: gtc.ContentTypeJSON, Size: obj.Size, Body: obj.Body}, nil
	}
	m, _, err := x.openRelease(ctx, name)
	if err != nil {
		return nil, err
	}
	var found *FileEntry
	stop := errors.New("found")
	err = m.each("files", func(v jsontext.Value) error {
		var e FileEntry
		if err := json.Unmarshal(v, &e); err != nil {
			return err
		}
		if e.Name == file {
			found = &e
			return stop
		}
		return nil
	})
	m.close()
	if err != nil && err != stop {
		return nil, fmt.Errorf("export: files of release %s: %w", name, err)
	}
	if found == nil {
		return nil, errFileGone
	}
	obj, err := x.artifacts.Open(ctx, ReleaseDir(name)+"/"+found.Name)
	if errors.Is(err, gtc.ErrArtifactNotFound) {
		return nil, errFileGone
	}
	if err != nil {
		return nil, storageRead(err)
	}
	return &SnapshotFile{Name: found.Name, ContentType: found.ContentType, Size: obj.Size, SHA256: found.SHA256, Body: obj.Body}, nil
}

// DeleteRelease deletes a release's files and leaves its tombstone, which keeps the name
// taken: the tombstone is written first (the release is gone from then on), then the manifest
// and the data files go. Deleting a deleted release finishes a deletion that was cut short and
// answers that the release was deleted.
func (x *Exporter) DeleteRelease(ctx context.Context, name, actor string) (Tombstone, error) {
	t := Tombstone{Name: name, DeletedAt: gtc.FormatAPITime(x.clock.Now()), DeletedBy: actor}
	dir := ReleaseDir(name) + "/"
	if _, err := x.ReleaseSummaryOf(ctx, name); err != nil {
		var ge *gtc.Error
		if errors.As(err, &ge) && ge.Code == gtc.CodeReleaseDeleted {
			if cerr := x.removeReleaseFiles(ctx, dir); cerr != nil {
				return t, cerr
			}
		}
		return t, err
	}
	body, err := json.Marshal(t)
	if err != nil {
		return t, err
	}
	_, err = x.artifacts.Put(ctx, dir+tombstoneName, bytes.NewReader(body), gtc.PutOptions{ContentType: gtc.ContentTypeJSON, IfNotExists: true})
	if errors.Is(err, gtc.ErrArtifactExists) {
		return t, x.missingRelease(ctx, name) // deleted meanwhile, by another caller
	}
	if err != nil {
		return t, writeFailure(ctx, err)
	}
	return t, x.removeReleaseFiles(ctx, dir)
}

// removeReleaseFiles deletes a deleted release's manifest, then every other file but its
// claim and its tombstone.
func (x *Exporter) removeReleaseFiles(ctx context.Context, dir string) error {
	if err := x.artifacts.Delete(ctx, dir+manifestName); err != nil && !errors.Is(err, gtc.ErrArtifactNotFound) {
		return writeFailure(ctx, err)
	}
	for e, err := range x.artifacts.List(ctx, dir, gtc.ListOptions{}) {
		if err != nil {
			return writeFailure(ctx, err)
		}
		base := strings.TrimPrefix(e.Key, dir)
		if base == reservedName || base == tombstoneName {
			continue
		}
		if err := x.artifacts.Delete(ctx, e.Key); err != nil && !errors.Is(err, gtc.ErrArtifactNotFound) {
			return writeFailure(ctx, err)
		}
	}
	return nil
}
