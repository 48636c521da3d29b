package export

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// maxEntriesInMemory bounds the manifest entries an artifact export keeps in memory; beyond
// it, sorted runs go to a temporary file and are merged while the manifest is written.
var maxEntriesInMemory = 20000

// manifestFiles collects the file entries of a snapshot, produced in record order but
// listed by name, in bounded memory.
type manifestFiles struct {
	dir  string
	mem  []fileLine
	runs *os.File
	ends []int64 // end offset of each run in runs
	err  error

	items itemLog // the exported items and their revisions, in export order
}

type fileLine struct {
	name string
	line []byte // compact JSON of the entry
}

func newManifestFiles(dir string) *manifestFiles {
	return &manifestFiles{dir: dir, items: itemLog{dir: dir}}
}

func (m *manifestFiles) addItem(r itemRef) error { return m.items.add(r.ItemEntry) }

func (m *manifestFiles) add(e FileEntry) {
	line, err := json.Marshal(e)
	if err != nil {
		m.err = err
		return
	}
	m.mem = append(m.mem, fileLine{e.Name, line})
	if len(m.mem) >= maxEntriesInMemory {
		m.spill()
	}
}

func sortLines(ls []fileLine) {
	slices.SortFunc(ls, func(a, b fileLine) int { return strings.Compare(a.name, b.name) })
}

// spill writes the entries in memory as one sorted run.
func (m *manifestFiles) spill() {
	if m.err != nil || len(m.mem) == 0 {
		return
	}
	if m.runs == nil {
		if err := os.MkdirAll(m.dir, 0o700); err != nil {
			m.err = err
			return
		}
		f, err := os.CreateTemp(m.dir, tempPrefix+"manifest-*")
		if err != nil {
			m.err = fmt.Errorf("export: manifest runs: %w", err)
			return
		}
		m.runs = f
	}
	sortLines(m.mem)
	bw := bufio.NewWriterSize(m.runs, 64<<10)
	for _, l := range m.mem {
		bw.Write(l.line)
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		m.err = err
		return
	}
	end, err := m.runs.Seek(0, io.SeekCurrent)
	if err != nil {
		m.err = err
		return
	}
	m.ends = append(m.ends, end)
	m.mem = m.mem[:0]
}

// each calls fn with every entry's compact JSON, in name order.
func (m *manifestFiles) each(fn func(line []byte) error) error {
	if m.err != nil {
		return m.err
	}
	if m.runs == nil {
		sortLines(m.mem)
		for _, l := range m.mem {
			if err := fn(l.line); err != nil {
				return err
			}
		}
		return nil
	}
	m.spill()
	if m.err != nil {
		return m.err
	}
	h := &runHeap{}
	start := int64(0)
	for _, end := range m.ends {
		r := &run{sc: bufio.NewScanner(io.NewSectionReader(m.runs, start, end-start))}
		r.sc.Buffer(make([]byte, 64<<10), 1<<20)
		if r.next() {
			h.items = append(h.items, r)
		} else if err := r.sc.Err(); err != nil {
			return err
		}
		start = end
	}
	heap.Init(h)
	for h.Len() > 0 {
		r := h.items[0]
		if err := fn(r.line); err != nil {
			return err
		}
		if r.next() {
			heap.Fix(h, 0)
		} else {
			if err := r.sc.Err(); err != nil {
				return err
			}
			heap.Pop(h)
		}
	}
	return nil
}

func (m *manifestFiles) close() {
	m.items.close()
	m.mem = nil
	if m.runs != nil {
		name := m.runs.Name()
		m.runs.Close()
		os.Remove(name)
		m.runs = nil
	}
}

// ItemEntry names one exported item at the revision it was exported at.
type ItemEntry struct {
	DatasetName string `json:"datasetName"`
	ID          string `json:"id"`
	Revision    int64  `json:"revision"`
}

// itemLog keeps the manifest's item entries, which arrive already in (datasetName, id)
// order: up to itemLogMemory bytes in memory, the rest appended to a temporary file.
type itemLog struct {
	dir  string
	buf  []byte // compact JSON entries, one a line
	file *os.File
	err  error
}

var itemLogMemory = 1 << 20

func (l *itemLog) add(e any) error {
	if l.err != nil {
		return l.err
	}
	line, err := json.Marshal(e)
	if err != nil {
		l.err = err
		return err
	}
	l.buf = append(append(l.buf, line...), '\n')
	if len(l.buf) >= itemLogMemory {
		l.flush()
	}
	return l.err
}

func (l *itemLog) flush() {
	if l.err != nil || len(l.buf) == 0 {
		return
	}
	if l.file == nil {
		if err := os.MkdirAll(l.dir, 0o700); err != nil {
			l.err = err
			return
		}
		f, err := os.CreateTemp(l.dir, tempPrefix+"items-*")
		if err != nil {
			l.err = fmt.Errorf("export: manifest items: %w", err)
			return
		}
		l.file = f
	}
	if _, err := l.file.Write(l.buf); err != nil {
		l.err = err
		return
	}
	l.buf = l.buf[:0]
}

// each calls fn with every entry's compact JSON, in the order they were added.
func (l *itemLog) each(fn func(line []byte) error) error {
	if l.file != nil {
		l.flush()
	}
	if l.err != nil {
		return l.err
	}
	var r io.Reader = bytes.NewReader(l.buf)
	if l.file != nil {
		if _, err := l.file.Seek(0, io.SeekStart); err != nil {
			return err
		}
		r = l.file
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if err := fn(sc.Bytes()); err != nil {
			return err
		}
	}
	return sc.Err()
}

func (l *itemLog) close() {
	l.buf = nil
	if l.file != nil {
		name := l.file.Name()
		l.file.Close()
		os.Remove(name)
		l.file = nil
	}
}

// run is one sorted run being merged.
type run struct {
	sc   *bufio.Scanner
	line []byte
	name string
}

func (r *run) next() bool {
	if !r.sc.Scan() {
		return false
	}
	r.line = append(r.line[:0], r.sc.Bytes()...)
	var e struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(r.line, &e)
	r.name = e.Name
	return true
}

type runHeap struct{ items []*run }

func (h *runHeap) Len() int           { return len(h.items) }
func (h *runHeap) Less(i, j int) bool { return h.items[i].name < h.items[j].name }
func (h *runHeap) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *runHeap) Push(x any)         { h.items = append(h.items, x.(*run)) }
func (h *runHeap) Pop() any {
	old := h.items
	x := old[len(old)-1]
	h.items = old[:len(old)-1]
	return x
}

// appendIndented appends compact JSON pretty-printed (two-space indent) at a nesting whose
// lines start with prefix. Strings are copied as they are.
func appendIndented(dst, compact []byte, prefix string) ([]byte, error) {
	return jsontext.AppendFormat(dst, compact, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true),
		jsontext.PreserveRawStrings(true), jsontext.WithIndent("  "), jsontext.WithIndentPrefix(prefix))
}
