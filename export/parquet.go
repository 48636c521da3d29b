// The fuzz builds (-tags fuzzing) and the race-detector builds of the tests leave the parquet
// format out: arrow-go is the largest compile of the module, no fuzz target reaches it, and the
// formatter starts no goroutines of its own. Instrumenting arrow-go took about two minutes of
// every cold fuzz build and as much of every cold race build. The tests that need the format
// are in files built without the race detector (//go:build !race), named Test…Parquet…;
// scripts/test.sh runs them in its norace phase and checks that every such test is named so.

//go:build !fuzzing && !race

package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/gtc-dev/gtc"
)

// Parquet is the parquet format: an Apache Parquet file with one row per record and the
// columns of ParquetColumns, then the columns the chain adds (Header.ExtraTypedColumns), in
// that order. Every column is nullable: a record without the key, or with null, has null
// there. A column's type depends only on its kind, never on the data; keys outside the
// column list are not written.
//
// Rows are gathered into row groups of at most MaxRowGroupRows rows and about
// MaxRowGroupBytes bytes of values. The column writers encode and compress (Snappy) a row
// group as it fills, and it is written out when it is full, so an export holds one row group
// at a time, whatever its size.
type Parquet struct {
	// MaxRowGroupRows bounds the rows of a row group; 0 means DefaultRowGroupRows.
	MaxRowGroupRows int
	// MaxRowGroupBytes bounds the bytes of values of a row group (string bytes as written,
	// 8 per integer); a row group ends with the row that reaches it. 0 means
	// DefaultRowGroupBytes.
	MaxRowGroupBytes int
}

// The default row group bounds of the parquet format.
const (
	DefaultRowGroupRows  = 10_000
	DefaultRowGroupBytes = 8 << 20
)

// parquetCodec compresses every column chunk. Snappy: every Parquet reader reads it (it is
// the default of pyarrow and Spark), it is the fastest to write, and it keeps the heap of an
// export small. zstd writes files about half the size, but the writer's zstd encoders (an
// 8 MiB window each) are made anew whenever the garbage collector empties their pool, which
// doubled the heap peak of an export in measurements.
var parquetCodec = compress.Codecs.Snappy

// Rows are handed to the row group's column writers in batches of at most these sizes.
const (
	parquetBatchRows  = 512
	parquetBatchBytes = 4 << 20
)

func init() { typedFormatters = append(typedFormatters, Parquet{}) }

// Name is "parquet".
func (Parquet) Name() string { return "parquet" }

// MediaType is application/vnd.apache.parquet.
func (Parquet) MediaType() string { return gtc.ContentTypeParquet }

// Extension is "parquet".
func (Parquet) Extension() string { return "parquet" }

// FileStem is "ground-truth-items".
func (Parquet) FileStem() string { return "ground-truth-items" }

// NewEncoder writes the file's leading magic bytes.
func (p Parquet) NewEncoder(w io.Writer, h Header) (Encoder, error) {
	cols := append(append([]Column(nil), ParquetColumns...), h.ExtraTypedColumns...)
	fields := make(schema.FieldList, len(cols))
	props := []parquet.WriterProperty{parquet.WithCompression(parquetCodec)}
	seen := map[string]bool{}
	for i, c := range cols {
		if seen[c.Name] {
			return nil, fmt.Errorf("export: parquet: column %q is listed twice", c.Name)
		}
		seen[c.Name] = true
		var err error
		if fields[i], err = parquetNode(c); err != nil {
			return nil, fmt.Errorf("export: parquet: column %q: %w", c.Name, err)
		}
		if c.Kind == ColumnJSON {
			// Long, mostly distinct values: a dictionary would not pay, nor min/max statistics.
			props = append(props, parquet.WithDictionaryFor(c.Name, false), parquet.WithStatsFor(c.Name, false))
		}
	}
	root, err := schema.NewGroupNode("schema", parquet.Repetitions.Required, fields, -1)
	if err != nil {
		return nil, fmt.Errorf("export: parquet: %w", err)
	}
	kv := metadata.NewKeyValueMetadata()
	filters, err := AppendJSON(nil, h.Filters)
	if err != nil {
		return nil, err
	}
	for _, m := range [][2]string{{ParquetMetaSchemaVersion, h.SchemaVersion}, {ParquetMetaSnapshotAt, h.SnapshotAt}, {ParquetMetaFilters, string(filters)}} {
		if err := kv.Append(m[0], m[1]); err != nil {
			return nil, fmt.Errorf("export: parquet: %w", err)
		}
	}
	fw, err := file.NewParquetWriterWithError(writerOnly{w}, root,
		file.WithWriterProps(parquet.NewWriterProperties(props...)), file.WithWriteMetadata(kv))
	if err != nil {
		return nil, fmt.Errorf("export: parquet: %w", err)
	}
	e := &parquetEncoder{fw: fw, maxRows: p.MaxRowGroupRows, maxBytes: p.MaxRowGroupBytes}
	if e.maxRows <= 0 {
		e.maxRows = DefaultRowGroupRows
	}
	if e.maxBytes <= 0 {
		e.maxBytes = DefaultRowGroupBytes
	}
	e.cols = make([]*pqColumn, len(cols))
	for i, c := range cols {
		e.cols[i] = &pqColumn{Column: c}
	}
	return e, nil
}

