package importer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// ReadElements reads one input as a token stream and calls emit with each element's JSON
// text, in order, so that memory holds one element (and the batch the caller keeps).
func ReadElements(r io.Reader, name, format string, emit func([]byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	if format == "auto" {
		switch strings.ToLower(filepath.Ext(name)) {
		case ".jsonl", ".ndjson":
			format = "jsonl"
		}
	}
	if format == "jsonl" {
		return readJSONLines(br, emit)
	}
	first, err := FirstByte(br)
	if err == io.EOF {
		return nil // an empty input, as an empty JSONL export is
	}
	if err != nil {
		return err
	}
	switch first {
	case '[':
		return readArray(br, emit)
	case '{':
		return readObject(br, emit)
	default:
		return BadInputError{fmt.Errorf("expected a JSON array, a JSON object or JSON lines; the input starts with %q", first)}
	}
}

// FirstByte skips white space and a byte-order mark and returns the next byte, unread.
func FirstByte(br *bufio.Reader) (byte, error) {
	if bom, err := br.Peek(3); err == nil && string(bom) == "\xef\xbb\xbf" {
		_, _ = br.Discard(3)
	}
	for {
		b, err := br.Peek(1)
		if err != nil {
			return 0, err
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			_, _ = br.Discard(1)
		default:
			return b[0], nil
		}
	}
}

// readJSONLines reads one element per non-blank line. A line that is not JSON fails alone,
// so one broken line does not lose the rest of the file.
func readJSONLines(br *bufio.Reader, emit func([]byte) error) error {
	for {
		line, err := br.ReadBytes('\n')
		if t := bytes.TrimSpace(line); len(t) > 0 {
			if e := emit(t); e != nil {
				return e
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func readArray(br *bufio.Reader, emit func([]byte) error) error {
	dec := json.NewDecoder(br)
	if _, err := dec.Token(); err != nil { // the '[' FirstByte saw
		return syntaxError(dec, err)
	}
	if err := readElementsOf(dec, emit); err != nil {
		return err
	}
	return expectEnd(dec)
}

// ReadElementsOf emits the elements of the array whose '[' dec has just read, and reads
// its ']'.
func readElementsOf(dec *json.Decoder, emit func([]byte) error) error {
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return syntaxError(dec, err)
		}
		if err := emit(raw); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return syntaxError(dec, err)
	}
	return nil
}

// readObject reads a json_snapshot_payload object: its items array, wherever it sits among
// the keys; the other keys are skipped. An object without an items key is a record, not a
// payload: the input is then JSON lines (a JSONL export on stdin), or a snapshot's
// per-record file, and is read as such from its first byte.
func readObject(br *bufio.Reader, emit func([]byte) error) error {
	rec := &recorder{r: br, on: true}
	dec := json.NewDecoder(rec)
	if _, err := dec.Token(); err != nil {
		return syntaxError(dec, err)
	}
	payload := false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return syntaxError(dec, err)
		}
		if t != "items" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return syntaxError(dec, err)
			}
			continue
		}
		payload = true
		rec.stop()
		t, err = dec.Token()
		if err != nil {
			return syntaxError(dec, err)
		}
		switch t {
		case json.Delim('['):
			if err := readElementsOf(dec, emit); err != nil {
				return err
			}
		case nil:
		default:
			return errors.New("the payload's items key is not an array")
		}
	}
	if _, err := dec.Token(); err != nil {
		return syntaxError(dec, err)
	}
	if payload {
		return expectEnd(dec)
	}
	end := dec.InputOffset()
	seen := rec.buf.Bytes()
	if err := emit(seen[:end]); err != nil {
		return err
	}
	return readJSONLines(bufio.NewReader(io.MultiReader(bytes.NewReader(seen[end:]), br)), emit)
}

// recorder keeps what the decoder reads until stop, so that an object that turns out to be
// a record can be read again as the first line of JSON lines.
type recorder struct {
	r   io.Reader
	buf bytes.Buffer
	on  bool
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if r.on {
		r.buf.Write(p[:n])
	}
	return n, err
}

func (r *recorder) stop() { r.on, r.buf = false, bytes.Buffer{} }

// expectEnd fails when anything but white space follows the document.
func expectEnd(dec *json.Decoder) error {
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("unexpected data after the JSON document at byte %d", dec.InputOffset())
	}
	return nil
}

func syntaxError(dec *json.Decoder, err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return BadInputError{fmt.Errorf("invalid JSON near byte %d: %w", dec.InputOffset(), err)}
}

// BadInputError is input that is not the JSON it should be, as opposed to a failed read:
// the user's file is wrong, not the system.
type BadInputError struct{ error }

func (e BadInputError) Unwrap() error { return e.error }
