package export

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/gtc-dev/gtc"
)

// SnapshotsPrefix is the storage prefix under which every snapshot directory lives.
const SnapshotsPrefix = "exports/snapshots/"

const (
	reservedName = ".reserved"
	manifestName = "manifest.json"
	maxIDTries   = 1000
)

// SnapshotDir is the storage key of a snapshot's directory (without the trailing "/").
func SnapshotDir(id string) string { return SnapshotsPrefix + id }

// ArtifactResult is what an artifact export reports.
type ArtifactResult struct {
	Result
	SnapshotDir  string // storage key of the directory
	ManifestPath string // storage key of the manifest
}

// errStorageWrite is the answer when export storage fails part-way; the cause is logged.
var errStorageWrite = &gtc.Error{Code: gtc.CodeStorageError, Message: "Export storage write failed"}

// errStorageUnreachable is the answer when export storage cannot be reached before
// anything was written.
var errStorageUnreachable = &gtc.Error{Code: gtc.CodeStoreUnavailable, Message: "Export storage is not reachable; retry later"}

// errStorageFull is the answer when export storage (or the server's temporary space) has
// no room for the snapshot; what was written of it has been removed.
var errStorageFull = &gtc.Error{Code: gtc.CodeInsufficientStorage,
	Message: "Export storage is out of space; the snapshot was not saved. Free disk space and retry."}

// storageError keeps the cause of a storage failure for the log while the API sees only
// the public error.
type storageError struct {
	public *gtc.Error
	cause  error
}

func (e *storageError) Error() string { return e.public.Message + ": " + e.cause.Error() }
func (e *storageError) Unwrap() []error {
	return []error{e.public, e.cause}
}

// ItemFileName is the file name of one record of a json_snapshot_payload artifact:
// ground-truth-<encodedId>.json, where every byte of the id outside [A-Za-z0-9._-] is
// written %XX (upper-case hex). An encoded id over 200 bytes is cut to 180 (never inside
// a triplet) and gets "~" and the first 16 hex digits of the id's SHA-256. It is the name of
// every record whose name is not taken by an earlier record of the same export (see
// itemFileNamer); the others get QualifiedItemFileName.
func ItemFileName(id string) string {
	return "ground-truth-" + shortenStem(encodeNamePart(nil, id), id) + ".json"
}

// QualifiedItemFileName is the file name of a record whose ItemFileName an earlier record
// of the same export already has (the same id in another dataset, or an id that
// split_turns made equal to a real one): ground-truth-<encodedId>~<encodedDatasetName>.json
// for n = 1, and ground-truth-<encodedId>~<encodedDatasetName>~<n>.json for n ≥ 2 when that
// is taken too. Both parts are encoded as in ItemFileName, which writes "~" as %7E, so the
// "~" separators cannot come from the id or the name. A stem over 200 bytes is cut to 180
// and gets "~" and 16 hex digits of a SHA-256 of id, datasetName and n.
func QualifiedItemFileName(datasetName, id string, n int) string {
	stem := encodeNamePart(nil, id)
	stem = append(stem, '~')
	stem = encodeNamePart(stem, datasetName)
	hashed := id + "\x00" + datasetName
	if n > 1 {
		stem = append(stem, '~')
		stem = strconv.AppendInt(stem, int64(n), 10)
		hashed += "\x00" + strconv.Itoa(n)
	}
	return "ground-truth-" + shortenStem(stem, hashed) + ".json"
}

// encodeNamePart appends s to dst with every byte outside [A-Za-z0-9._-] written %XX.
func encodeNamePart(dst []byte, s string) []byte {
	const hexUpper = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' {
			dst = append(dst, c)
			continue
		}
		dst = append(dst, '%', hexUpper[c>>4], hexUpper[c&0xF])
	}
	return dst
}

