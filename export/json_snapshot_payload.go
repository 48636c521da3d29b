package export

import (
	"io"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// SnapshotPayload is the json_snapshot_payload format, the default and what the curator
// frontend downloads: one object with schemaVersion, snapshotAt, filters, items, count and
// datasetNames, in that order so that it can be written in one pass.
type SnapshotPayload struct{}

// Name is "json_snapshot_payload".
func (SnapshotPayload) Name() string { return "json_snapshot_payload" }

// MediaType is application/json.
func (SnapshotPayload) MediaType() string { return "application/json" }

// Extension is "json".
func (SnapshotPayload) Extension() string { return "json" }

// FileStem is "ground-truth-snapshot".
func (SnapshotPayload) FileStem() string { return "ground-truth-snapshot" }

// NewEncoder writes the opening part of the object.
func (SnapshotPayload) NewEncoder(w io.Writer, h Header) (Encoder, error) {
	filters := h.Filters
	if filters == nil {
		filters = map[string]any{}
	}
	buf := append([]byte(nil), `{"schemaVersion":`...)
	buf, _ = jsontext.AppendQuote(buf, orV2(h.SchemaVersion))
	buf = append(buf, `,"snapshotAt":`...)
	buf, _ = jsontext.AppendQuote(buf, h.SnapshotAt)
	buf = append(buf, `,"filters":`...)
	buf, err := AppendJSON(buf, filters)
	if err != nil {
		return nil, err
	}
	buf = append(buf, `,"items":[`...)
	if _, err := w.Write(buf); err != nil {
		return nil, err
	}
	return &payloadEncoder{w: w, datasets: map[string]struct{}{}, buf: buf[:0]}, nil
}

func orV2(s string) string {
	if s == "" {
		return "v2"
	}
	return s
}

type payloadEncoder struct {
	w        io.Writer
	n        int
	datasets map[string]struct{}
	buf      []byte
}

func (e *payloadEncoder) Encode(rec Record) error {
	b := e.buf[:0]
	if e.n > 0 {
		b = append(b, ',')
	}
	b, err := AppendJSON(b, rec)
	e.buf = b
	if err != nil {
		return err
	}
	if _, err := e.w.Write(b); err != nil {
		return err
	}
	e.n++
	if ds := rec.DatasetName(); isNotBlank(ds) {
		e.datasets[ds] = struct{}{}
	}
	return nil
}

func (e *payloadEncoder) encodeRaw(r *rawRecord) error {
	b := e.buf[:0]
	if e.n > 0 {
		b = append(b, ',')
	}
	b = r.appendTo(b)
	e.buf = b
	if _, err := e.w.Write(b); err != nil {
		return err
	}
	e.n++
	if ds := r.str("datasetName"); isNotBlank(ds) {
		e.datasets[ds] = struct{}{}
	}
	return nil
}

func (e *payloadEncoder) Close() error {
	names := make([]string, 0, len(e.datasets))
	for n := range e.datasets {
		names = append(names, n)
	}
	slices.Sort(names)
	b := append(e.buf[:0], `],"count":`...)
	b = strconv.AppendInt(b, int64(e.n), 10)
	b = append(b, `,"datasetNames":`...)
	b, _ = AppendJSON(b, names)
	b = append(b, '}')
	_, err := e.w.Write(b)
	return err
}

func (e *payloadEncoder) Count() int { return e.n }
