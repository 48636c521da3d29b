package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/gtc-dev/gtc"
)

const (
	// listPageSize is the page size of every listing (the service maximum is 5000; 1000 keeps
	// the first entries coming quickly).
	listPageSize = 1000
	// deleteWorkers bounds DeletePrefix's parallel deletions.
	deleteWorkers = 8
	// downloadRetries is how often a broken download resumes at its offset.
	downloadRetries = 3
)

// Open returns a reader over the object. A connection dropped mid-download is resumed at the
// right offset, pinned to the ETag first read so a concurrent overwrite cannot splice two
// versions together.
func (s *Store) Open(ctx context.Context, key string) (*gtc.ArtifactObject, error) {
	if err := gtc.ValidateKey(key); err != nil {
		return nil, err
	}
	resp, err := s.c.NewBlobClient(key).DownloadStream(ctx, nil)
	if err != nil {
		return nil, s.mapErr(ctx, "open", key, err)
	}
	info := makeInfo(key, resp.ContentLength, resp.ContentType, resp.ETag, resp.LastModified, resp.Metadata)
	body := resp.NewRetryReader(ctx, &blob.RetryReaderOptions{MaxRetries: downloadRetries})
	return &gtc.ArtifactObject{ArtifactInfo: info, Body: &reader{s: s, ctx: ctx, key: key, rc: body}}, nil
}

// reader maps the errors of a download in progress like those of the request that began it.
type reader struct {
	s   *Store
	ctx context.Context
	key string
	rc  io.ReadCloser
}

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = r.s.mapErr(r.ctx, "read", r.key, err)
	}
	return n, err
}

func (r *reader) Close() error { return r.rc.Close() }

// Stat returns the object's properties, including the hash Put stored as metadata.
func (s *Store) Stat(ctx context.Context, key string) (gtc.ArtifactInfo, error) {
	if err := gtc.ValidateKey(key); err != nil {
		return gtc.ArtifactInfo{}, err
	}
	resp, err := s.c.NewBlobClient(key).GetProperties(ctx, nil)
	if err != nil {
		return gtc.ArtifactInfo{}, s.mapErr(ctx, "stat", key, err)
	}
	return makeInfo(key, resp.ContentLength, resp.ContentType, resp.ETag, resp.LastModified, resp.Metadata), nil
}

func makeInfo(key string, size *int64, ct *string, etag *azcore.ETag, lm *time.Time, md map[string]*string) gtc.ArtifactInfo {
	info := gtc.ArtifactInfo{Key: key}
	if size != nil {
		info.Size = *size
	}
	if ct != nil {
		info.ContentType = *ct
	}
	if etag != nil {
		info.ETag = string(*etag)
	}
	if lm != nil {
		info.LastModified = lm.UTC()
	}
	// Metadata names come back in whatever case the HTTP layer gave the header ("Sha256").
	for k, v := range md {
		if strings.EqualFold(k, metaSHA256) && v != nil {
			info.SHA256 = *v
		}
	}
	return info
}

// List yields the objects under prefix in ascending key order, one service page of 1000 at a
// time. The service returns a page's directories and objects in separate lists; they are
// merged by key, and pages never overlap, so the whole sequence stays sorted.
func (s *Store) List(ctx context.Context, prefix string, opts gtc.ListOptions) iter.Seq2[gtc.ArtifactEntry, error] {
	return func(yield func(gtc.ArtifactEntry, error) bool) {
		if err := gtc.ValidatePrefix(prefix); err != nil {
			yield(gtc.ArtifactEntry{}, err)
			return
		}
		size := int32(listPageSize)
		if !opts.Delimiter {
			pager := s.c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix, MaxResults: &size})
			for pager.More() {
				page, err := pager.NextPage(ctx)
				if err != nil {
					yield(gtc.ArtifactEntry{}, s.mapErr(ctx, "list", prefix, err))
					return
				}
				for _, it := range page.Segment.BlobItems {
					if !yield(itemEntry(it), nil) {
						return
					}
				}
			}
			return
		}
		pager := s.c.NewListBlobsHierarchyPager("/", &container.ListBlobsHierarchyOptions{Prefix: &prefix, MaxResults: &size})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				yield(gtc.ArtifactEntry{}, s.mapErr(ctx, "list", prefix, err))
				return
			}
			entries := make([]gtc.ArtifactEntry, 0, len(page.Segment.BlobItems)+len(page.Segment.BlobPrefixes))
			for _, it := range page.Segment.BlobItems {
				entries = append(entries, itemEntry(it))
			}
			for _, p := range page.Segment.BlobPrefixes {
				if p.Name != nil {
					entries = append(entries, gtc.ArtifactEntry{Key: *p.Name, IsPrefix: true})
				}
			}
			slices.SortFunc(entries, func(a, b gtc.ArtifactEntry) int { return strings.Compare(a.Key, b.Key) })
			for _, e := range entries {
				if !yield(e, nil) {
					return
				}
			}
		}
	}
}

func itemEntry(it *container.BlobItem) gtc.ArtifactEntry {
	e := gtc.ArtifactEntry{}
	if it.Name != nil {
		e.Key = *it.Name
	}
	if it.Properties != nil && it.Properties.ContentLength != nil {
		e.Size = *it.Properties.ContentLength
	}
	return e
}

// Delete removes the object and any blob snapshots of it (the service refuses to delete a
// blob with snapshots otherwise).
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := gtc.ValidateKey(key); err != nil {
		return err
	}
	include := blob.DeleteSnapshotsOptionTypeInclude
	if _, err := s.c.NewBlobClient(key).Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: &include}); err != nil {
		return s.mapErr(ctx, "delete", key, err)
	}
	return nil
}

// DeletePrefix deletes every object under prefix, 8 at a time, as the flat listing yields
// them. An object someone else deleted meanwhile is not counted and is no error. On the
// first failure it stops and returns how many it removed so far.
func (s *Store) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	if err := gtc.ValidatePrefix(prefix); err != nil {
		return 0, err
	}
	dctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		count atomic.Int64
		wg    sync.WaitGroup
		keys  = make(chan string)
	)
	include := blob.DeleteSnapshotsOptionTypeInclude
	for range deleteWorkers {
		wg.Go(func() {
			for key := range keys {
				_, err := s.c.NewBlobClient(key).Delete(dctx, &blob.DeleteOptions{DeleteSnapshots: &include})
				switch {
				case err == nil:
					count.Add(1)
				case bloberror.HasCode(err, bloberror.BlobNotFound):
				default:
					cancel(s.mapErr(dctx, "delete", key, err))
				}
			}
		})
	}
	var listErr error
	for e, err := range s.List(dctx, prefix, gtc.ListOptions{}) {
		if err != nil {
			listErr = err
			break
		}
		select {
		case keys <- e.Key:
			continue
		case <-dctx.Done():
		}
		break
	}
	close(keys)
	wg.Wait()
	n := int(count.Load())
	switch {
	case ctx.Err() != nil:
		return n, fmt.Errorf("blob: delete prefix %q: %w", prefix, ctx.Err())
	case dctx.Err() != nil:
		return n, context.Cause(dctx)
	case listErr != nil:
		return n, listErr
	}
	return n, nil
}