// shortenStem keeps an encoded stem of at most 200 bytes; a longer one is cut to 180 bytes
// (never inside a %XX triplet) and gets "~" and the first 16 hex digits of the SHA-256 of
// hashed.
func shortenStem(enc []byte, hashed string) string {
	if len(enc) <= 200 {
		return string(enc)
	}
	cut := 180
	switch {
	case enc[cut-1] == '%':
		cut--
	case enc[cut-2] == '%':
		cut -= 2
	}
	sum := sha256.Sum256([]byte(hashed))
	enc = append(enc[:cut], '~')
	enc = append(enc, hex.EncodeToString(sum[:8])...)
	return string(enc)
}

// itemFileNamer gives every record of a per-record artifact its own file name, in record
// order, so the names are deterministic: a record gets ItemFileName(id) unless an earlier
// record has that name, else the first free QualifiedItemFileName(datasetName, id, n).
// A record whose id is unique in the export therefore keeps the plain name. It remembers
// a 64-bit FNV-1a hash per name, not the name: a hash that matches by accident only moves a
// record on to its qualified name, and a name is used only when no earlier name has its
// hash, so two records never share a file.
type itemFileNamer struct {
	taken map[uint64]struct{}
}

func newItemFileNamer() *itemFileNamer { return &itemFileNamer{taken: map[uint64]struct{}{}} }

func (n *itemFileNamer) name(datasetName, id string) string {
	if name := ItemFileName(id); n.take(name) {
		return name
	}
	for k := 1; ; k++ {
		if name := QualifiedItemFileName(datasetName, id, k); n.take(name) {
			return name
		}
	}
}

// take reserves name and reports whether it was free.
func (n *itemFileNamer) take(name string) bool {
	sum := uint64(14695981039346656037) // FNV-1a, 64-bit
	for i := 0; i < len(name); i++ {
		sum ^= uint64(name[i])
		sum *= 1099511628211
	}
	if _, ok := n.taken[sum]; ok {
		return false
	}
	n.taken[sum] = struct{}{}
	return true
}

// FileEntry is one data file of a manifest.
type FileEntry struct {
	Name        string `json:"name"`
	Bytes       int64  `json:"bytes"`
	SHA256      string `json:"sha256"`
	ContentType string `json:"contentType"`
	Items       int    `json:"items"`
}

// Artifact writes a snapshot to export storage: it reserves a snapshot id, writes the data
// files, then the manifest. A snapshot is complete exactly when its manifest exists; on a
// failure the data files written so far are deleted and the reservation stays, so the id
// is never handed out again.
func (x *Exporter) Artifact(ctx context.Context, plan *Plan) (ar ArtifactResult, err error) {
	ar.Result = x.begin(plan)
	ctx, op := x.startOperation(ctx, spanArtifact, plan)
	defer func() { op.done(ar.Result, err) }()
	if x.artifacts == nil {
		return ar, errors.New("export: no artifact storage configured")
	}
	if err := x.checkFreeSpace(ctx); err != nil {
		return ar, err
	}
	rctx, span := startSpan(ctx, spanReserve)
	id, err := x.reserve(rctx, ar.SnapshotAt)
	if span.IsRecording() && id != "" {
		span.SetAttributes(attrSnapshotID.String(id))
	}
	endSpan(span, -1, err)
	if err != nil {
		return ar, err
	}
	ar.SnapshotID = id
	ar.SnapshotDir = SnapshotDir(id)
	ar.ManifestPath = ar.SnapshotDir + "/" + manifestName

	files := newManifestFiles(x.tmp)
	defer files.close()
	datasets := map[string]struct{}{}
	count, bytesOut, err := x.writeData(ctx, plan, ar.Result, ar.SnapshotDir, files, datasets)
	ar.Count, ar.Bytes = count, bytesOut
	if err == nil {
		mctx, span := startSpan(ctx, spanManifest)
		err = x.writeManifest(mctx, plan, ar, files, datasets)
		endSpan(span, ar.Count, err)
	}
	if err != nil {
		x.cleanup(ctx, ar.SnapshotDir)
		return ar, writeFailure(ctx, err)
	}
	x.snapshots.markComplete(id)
	return ar, nil
}