// parquetNode is the schema node of a column.
func parquetNode(c Column) (schema.Node, error) {
	opt := parquet.Repetitions.Optional
	switch c.Kind {
	case ColumnString, ColumnJSON:
		return schema.NewPrimitiveNodeLogical(c.Name, opt, schema.StringLogicalType{}, parquet.Types.ByteArray, -1, -1)
	case ColumnInt:
		return schema.NewPrimitiveNodeLogical(c.Name, opt, schema.NewIntLogicalType(64, true), parquet.Types.Int64, -1, -1)
	case ColumnStringList:
		el, err := schema.NewPrimitiveNodeLogical("element", parquet.Repetitions.Required, schema.StringLogicalType{}, parquet.Types.ByteArray, -1, -1)
		if err != nil {
			return nil, err
		}
		return schema.ListOfWithName(c.Name, el, opt, -1)
	}
	return nil, fmt.Errorf("unknown column kind %d", c.Kind)
}

// writerOnly hides the Close of the destination: the parquet writer closes its sink, and an
// encoder never closes w.
type writerOnly struct{ w io.Writer }

func (o writerOnly) Write(p []byte) (int, error) { return o.w.Write(p) }

// pqColumn holds one column's part of the current batch, as the column writers take it:
// the values that are not null, and the definition (and, for lists, repetition) level of
// every value.
type pqColumn struct {
	Column
	data     []byte // string values, back to back
	ends     []int  // end of each string value in data
	ints     []int64
	def, rep []int16
	vals     []parquet.ByteArray // scratch: the string values as slices of data
}

func (c *pqColumn) null() {
	c.def = append(c.def, 0)
	if c.Kind == ColumnStringList {
		c.rep = append(c.rep, 0)
	}
}

// endValue closes a string value appended to data.
func (c *pqColumn) endValue() {
	c.ends = append(c.ends, len(c.data))
	c.def = append(c.def, 1)
}

func (c *pqColumn) addInt(n int64) {
	c.ints = append(c.ints, n)
	c.def = append(c.def, 1)
}

// addElement appends the k-th element of a list, ended by endValue's bookkeeping.
func (c *pqColumn) addElement(k int) {
	c.ends = append(c.ends, len(c.data))
	c.def = append(c.def, 2)
	c.rep = append(c.rep, int16(min(k, 1)))
}

func (c *pqColumn) emptyList() {
	c.def = append(c.def, 1)
	c.rep = append(c.rep, 0)
}

func (c *pqColumn) size() int { return len(c.data) + 8*len(c.ints) }

func (c *pqColumn) reset() {
	c.data, c.ends, c.ints, c.def, c.rep = c.data[:0], c.ends[:0], c.ints[:0], c.def[:0], c.rep[:0]
	clear(c.vals)
	c.vals = c.vals[:0]
}

// kindError is a value that does not fit its column.
type kindError struct{ want string }

func (e kindError) Error() string { return "must be " + e.want }

