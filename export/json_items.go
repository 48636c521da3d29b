package export

import "io"

// JSONItems is the json_items format: a JSON array of the records.
type JSONItems struct{}

// Name is "json_items".
func (JSONItems) Name() string { return "json_items" }

// MediaType is application/json.
func (JSONItems) MediaType() string { return "application/json" }

// Extension is "json".
func (JSONItems) Extension() string { return "json" }

// FileStem is "ground-truth-items".
func (JSONItems) FileStem() string { return "ground-truth-items" }

// NewEncoder writes the opening bracket.
func (JSONItems) NewEncoder(w io.Writer, _ Header) (Encoder, error) {
	if _, err := io.WriteString(w, "["); err != nil {
		return nil, err
	}
	return &lineEncoder{w: w, sep: ",", end: "]"}, nil
}

// JSONL is the jsonl format: one compact record per line, every line ending in "\n".
type JSONL struct{}

// Name is "jsonl".
func (JSONL) Name() string { return "jsonl" }

// MediaType is application/x-ndjson.
func (JSONL) MediaType() string { return "application/x-ndjson" }

// Extension is "jsonl".
func (JSONL) Extension() string { return "jsonl" }

// FileStem is "ground-truth-items".
func (JSONL) FileStem() string { return "ground-truth-items" }

// NewEncoder writes nothing until the first record: an empty export is zero bytes.
func (JSONL) NewEncoder(w io.Writer, _ Header) (Encoder, error) {
	return &lineEncoder{w: w, term: "\n"}, nil
}

// lineEncoder writes records joined by sep, each followed by term, then end.
type lineEncoder struct {
	w              io.Writer
	sep, term, end string
	n              int
	buf            []byte
}

func (e *lineEncoder) Encode(rec Record) error {
	b := e.buf[:0]
	if e.n > 0 {
		b = append(b, e.sep...)
	}
	b, err := AppendJSON(b, rec)
	b = append(b, e.term...)
	e.buf = b
	if err != nil {
		return err
	}
	if _, err := e.w.Write(b); err != nil {
		return err
	}
	e.n++
	return nil
}

// encodeCompact writes a record already written as compact JSON (AppendJSON's or a raw
// record's bytes).
func (e *lineEncoder) encodeCompact(line []byte) error {
	b := e.buf[:0]
	if e.n > 0 {
		b = append(b, e.sep...)
	}
	b = append(append(b, line...), e.term...)
	e.buf = b
	if _, err := e.w.Write(b); err != nil {
		return err
	}
	e.n++
	return nil
}

func (e *lineEncoder) encodeRaw(r *rawRecord) error {
	b := e.buf[:0]
	if e.n > 0 {
		b = append(b, e.sep...)
	}
	b = r.appendTo(b)
	b = append(b, e.term...)
	e.buf = b
	if _, err := e.w.Write(b); err != nil {
		return err
	}
	e.n++
	return nil
}

func (e *lineEncoder) Close() error {
	if e.end == "" {
		return nil
	}
	_, err := io.WriteString(e.w, e.end)
	return err
}

func (e *lineEncoder) Count() int { return e.n }