// writeFailure is the error a caller sees for an export that failed while writing: a
// record's or a request's own error as it is, a storage failure as its public error.
func writeFailure(ctx context.Context, err error) error {
	var re *RecordError
	var ge *gtc.Error
	if errors.As(err, &re) || errors.As(err, &ge) || ctx.Err() != nil {
		return err
	}
	switch {
	case errors.Is(err, gtc.ErrStorageFull):
		return &storageError{public: errStorageFull, cause: err}
	case errors.Is(err, gtc.ErrStorageUnavailable):
		// Storage went away part-way: nothing was saved, and a retry may succeed.
		return &storageError{public: errStorageUnreachable, cause: err}
	}
	return &storageError{public: errStorageWrite, cause: err}
}

// FreeSpacer is implemented by export storage on a local file system: FreeBytes reports
// how many bytes the server may still write there (errors.ErrUnsupported where the
// platform cannot tell). Blob Storage does not implement it.
type FreeSpacer interface {
	FreeBytes() (uint64, error)
}

// checkFreeSpace refuses an artifact export before anything is written when local export
// storage has less than MinFreeBytes free: by default that disk also holds the database,
// which must keep room to write.
func (x *Exporter) checkFreeSpace(ctx context.Context) error {
	fs, ok := x.artifacts.(FreeSpacer)
	if !ok || x.minFree == 0 {
		return nil
	}
	free, err := fs.FreeBytes()
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		return nil
	case err != nil:
		// Not knowing is no reason to refuse; a full disk still fails the write itself.
		x.log.WarnContext(ctx, "could not read the free space of export storage; exporting anyway", "err", err)
		return nil
	case free >= x.minFree:
		return nil
	}
	x.log.WarnContext(ctx, "artifact export refused: export storage is low on space", "free_bytes", free, "min_free_bytes", x.minFree)
	return &gtc.Error{Code: gtc.CodeInsufficientStorage, Message: fmt.Sprintf(
		"Export storage has %s free, less than the %s kept free for the server (GTC_EXPORT_MIN_FREE_BYTES); "+
			"nothing was written. Free disk space or prune old snapshots, then retry.",
		humanize.IBytes(free), humanize.IBytes(x.minFree))}
}

// reserve takes the first free snapshot id of snapshotAt, snapshotAt-2, snapshotAt-3, …
// by creating its reservation object create-only.
func (x *Exporter) reserve(ctx context.Context, at string) (string, error) {
	for n := 1; n <= maxIDTries; n++ {
		id := at
		if n > 1 {
			id = at + "-" + strconv.Itoa(n)
		}
		_, err := x.artifacts.Put(ctx, SnapshotDir(id)+"/"+reservedName, bytes.NewReader(nil), gtc.PutOptions{ContentType: gtc.ContentTypeOctet, IfNotExists: true})
		switch {
		case err == nil:
			return id, nil
		case errors.Is(err, gtc.ErrArtifactExists):
			continue
		case ctx.Err() != nil:
			return "", ctx.Err()
		case errors.Is(err, gtc.ErrStorageFull):
			return "", &storageError{public: errStorageFull, cause: err}
		case errors.Is(err, gtc.ErrStorageUnavailable):
			return "", &storageError{public: errStorageUnreachable, cause: err}
		default:
			return "", &storageError{public: errStorageWrite, cause: err}
		}
	}
	return "", &storageError{public: errStorageWrite, cause: fmt.Errorf("no free snapshot id for %s after %d attempts", at, maxIDTries)}
}