var (
	errNotString     = kindError{"a string"}
	errNotInt        = kindError{"an integer"}
	errNotStringList = kindError{"a list of strings"}
)

type parquetEncoder struct {
	fw       *file.Writer
	cols     []*pqColumn
	rg       file.BufferedRowGroupWriter // the open row group; nil between row groups
	maxRows  int
	maxBytes int

	rgRows     int // rows of the open row group, the batch's included
	rgBytes    int // bytes of values of the open row group, without the batch's
	batchRows  int
	batchBytes int
	n          int
	err        error // the first failure; the encoder is unusable after it

	src bytes.Reader // the fast path's list decoder
	dec jsontext.Decoder
}

func (e *parquetEncoder) Encode(rec Record) error {
	if e.err != nil {
		return e.err
	}
	for _, c := range e.cols {
		if err := c.add(rec[c.Name]); err != nil {
			return e.fail(recordValueError(rec.ID(), c, err))
		}
	}
	return e.endRow()
}

// add appends a decoded record value.
func (c *pqColumn) add(v any) error {
	if v == nil {
		c.null()
		return nil
	}
	switch c.Kind {
	case ColumnString:
		s, ok := v.(string)
		if !ok {
			return errNotString
		}
		c.data = appendValidUTF8(c.data, s)
		c.endValue()
	case ColumnInt:
		num, ok := v.(json.Number)
		if !ok {
			return errNotInt
		}
		n, err := strconv.ParseInt(string(num), 10, 64)
		if err != nil {
			return errNotInt
		}
		c.addInt(n)
	case ColumnStringList:
		list, ok := stringList(v)
		if !ok {
			return errNotStringList
		}
		if len(list) == 0 {
			c.emptyList()
		}
		for k, s := range list {
			c.data = appendValidUTF8(c.data, s)
			c.addElement(k)
		}
	case ColumnJSON:
		var err error
		if c.data, err = AppendJSON(c.data, v); err != nil {
			return err
		}
		c.endValue()
	}
	return nil
}

func (e *parquetEncoder) encodeRaw(r *rawRecord) error {
	if e.err != nil {
		return e.err
	}
	for _, c := range e.cols {
		i := r.find(c.Name)
		if i < 0 {
			c.null()
			continue
		}
		if err := e.addRaw(c, r.members[i].val); err != nil {
			return e.fail(recordValueError(r.str("id"), c, err))
		}
	}
	return e.endRow()
}

// addRaw appends a value in the record encoding.
func (e *parquetEncoder) addRaw(c *pqColumn, val []byte) error {
	if string(val) == "null" {
		c.null()
		return nil
	}
	switch c.Kind {
	case ColumnString:
		if val[0] != '"' {
			return errNotString
		}
		c.data = appendUnquoted(c.data, val)
		c.endValue()
	case ColumnInt:
		n, err := strconv.ParseInt(string(val), 10, 64)
		if err != nil {
			return errNotInt
		}
		c.addInt(n)
	case ColumnStringList:
		if val[0] != '[' {
			return errNotStringList
		}
		e.src.Reset(val)
		e.dec.Reset(&e.src)
		if _, err := e.dec.ReadToken(); err != nil {
			return err
		}
		k := 0
		for ; e.dec.PeekKind() != ']'; k++ {
			v, err := e.dec.ReadValue()
			if err != nil {
				return err
			}
			if v.Kind() != '"' {
				return errNotStringList
			}
			c.data = appendUnquoted(c.data, v)
			c.addElement(k)
		}
		if k == 0 {
			c.emptyList()
		}
	case ColumnJSON:
		c.data = append(c.data, val...)
		c.endValue()
	}
	return nil
}

// appendValidUTF8 appends s with invalid UTF-8 replaced by U+FFFD as the JSON formats
// write it.
func appendValidUTF8(dst []byte, s string) []byte {
	if utf8.ValidString(s) {
		return append(dst, s...)
	}
	q, _ := jsontext.AppendQuote(nil, s)
	dst, _ = jsontext.AppendUnquote(dst, q)
	return dst
}

