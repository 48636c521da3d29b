package export

import (
	"context"
	"errors"
	"strings"
)

// DefaultInternalFields is the default of GTC_EXPORT_INTERNAL_FIELDS: the concurrency
// token, the storage type marker, the assignment state, the people involved (e-mail
// addresses), curator notes and the raw trace blob.
const DefaultInternalFields = "_etag,docType,assignedTo,assignedAt,updatedBy,createdBy,comment,tracePayload"

// StripInternal is the strip_internal processor: it removes configured top-level keys so a
// record can be shared outside the curation team.
type StripInternal struct {
	fields []string
}

// ParseInternalFields parses GTC_EXPORT_INTERNAL_FIELDS (comma-separated, trimmed, empties
// dropped). id and datasetName cannot be removed: file names and the payload's
// datasetNames depend on them.
func ParseInternalFields(s string) ([]string, error) {
	var out []string
	for piece := range strings.SplitSeq(s, ",") {
		p := strings.TrimSpace(piece)
		if p == "" {
			continue
		}
		if p == "id" || p == "datasetName" {
			return nil, errors.New("GTC_EXPORT_INTERNAL_FIELDS cannot remove id or datasetName")
		}
		out = append(out, p)
	}
	return out, nil
}

// NewStripInternal returns the processor removing fields.
func NewStripInternal(fields []string) *StripInternal {
	return &StripInternal{fields: append([]string(nil), fields...)}
}

// Name is "strip_internal".
func (*StripInternal) Name() string { return "strip_internal" }

// Fields returns the keys the processor removes.
func (p *StripInternal) Fields() []string { return append([]string(nil), p.fields...) }

// Process removes the internal keys of one record.
func (p *StripInternal) Process(_ context.Context, rec Record, emit func(Record) error) error {
	_ = p.apply(rec, rec.ID())
	return emit(rec)
}

func (p *StripInternal) apply(f fields, _ string) error {
	for _, k := range p.fields {
		f.del(k)
	}
	return nil
}