// writeData writes the data files: one per record for json_snapshot_payload, otherwise the
// formatter's single file.
func (x *Exporter) writeData(ctx context.Context, plan *Plan, res Result, dir string, files *manifestFiles, datasets map[string]struct{}) (count int, size int64, err error) {
	note := func(ds string) {
		if isNotBlank(ds) {
			datasets[ds] = struct{}{}
		}
	}
	stage := spanWriteData
	perItem := plan.Formatter.Name() == (SnapshotPayload{}).Name()
	if perItem {
		stage = spanWriteItems
	}
	ctx, span := startSpan(ctx, stage)
	defer func() {
		if span.IsRecording() {
			span.SetAttributes(attrBytes.Int64(size))
		}
		endSpan(span, count, err)
	}()
	if perItem {
		return x.writeItemFiles(ctx, plan, dir, files, note)
	}

	name := plan.Formatter.FileStem() + "." + plan.Formatter.Extension()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	df, err := x.openDataFile(ctx, dir, name, plan.Formatter, x.header(plan, res))
	if err != nil {
		return 0, 0, err
	}
	s := encoderSink(df.enc, note)
	s.item = files.addItem
	_, err = x.run(ctx, plan, s, nil)
	entry, err := df.finish(err, cancel)
	if err != nil {
		return df.enc.Count(), df.cw.n, err
	}
	files.add(entry)
	return entry.Items, entry.Bytes, nil
}

// dataFile is one data file being written to export storage through a formatter's encoder:
// hashed and counted on its way.
type dataFile struct {
	name, key string
	enc       Encoder
	pw        *io.PipeWriter
	h         hash.Hash
	cw        *countingWriter
	bw        *bufio.Writer
	done      chan putResult
}

type putResult struct {
	info gtc.ArtifactInfo
	err  error
}

// openDataFile starts the upload of dir/name and an encoder of f writing to it. ctx must be
// cancelled if the file is given up without finish.
func (x *Exporter) openDataFile(ctx context.Context, dir, name string, f Formatter, h Header) (*dataFile, error) {
	df := &dataFile{name: name, key: dir + "/" + name, h: sha256.New(), done: make(chan putResult, 1)}
	pr, pw := io.Pipe()
	df.pw = pw
	go func() {
		info, err := x.artifacts.Put(ctx, df.key, pr, gtc.PutOptions{ContentType: gtc.ContentTypeFor(df.key)})
		pr.CloseWithError(errOr(err, io.ErrClosedPipe))
		df.done <- putResult{info, err}
	}()
	df.cw = &countingWriter{w: io.MultiWriter(pw, df.h)}
	df.bw = bufio.NewWriterSize(df.cw, 64<<10)
	enc, err := f.NewEncoder(df.bw, h)
	if err != nil {
		pw.CloseWithError(err)
		<-df.done
		return nil, err
	}
	df.enc = enc
	return df, nil
}

// finish closes the encoder and waits for the upload when err (the writing's outcome) is
// nil; otherwise, or when closing fails, it gives the upload up, cancelling it.
func (df *dataFile) finish(err error, cancel func()) (FileEntry, error) {
	if err == nil {
		err = df.enc.Close()
	}
	if err == nil {
		err = df.bw.Flush()
	}
	if err != nil {
		df.pw.CloseWithError(err)
		cancel()
		r := <-df.done
		return FileEntry{}, errOr(err, r.err)
	}
	df.pw.Close()
	r := <-df.done
	if r.err != nil {
		return FileEntry{}, r.err
	}
	sum := hex.EncodeToString(df.h.Sum(nil))
	if err := checkPut(r.info, df.cw.n, sum); err != nil {
		return FileEntry{}, err
	}
	return FileEntry{Name: df.name, Bytes: df.cw.n, SHA256: sum, ContentType: gtc.ContentTypeFor(df.key), Items: df.enc.Count()}, nil
}

func errOr(err, other error) error {
	if err != nil {
		return err
	}
	return other
}

// checkPut compares what storage reports with what the writer hashed.
func checkPut(info gtc.ArtifactInfo, size int64, sum string) error {
	if info.Size != size || (info.SHA256 != "" && info.SHA256 != sum) {
		return fmt.Errorf("export: storage stored %d bytes (sha256 %s) of %d (sha256 %s) for %s", info.Size, info.SHA256, size, sum, info.Key)
	}
	return nil
}

