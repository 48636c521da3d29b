package export

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Processor transforms export records one at a time.
// Processors are deterministic: the output depends only on the input records and on
// configuration fixed at construction. They do no I/O and no per-record logging.
type Processor interface {
	// Name is lower-case, stable and unique: ^[a-z][a-z0-9_]{0,63}$.
	Name() string
	// Process handles one record. It may call emit zero, one or several times, in order.
	// It owns rec and may change it in place; a map passed to emit must not be passed
	// again (copy it to emit several records derived from one input).
	Process(ctx context.Context, rec Record, emit func(Record) error) error
}

// Finisher is implemented by a Processor that needs to see the end of the stream. Finish
// is called once after the last record. Such a processor must document the memory it keeps
// between records; none of the built-ins needs this.
type Finisher interface {
	Finish(ctx context.Context, emit func(Record) error) error
}

// RecordError reports a record a processor cannot handle. Before a response has started
// it is a 400 EXPORT_RECORD_INVALID naming the processor and the record.
type RecordError struct {
	Processor string
	RecordID  string
	Message   string
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("%s: record '%s': %s", e.Processor, e.RecordID, e.Message)
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// ProcessorRegistry maps names to processors. It is filled once in the composition root and
// only read afterwards, so lookups need no lock.
type ProcessorRegistry struct {
	byName map[string]Processor
}

// NewProcessorRegistry returns an empty registry.
func NewProcessorRegistry() *ProcessorRegistry {
	return &ProcessorRegistry{byName: map[string]Processor{}}
}

// Register adds p. A taken or malformed name is a programming error the caller reports.
func (r *ProcessorRegistry) Register(p Processor) error {
	n := p.Name()
	if !nameRE.MatchString(n) {
		return fmt.Errorf("invalid export processor name %q", n)
	}
	if _, ok := r.byName[n]; ok {
		return fmt.Errorf("duplicate export processor %q", n)
	}
	r.byName[n] = p
	return nil
}

// Lookup returns the processor called name.
func (r *ProcessorRegistry) Lookup(name string) (Processor, bool) {
	p, ok := r.byName[name]
	return p, ok
}

// Names returns the registered names, sorted.
func (r *ProcessorRegistry) Names() []string { return sortedKeys(r.byName) }

// NameError is one bad entry of a processor list: unknown, or listed more than once.
type NameError struct {
	Index     int
	Name      string
	Duplicate bool
	Known     []string
}

func (e *NameError) Error() string {
	if e.Duplicate {
		return fmt.Sprintf("Export processor '%s' is listed more than once", e.Name)
	}
	return fmt.Sprintf("Unknown export processor '%s' (known: %s)", e.Name, strings.Join(e.Known, ", "))
}

// NameErrors is every bad entry of a processor list, in list order.
type NameErrors []*NameError

func (es NameErrors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

// Resolve turns names into the chain, reporting every unknown and every repeated name.
func (r *ProcessorRegistry) Resolve(names []string) ([]Processor, error) {
	var errs NameErrors
	chain := make([]Processor, 0, len(names))
	seen := map[string]bool{}
	for i, n := range names {
		p, ok := r.byName[n]
		switch {
		case !ok:
			errs = append(errs, &NameError{Index: i, Name: n, Known: r.Names()})
		case seen[n]:
			errs = append(errs, &NameError{Index: i, Name: n, Duplicate: true})
		default:
			chain = append(chain, p)
		}
		seen[n] = true
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return chain, nil
}

// ParseProcessorOrder parses GTC_EXPORT_PROCESSOR_ORDER: comma-separated names, ASCII
// whitespace trimmed, empty pieces dropped, names kept exactly as written.
func ParseProcessorOrder(s string) ([]string, error) {
	var out []string
	for piece := range strings.SplitSeq(s, ",") {
		if p := strings.Trim(piece, " \t\r\n\v\f"); p != "" {
			out = append(out, p)
		}
	}
	return out, nil
}

// CheckProcessorOrder validates a parsed default chain against the registry: an unknown or
// repeated name is a startup error.
func CheckProcessorOrder(r *ProcessorRegistry, names []string) error {
	seen := map[string]bool{}
	for _, n := range names {
		if _, ok := r.Lookup(n); !ok {
			return fmt.Errorf("GTC_EXPORT_PROCESSOR_ORDER: unknown export processor %q (registered: %s)", n, strings.Join(r.Names(), ", "))
		}
		if seen[n] {
			return fmt.Errorf("GTC_EXPORT_PROCESSOR_ORDER: export processor %q is listed more than once", n)
		}
		seen[n] = true
	}
	return nil
}

// chainRunner pushes records through a chain, depth-first, so a record reaches the sink
// before the next input record is read.
type chainRunner struct {
	ctx   context.Context
	chain []Processor
	emits []func(Record) error // emits[i] feeds processor i; emits[len(chain)] is the sink
}

func newChainRunner(ctx context.Context, chain []Processor, sink func(Record) error) *chainRunner {
	c := &chainRunner{ctx: ctx, chain: chain, emits: make([]func(Record) error, len(chain)+1)}
	c.emits[len(chain)] = sink
	for i := len(chain) - 1; i >= 0; i-- {
		p, next := chain[i], c.emits[i+1]
		c.emits[i] = func(r Record) error { return p.Process(ctx, r, next) }
	}
	return c
}

// push feeds one record into the chain.
func (c *chainRunner) push(r Record) error { return c.emits[0](r) }

// finish calls Finish on every Finisher in order; what a finisher emits runs through the
// processors after it.
func (c *chainRunner) finish() error {
	for i, p := range c.chain {
		if f, ok := p.(Finisher); ok {
			if err := f.Finish(c.ctx, c.emits[i+1]); err != nil {
				return err
			}
		}
	}
	return nil
}

// ApplyAll runs a chain over a slice: the list-in/list-out view, for tests.
func ApplyAll(ctx context.Context, chain []Processor, in []Record) ([]Record, error) {
	var out []Record
	c := newChainRunner(ctx, chain, func(r Record) error { out = append(out, r); return nil })
	for _, r := range in {
		if err := c.push(r); err != nil {
			return nil, err
		}
	}
	if err := c.finish(); err != nil {
		return nil, err
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// fieldProcessor is implemented by processors that emit exactly one record per input and
// only touch a few top-level keys; a chain made of them runs on the fast path
// (canonical.go).
type fieldProcessor interface {
	apply(f fields, id string) error
}

// fastChain reports whether every processor of the chain can run on raw records.
func fastChain(chain []Processor) bool {
	for _, p := range chain {
		if _, ok := p.(fieldProcessor); !ok {
			return false
		}
	}
	return true
}
