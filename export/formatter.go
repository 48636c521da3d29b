package export

import (
	"bytes"
	"fmt"
	"io"
)

// Formatter turns records into the bytes of one export format. Formatters are pure: file
// names beyond the stem and extension are the delivery's business.
type Formatter interface {
	Name() string      // ^[a-z][a-z0-9_]{0,63}$, e.g. "json_items"
	MediaType() string // full Content-Type value
	Extension() string // "json", "jsonl", "csv", "parquet"
	FileStem() string  // "ground-truth-snapshot" or "ground-truth-items"
	NewEncoder(w io.Writer, h Header) (Encoder, error)
}

// Header is what an encoder needs besides the records.
type Header struct {
	SchemaVersion string         // "v2"
	SnapshotAt    string         // YYYYMMDDTHHMMSSZ
	Filters       map[string]any // the filters echo of the plan
	ExtraColumns  []string       // csv: trailing columns requested by the chain
	// ExtraTypedColumns are the trailing columns of the typed formats (parquet): the keys the
	// chain adds to every record, with the kind of value each holds.
	ExtraTypedColumns []Column
}

// Encoder writes one export body record by record. It keeps only what its closing part
// needs.
type Encoder interface {
	Encode(rec Record) error // writes one record
	Close() error            // writes the closing part and flushes; never closes w
	Count() int              // records encoded so far
}

// rawEncoder is implemented by encoders that take records on the fast path.
type rawEncoder interface {
	encodeRaw(r *rawRecord) error
}

// FormatterRegistry maps names to formatters; like ProcessorRegistry it is filled once and
// only read afterwards.
type FormatterRegistry struct {
	byName map[string]Formatter
}

// NewFormatterRegistry returns an empty registry.
func NewFormatterRegistry() *FormatterRegistry {
	return &FormatterRegistry{byName: map[string]Formatter{}}
}

// Register adds f; a taken or malformed name is a programming error.
func (r *FormatterRegistry) Register(f Formatter) error {
	n := f.Name()
	if !nameRE.MatchString(n) {
		return fmt.Errorf("invalid export formatter name %q", n)
	}
	if _, ok := r.byName[n]; ok {
		return fmt.Errorf("duplicate export formatter %q", n)
	}
	r.byName[n] = f
	return nil
}

// Lookup returns the formatter called name.
func (r *FormatterRegistry) Lookup(name string) (Formatter, bool) {
	f, ok := r.byName[name]
	return f, ok
}

// Names returns the registered names, sorted.
func (r *FormatterRegistry) Names() []string { return sortedKeys(r.byName) }

// FormatAll formats a slice of records in one call: the list view, for tests.
func FormatAll(f Formatter, h Header, recs []Record) ([]byte, error) {
	var buf bytes.Buffer
	enc, err := f.NewEncoder(&buf, h)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			return nil, err
		}
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// DownloadName is the file name of a download: <stem>-<snapshotAt>.<ext>.
func DownloadName(f Formatter, snapshotAt string) string {
	return f.FileStem() + "-" + snapshotAt + "." + f.Extension()
}

// Builtins returns registries holding the built-in processors and formatters, with
// strip_internal removing internalFields.
func Builtins(internalFields []string) (*ProcessorRegistry, *FormatterRegistry) {
	pr := NewProcessorRegistry()
	for _, p := range []Processor{MergeTags{}, NewStripInternal(internalFields), SplitTurns{}} {
		if err := pr.Register(p); err != nil {
			panic(err) // the built-in names are constants
		}
	}
	fr := NewFormatterRegistry()
	for _, f := range append([]Formatter{SnapshotPayload{}, JSONItems{}, JSONL{}, CSV{}}, typedFormatters...) {
		if err := fr.Register(f); err != nil {
			panic(err)
		}
	}
	return pr, fr
}

// typedFormatters are built-in formatters that their own files register: parquet
// (parquet.go), which the fuzz builds leave out.
var typedFormatters []Formatter