// writeItemFiles writes one pretty-printed file per record on a pool of WriteConcurrency
// workers fed in record order through a queue of twice that size.
func (x *Exporter) writeItemFiles(ctx context.Context, plan *Plan, dir string, files *manifestFiles, note func(string)) (int, int64, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	queue := make(chan itemFile, 2*x.writers)
	var (
		mu       sync.Mutex
		total    int64
		firstErr error
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
			cancel(err)
		}
		mu.Unlock()
	}
	for range x.writers {
		wg.Go(func() {
			var scratch bytes.Buffer
			var buf []byte
			for f := range queue {
				if ctx.Err() != nil {
					continue
				}
				var err error
				buf, err = f.render(buf[:0], &scratch)
				if err != nil {
					fail(err)
					continue
				}
				name := f.name
				key := dir + "/" + name
				// Create-only: the namer never hands out a name twice, so an existing file
				// is a fault, and nothing is ever overwritten.
				info, err := x.artifacts.Put(ctx, key, bytes.NewReader(buf), gtc.PutOptions{ContentType: gtc.ContentTypeJSON, IfNotExists: true})
				if errors.Is(err, gtc.ErrArtifactExists) {
					err = fmt.Errorf("export: %s was written twice: %w", key, err)
				}
				if err != nil {
					fail(err)
					continue
				}
				sum := sha256.Sum256(buf)
				hexSum := hex.EncodeToString(sum[:])
				if err := checkPut(info, int64(len(buf)), hexSum); err != nil {
					fail(err)
					continue
				}
				mu.Lock()
				total += int64(len(buf))
				files.add(FileEntry{Name: name, Bytes: int64(len(buf)), SHA256: hexSum, ContentType: gtc.ContentTypeJSON, Items: 1})
				mu.Unlock()
			}
		})
	}
	count := 0
	names := newItemFileNamer() // used by the one goroutine that sends, in record order
	send := func(f itemFile) error {
		select {
		case queue <- f:
			count++
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	_, runErr := x.run(ctx, plan, sink{
		rec: func(r Record) error {
			ds := r.DatasetName()
			note(ds)
			return send(itemFile{name: names.name(ds, r.ID()), rec: r})
		},
		raw: func(r *rawRecord) error {
			ds := r.str("datasetName")
			note(ds)
			return send(itemFile{name: names.name(ds, r.str("id")), raw: r})
		},
		item: files.addItem,
	}, nil)
	close(queue)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if firstErr != nil {
		return count, total, firstErr
	}
	if runErr != nil {
		return count, total, runErr
	}
	if err := files.err; err != nil {
		return count, total, err
	}
	return count, total, nil
}

// itemFile is one record on its way to its own file.
type itemFile struct {
	name string // the file name, given in record order
	rec  Record
	raw  *rawRecord
}

// render writes the record pretty-printed: two-space indent, sorted keys, a final newline.
func (f itemFile) render(dst []byte, scratch *bytes.Buffer) ([]byte, error) {
	if f.raw == nil {
		return AppendIndented(dst, f.rec)
	}
	scratch.Reset()
	compact := f.raw.appendTo(scratch.AvailableBuffer())
	dst, err := appendIndented(dst, compact, "")
	if err != nil {
		return dst, err
	}
	return append(dst, '\n'), nil
}

// writeManifest writes manifest.json last, pretty-printed with its keys in the documented
// order, then files, sorted by name, and items, in export order, one entry a line.
func (x *Exporter) writeManifest(ctx context.Context, plan *Plan, ar ArtifactResult, files *manifestFiles, datasets map[string]struct{}) error {
	names := make([]string, 0, len(datasets))
	for n := range datasets {
		names = append(names, n)
	}
	slices.Sort(names)
	head := []member{
		{"schemaVersion", SchemaVersion},
		{"snapshotId", ar.SnapshotID},
		{"snapshotAt", ar.SnapshotAt},
		{"createdAt", gtc.FormatAPITime(ar.StartedAt)},
		{"createdBy", plan.Actor},
		{"format", plan.Formatter.Name()},
		{"processors", plan.ProcessorNames()},
		{"filters", plan.FiltersEcho},
		{"datasetNames", names},
		{"count", ar.Count},
	}
	return x.putManifest(ctx, ar.ManifestPath, head, files.each, &files.items)
}

// member is one key of a manifest's head.
type member struct {
	key string
	val any
}

// putManifest writes a manifest to key: pretty-printed, the head's keys in order, then
// "files" (each entry's compact JSON from eachFile, indented) and "items" (one compact entry
// a line).
func (x *Exporter) putManifest(ctx context.Context, key string, head []member, eachFile func(func([]byte) error) error, items *itemLog) error {
	pr, pw := io.Pipe()
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		bw := bufio.NewWriterSize(pw, 64<<10)
		list := func(name string, each func(func([]byte) error) error, indent bool) error {
			bw.WriteString(`  "` + name + `": [`)
			n := 0
			err := each(func(line []byte) error {
				if n > 0 {
					bw.WriteByte(',')
				}
				n++
				bw.WriteString("\n    ")
				if indent {
					out, err := appendIndented(nil, line, "    ")
					if err != nil {
						return err
					}
					line = out
				}
				_, err := bw.Write(line)
				return err
			})
			if err != nil {
				return err
			}
			if n > 0 {
				bw.WriteString("\n  ")
			}
			bw.WriteString("]")
			return nil
		}
		err := func() error {
			bw.WriteString("{\n")
			for _, h := range head {
				if err := writeIndentedMember(bw, "  ", h.key, h.val); err != nil {
					return err
				}
				bw.WriteString(",\n")
			}
			if err := list("files", eachFile, true); err != nil {
				return err
			}
			bw.WriteString(",\n")
			if err := list("items", items.each, false); err != nil {
				return err
			}
			bw.WriteString("\n}\n")
			return bw.Flush()
		}()
		pw.CloseWithError(err)
	}()
	_, err := x.artifacts.Put(ctx, key, pr, gtc.PutOptions{ContentType: gtc.ContentTypeJSON})
	pr.CloseWithError(errOr(err, io.ErrClosedPipe))
	<-produced // the writer stops at its next write; it must not outlive the entries it reads
	return err
}