// appendUnquoted appends the content of the JSON string v, which is in the record encoding
// (valid UTF-8, minimal escaping).
func appendUnquoted(dst, v []byte) []byte {
	if bytes.IndexByte(v, '\\') < 0 {
		return append(dst, v[1:len(v)-1]...)
	}
	dst, _ = jsontext.AppendUnquote(dst, v)
	return dst
}

func recordValueError(id string, c *pqColumn, err error) error {
	var ke kindError
	if errors.As(err, &ke) {
		return fmt.Errorf("export: parquet: record '%s': %s %s", id, c.Name, ke)
	}
	return fmt.Errorf("export: parquet: record '%s': %s: %w", id, c.Name, err)
}

func (e *parquetEncoder) fail(err error) error {
	e.err = err
	return err
}

// endRow counts the row just added and writes out what is full: the batch to the row
// group's column writers, the row group to w.
func (e *parquetEncoder) endRow() error {
	e.n++
	e.rgRows++
	e.batchRows++
	e.batchBytes = 0
	for _, c := range e.cols {
		e.batchBytes += c.size()
	}
	switch {
	case e.rgRows >= e.maxRows || e.rgBytes+e.batchBytes >= e.maxBytes:
		return e.fail(e.endRowGroup())
	case e.batchRows >= parquetBatchRows || e.batchBytes >= parquetBatchBytes:
		return e.fail(e.writeBatch())
	}
	return nil
}

// writeBatch hands the batch to the open row group, opening one if needed.
func (e *parquetEncoder) writeBatch() error {
	if e.batchRows == 0 {
		return nil
	}
	if e.rg == nil {
		rg, err := e.fw.AppendBufferedRowGroupChecked()
		if err != nil {
			return fmt.Errorf("export: parquet: %w", err)
		}
		e.rg = rg
	}
	for i, c := range e.cols {
		cw, err := e.rg.Column(i)
		if err != nil {
			return fmt.Errorf("export: parquet: %w", err)
		}
		switch w := cw.(type) {
		case *file.ByteArrayColumnChunkWriter:
			start := 0
			for _, end := range c.ends {
				c.vals = append(c.vals, c.data[start:end:end])
				start = end
			}
			_, err = w.WriteBatch(c.vals, c.def, c.rep)
		case *file.Int64ColumnChunkWriter:
			_, err = w.WriteBatch(c.ints, c.def, c.rep)
		default:
			err = fmt.Errorf("unexpected column writer %T", cw)
		}
		if err != nil {
			return fmt.Errorf("export: parquet: column %s: %w", c.Name, err)
		}
		c.reset()
	}
	e.rgBytes += e.batchBytes
	e.batchRows, e.batchBytes = 0, 0
	return nil
}

// endRowGroup writes the batch and the open row group out.
func (e *parquetEncoder) endRowGroup() error {
	if err := e.writeBatch(); err != nil {
		return err
	}
	if e.rg == nil {
		return nil
	}
	err := e.rg.Close()
	e.rg, e.rgRows, e.rgBytes = nil, 0, 0
	if err != nil {
		return fmt.Errorf("export: parquet: %w", err)
	}
	return nil
}

// Close writes the last row group and the footer.
func (e *parquetEncoder) Close() error {
	if e.err != nil {
		return e.err
	}
	if err := e.endRowGroup(); err != nil {
		return e.fail(err)
	}
	if err := e.fw.Close(); err != nil {
		return e.fail(fmt.Errorf("export: parquet: %w", err))
	}
	e.err = errors.New("export: parquet: the encoder is closed")
	return nil
}

func (e *parquetEncoder) Count() int { return e.n }

// Features lists the file's columns as a dataset card describes them: JSON columns are
// strings, the tag lists sequences of strings.
func (Parquet) Features(h Header) []Feature {
	cols := append(append([]Column(nil), ParquetColumns...), h.ExtraTypedColumns...)
	out := make([]Feature, len(cols))
	for i, c := range cols {
		out[i] = Feature{Name: c.Name, Dtype: "string"}
		switch c.Kind {
		case ColumnInt:
			out[i].Dtype = "int64"
		case ColumnStringList:
			out[i].Sequence = true
		}
	}
	return out
}
