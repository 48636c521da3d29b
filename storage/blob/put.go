package blob

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/gtc-dev/gtc"
)

const (
	// blockSize is the size of a staged block and the threshold below which a body goes up
	// in one request.
	blockSize = 4 << 20
	// blocksInFlight bounds the buffers of one upload to 2 × blockSize.
	blocksInFlight = 2
	// maxBlocks is the service's limit of committed blocks per blob.
	maxBlocks = 50000
	// metaSHA256 is the metadata key that keeps the content hash for Stat and Open.
	metaSHA256 = "sha256"
)

// blockPool recycles block buffers across uploads: an export writes many objects at once,
// and allocating 4 MiB per block would keep the collector busy.
var blockPool = sync.Pool{New: func() any { b := make([]byte, 0, blockSize); return &b }}

func getBlock() []byte { return (*(blockPool.Get().(*[]byte)))[:0] }

func putBlock(b []byte) {
	if cap(b) >= blockSize && cap(b) <= 2*blockSize {
		b = b[:0]
		blockPool.Put(&b)
	}
}

// Put writes body at key. Bodies under 4 MiB go up in one request; larger ones are staged as
// 4 MiB blocks (at most 2 in flight) while being hashed, and committed at the end, so the
// hash can travel as metadata and nothing is visible under the key until the commit. With
// IfNotExists both paths send If-None-Match: *, which the service checks atomically.
func (s *Store) Put(ctx context.Context, key string, body io.Reader, opts gtc.PutOptions) (gtc.ArtifactInfo, error) {
	if err := gtc.ValidateKey(key); err != nil {
		return gtc.ArtifactInfo{}, err
	}
	if err := gtc.ValidatePutOptions(opts); err != nil {
		return gtc.ArtifactInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return gtc.ArtifactInfo{}, fmt.Errorf("blob: put %q: %w", key, err)
	}
	h := sha256.New()
	first, eof, err := fill(body, make([]byte, 0, 32<<10), blockSize)
	if err != nil {
		return gtc.ArtifactInfo{}, fmt.Errorf("blob: put %q: read body: %w", key, err)
	}
	h.Write(first)
	bb := s.c.NewBlockBlobClient(key)

	var (
		size         int64
		etag         *azcore.ETag
		lastModified *time.Time
		sum          string
	)
	// The same headers and conditions whether the body fits one upload or needs blocks.
	headers := &blob.HTTPHeaders{BlobContentType: &opts.ContentType}
	conditions := createConditions(opts.IfNotExists)
	if eof {
		size, sum = int64(len(first)), hex.EncodeToString(h.Sum(nil))
		resp, err := bb.Upload(ctx, streaming.NopCloser(bytes.NewReader(first)), &blockblob.UploadOptions{
			HTTPHeaders: headers, Metadata: metadata(opts.Metadata, sum), AccessConditions: conditions,
		})
		if err != nil {
			return gtc.ArtifactInfo{}, s.putErr(ctx, key, opts, err)
		}
		etag, lastModified = resp.ETag, resp.LastModified
	} else {
		ids, n, err := s.stageBlocks(ctx, bb, key, first, body, h)
		if err != nil {
			return gtc.ArtifactInfo{}, err
		}
		size, sum = n, hex.EncodeToString(h.Sum(nil))
		resp, err := bb.CommitBlockList(ctx, ids, &blockblob.CommitBlockListOptions{
			HTTPHeaders: headers, Metadata: metadata(opts.Metadata, sum), AccessConditions: conditions,
		})
		if err != nil {
			return gtc.ArtifactInfo{}, s.putErr(ctx, key, opts, err)
		}
		etag, lastModified = resp.ETag, resp.LastModified
	}
	info := gtc.ArtifactInfo{Key: key, Size: size, ContentType: opts.ContentType, SHA256: sum}
	if etag != nil {
		info.ETag = string(*etag)
	}
	if lastModified != nil {
		info.LastModified = lastModified.UTC()
	}
	return info, nil
}