// writeIndentedMember writes `<indent>"key": value` with value indented one level deeper.
func writeIndentedMember(w *bufio.Writer, indent, key string, v any) error {
	w.WriteString(indent)
	q, _ := jsontext.AppendQuote(nil, key)
	w.Write(q)
	w.WriteString(": ")
	compact, err := AppendJSON(nil, v)
	if err != nil {
		return err
	}
	out, err := appendIndented(nil, compact, indent)
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}

// cleanup deletes the data files of a failed snapshot, keeping the reservation so its id
// is never reused. It is best effort: leftovers have no manifest, are never listed and are
// removed by gtc export prune --incomplete.
func (x *Exporter) cleanup(ctx context.Context, dir string) {
	// The export's context may be cancelled already; the clean-up keeps only its values
	// (the trace), so its store calls nest under the export's span.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	keys := make(chan string, 64)
	var wg sync.WaitGroup
	var failed, deleted int
	var mu sync.Mutex
	for range 8 {
		wg.Go(func() {
			for k := range keys {
				err := x.artifacts.Delete(ctx, k)
				mu.Lock()
				if err != nil && !errors.Is(err, gtc.ErrArtifactNotFound) {
					failed++
				} else {
					deleted++
				}
				mu.Unlock()
			}
		})
	}
	var listErr error
	for e, err := range x.artifacts.List(ctx, dir+"/", gtc.ListOptions{}) {
		if err != nil {
			listErr = err
			break
		}
		if e.Key != dir+"/"+reservedName {
			keys <- e.Key
		}
	}
	close(keys)
	wg.Wait()
	if listErr != nil || failed > 0 {
		x.log.Warn("export: cleanup of a failed snapshot was incomplete", "dir", dir, "deleted", deleted, "failed", failed, "err", listErr)
		return
	}
	x.log.Info("export: removed the files of a failed snapshot", "dir", dir, "deleted", deleted)
}
