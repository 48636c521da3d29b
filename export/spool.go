package export

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/gtc-dev/gtc"
)

// spoolMemory is how much of an attachment is held in memory before the rest goes to a
// temporary file, so memory stays flat however large the export is.
const spoolMemory = 8 << 20

// Spool holds an attachment body until it is complete: up to 8 MiB in memory, the rest in
// a temporary file. Close removes the file.
type Spool struct {
	dir  string
	mem  bytes.Buffer
	file *os.File
	size int64
}

func newSpool(dir string) *Spool { return &Spool{dir: dir} }

// Write appends p to the spool.
func (s *Spool) Write(p []byte) (int, error) {
	if s.file == nil && s.mem.Len()+len(p) <= spoolMemory {
		s.mem.Write(p)
		s.size += int64(len(p))
		return len(p), nil
	}
	if s.file == nil {
		if err := os.MkdirAll(s.dir, 0o700); err != nil {
			return 0, fmt.Errorf("export: spool directory: %w", err)
		}
		f, err := os.CreateTemp(s.dir, tempPrefix+"spool-*")
		if err != nil {
			return 0, spoolError("export: spool file", err)
		}
		s.file = f
	}
	n, err := s.file.Write(p)
	s.size += int64(n)
	if err != nil {
		return n, spoolError("export: spool write", err)
	}
	return n, nil
}

// spoolError marks a full disk under the spool as gtc.ErrStorageFull, which the API
// answers with 507 instead of an internal error.
func spoolError(what string, err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("%s: %w: %w", what, gtc.ErrStorageFull, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Size is the number of bytes spooled.
func (s *Spool) Size() int64 { return s.size }

// WriteTo copies the whole body to w.
func (s *Spool) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(s.mem.Bytes())
	total := int64(n)
	if err != nil || s.file == nil {
		return total, err
	}
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return total, err
	}
	buf := make([]byte, 32<<10)
	m, err := io.CopyBuffer(onlyWriter{w}, s.file, buf)
	return total + m, err
}

// Close releases the memory and removes the temporary file.
func (s *Spool) Close() error {
	s.mem = bytes.Buffer{}
	if s.file == nil {
		return nil
	}
	name := s.file.Name()
	err := s.file.Close()
	s.file = nil
	return errors.Join(err, os.Remove(name))
}

// onlyWriter hides a writer's ReadFrom so io.CopyBuffer uses the given buffer.
type onlyWriter struct{ w io.Writer }

func (o onlyWriter) Write(p []byte) (int, error) { return o.w.Write(p) }

// gate holds what is written until it is opened, then passes everything through: a stream
// sends nothing (not even its headers) before its first page has been read and processed.
type gate struct {
	w    io.Writer
	held bytes.Buffer
	open bool
}

func (g *gate) Write(p []byte) (int, error) {
	if !g.open {
		return g.held.Write(p)
	}
	return g.w.Write(p)
}

func (g *gate) openGate() error {
	g.open = true
	if g.held.Len() == 0 {
		return nil
	}
	_, err := g.w.Write(g.held.Bytes())
	g.held = bytes.Buffer{}
	return err
}