// stageBlocks uploads first and the rest of r as blocks and returns their ids and the total
// size. Buffers circulate through a channel of capacity 2: the reader waits for a free
// buffer, which bounds both memory and requests in flight.
func (s *Store) stageBlocks(ctx context.Context, bb *blockblob.Client, key string, first []byte, r io.Reader, h hash.Hash) ([]string, int64, error) {
	uctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// Ids are unique per upload, so two concurrent Puts of one key never commit each other's
	// blocks.
	prefix := make([]byte, 8)
	_, _ = rand.Read(prefix)
	var (
		ids  []string
		wg   sync.WaitGroup
		free = make(chan []byte, blocksInFlight)
		size int64
	)
	free <- getBlock()
	stage := func(buf []byte) {
		id := base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%x-%06d", prefix, len(ids)))
		ids = append(ids, id)
		size += int64(len(buf))
		wg.Go(func() {
			if _, err := bb.StageBlock(uctx, id, streaming.NopCloser(bytes.NewReader(buf)), nil); err != nil {
				cancel(err)
			}
			free <- buf[:0]
		})
	}
	stage(first)
	var readErr error
	for {
		var buf []byte
		select {
		case buf = <-free:
		case <-uctx.Done():
		}
		if buf == nil {
			break
		}
		buf, eof, err := fill(r, buf, blockSize)
		if len(buf) > 0 {
			h.Write(buf)
			if len(ids) == maxBlocks {
				readErr = fmt.Errorf("object larger than %d blocks of %d bytes", maxBlocks, blockSize)
				cancel(readErr)
				break
			}
			stage(buf)
		} else {
			free <- buf
		}
		if err != nil {
			readErr = fmt.Errorf("read body: %w", err)
			cancel(readErr)
			break
		}
		if eof || uctx.Err() != nil {
			break
		}
	}
	wg.Wait()
	for len(free) > 0 {
		putBlock(<-free)
	}
	switch {
	case ctx.Err() != nil:
		return nil, 0, fmt.Errorf("blob: put %q: %w", key, ctx.Err())
	case readErr != nil:
		return nil, 0, fmt.Errorf("blob: put %q: %w", key, readErr)
	case uctx.Err() != nil:
		return nil, 0, s.mapErr(ctx, "put", key, context.Cause(uctx))
	}
	return ids, size, nil
}

// putErr maps a failed upload or commit. On a create-only write the service answers
// 409 BlobAlreadyExists, or 412 when it evaluates If-None-Match: * as a precondition.
func (s *Store) putErr(ctx context.Context, key string, opts gtc.PutOptions, err error) error {
	if opts.IfNotExists && ctx.Err() == nil && bloberror.HasCode(err, bloberror.ConditionNotMet) {
		return fmt.Errorf("blob: put %q: %w", key, gtc.ErrArtifactExists)
	}
	return s.mapErr(ctx, "put", key, err)
}

func createConditions(ifNotExists bool) *blob.AccessConditions {
	if !ifNotExists {
		return nil
	}
	etagAny := azcore.ETagAny
	return &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: &etagAny}}
}

// metadata is the caller's metadata plus the content hash, which always wins: Stat and Open
// report it as the object's SHA256.
func metadata(m map[string]string, sum string) map[string]*string {
	out := make(map[string]*string, len(m)+1)
	for k, v := range m {
		out[k] = &v
	}
	out[metaSHA256] = &sum
	return out
}

// fill appends from r to buf until buf holds limit bytes or r ends (eof). A fresh buffer
// starts small and grows, so the common small object never costs a whole block.
func fill(r io.Reader, buf []byte, limit int) (_ []byte, eof bool, _ error) {
	for len(buf) < limit {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(max(cap(buf), 32<<10), limit-len(buf)))
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), limit)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, true, nil
		}
		if err != nil {
			return buf, false, err
		}
	}
	return buf, false, nil
}
