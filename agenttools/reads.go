package agenttools

import (
	"context"
	"log/slog"
	"strings"
	"time"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/tagging"
)

// ReadsDeps are what the read tools need.
type ReadsDeps struct {
	// Store holds the items.
	Store gtc.Store
	// Curator reads item histories (package history); nil reads them over Store.
	Curator *gtc.Curator
	// Registry tells computed tags from manual ones (its static keys and dynamic prefixes);
	// nil means the built-in plugins.
	Registry *tagging.Registry
	// Known returns the tag vocabulary (in production (*Vocabulary).KnownTags); nil is an
	// empty vocabulary.
	Known func(ctx context.Context) ([]string, error)
	// Releases compares releases for compare_releases (in production the exporter); nil
	// answers that releases are not available.
	Releases ReleaseDiffer
	// Timeout bounds each call (GTC_AGENT_TOOL_TIMEOUT); past it the answer is TIMEOUT.
	// 0 leaves the caller's context alone.
	Timeout time.Duration
	// Logger receives the store faults behind INTERNAL answers; nil discards them.
	Logger *slog.Logger
}

// Reads serves the read-only agent tools: tag_stats, dataset_stats, search_items, get_item,
// get_item_history and compare_releases. Each method takes the tool input already validated
// against its schema, trimmed, with defaults applied and typed (strings, ints, bools,
// []string), and always answers with an envelope, errors included. It is safe for concurrent
// use.
type Reads struct {
	store   gtc.Store
	cur     *gtc.Curator
	reg     *tagging.Registry
	known   func(ctx context.Context) ([]string, error)
	rel     ReleaseDiffer
	timeout time.Duration
	log     *slog.Logger
}

// NewReads builds the read tools over d.
func NewReads(d ReadsDeps) *Reads {
	r := &Reads{store: d.Store, cur: d.Curator, reg: d.Registry, known: d.Known, rel: d.Releases, timeout: d.Timeout, log: d.Logger}
	if r.cur == nil {
		r.cur = gtc.NewCurator(gtc.CuratorDeps{Store: d.Store})
	}
	if r.reg == nil {
		if reg, err := tagging.NewDefaultRegistry(); err == nil {
			r.reg = reg
		}
	}
	if r.known == nil {
		r.known = func(context.Context) ([]string, error) { return nil, nil }
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	return r
}

// begin applies the tool timeout to ctx.
func (r *Reads) begin(ctx context.Context) (context.Context, context.CancelFunc) {
	if r.timeout > 0 {
		return context.WithTimeout(ctx, r.timeout)
	}
	return context.WithCancel(ctx)
}

// failure answers a read that failed: TIMEOUT past the deadline, INTERNAL otherwise.
func (r *Reads) failure(ctx context.Context, tool, what string, err error) ToolResult {
	return readFault(ctx, r.log.With("tool", tool), r.timeout, what, err)
}

// knownDataset checks the dataset argument against the store.
func (r *Reads) knownDataset(ctx context.Context, tool, name string) *ToolResult {
	if name == "" {
		return nil
	}
	names, err := r.store.Items().Datasets(ctx)
	if err != nil {
		res := r.failure(ctx, tool, "list the datasets", err)
		return &res
	}
	return unknownDataset(name, names)
}

// rdPlural is "1 item" or "2 items" (numbers with thousands separators).
func rdPlural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return Count(n) + " " + many
}

// rdOneLine collapses whitespace runs to single spaces and cuts s at limit characters with "…".
func rdOneLine(s string, limit int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > limit {
		return string(r[:limit]) + "…"
	}
	return s
}

// rdTagList shows tags for a text: "a, b", or "none".
func rdTagList(tags []string) string {
	if len(tags) == 0 {
		return "none"
	}
	return strings.Join(tags, ", ")
}

// rdOrEmpty returns ss, or an empty non-nil slice, so lists encode as [].
func rdOrEmpty[T any](ss []T) []T {
	if ss == nil {
		return []T{}
	}
	return ss
}
