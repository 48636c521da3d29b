package tagging

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	gtc "github.com/gtc-dev/gtc"
)

// Registry holds the computed-tag plugins in registration order.
// It is immutable after construction and therefore safe for concurrent use.
type Registry struct {
	plugins  []Plugin
	keys     []string
	static   map[string]struct{}
	sorted   []string // static keys, sorted
	prefixes []string // dynamic prefixes ("dataset:"), sorted
	dynamic  []bool   // per plugin: is its key dynamic
	prefix   []string // per plugin: the prefix a dynamic plugin's tags start with, else ""
	logger   *slog.Logger
}

// NewRegistry registers plugins in argument order, which becomes the order of computedTags.
// It returns the first construction failure: a duplicate key, a malformed key, or a static
// key that falls under a dynamic prefix.
func NewRegistry(plugins ...Plugin) (*Registry, error) {
	r := &Registry{
		static: make(map[string]struct{}),
		logger: discardLogger(),
	}
	seen := make(map[string]struct{}, len(plugins))
	for i, p := range plugins {
		if p == nil {
			return nil, fmt.Errorf("computed tag plugin %d is nil", i)
		}
		key := p.Key()
		if _, dup := seen[key]; dup {
			return nil, specError("Duplicate tag key '%s': a plugin with this key is already registered", key)
		}
		prefix, dynamic, ok := parseKey(key)
		if !ok {
			return nil, fmt.Errorf("invalid computed tag key '%s'", key)
		}
		if dynamic {
			// Checked against static keys registered earlier (r.sorted is still in
			// registration order here, so the first offender is named); later static keys are
			// checked below, so the conflict is found in either registration order.
			for _, s := range r.sorted {
				if strings.HasPrefix(s, prefix) {
					return nil, fmt.Errorf("computed tag key '%s' falls under dynamic prefix '%s'", s, prefix)
				}
			}
			r.prefixes = append(r.prefixes, prefix)
		} else {
			for _, dp := range r.prefixes {
				if strings.HasPrefix(key, dp) {
					return nil, fmt.Errorf("computed tag key '%s' falls under dynamic prefix '%s'", key, dp)
				}
			}
			r.static[key] = struct{}{}
			r.sorted = append(r.sorted, key)
		}
		seen[key] = struct{}{}
		r.plugins = append(r.plugins, p)
		r.keys = append(r.keys, key)
		r.dynamic = append(r.dynamic, dynamic)
		r.prefix = append(r.prefix, prefix)
	}
	slices.Sort(r.sorted)
	slices.Sort(r.prefixes)
	return r, nil
}

// NewDefaultRegistry returns a registry of the 13 built-in plugins in the order of
// DefaultPlugins.
func NewDefaultRegistry() (*Registry, error) { return NewRegistry(DefaultPlugins()...) }

// WithLogger returns a copy of r that reports dropped plugin results to logger. The copy
// shares the immutable plugin tables with r.
func (r *Registry) WithLogger(logger *slog.Logger) *Registry {
	c := *r
	if logger == nil {
		logger = discardLogger()
	}
	c.logger = logger
	return &c
}

// parseKey checks a registration key. For a dynamic key it returns the prefix it reserves
// ("<group>:"); for a static key the key must already be a normalized tag.
func parseKey(key string) (prefix string, dynamic, ok bool) {
	if group, found := strings.CutSuffix(key, DynamicSuffix); found {
		if group == "" || strings.Contains(group, ":") || NormalizeGroupName(group) != group {
			return "", true, false
		}
		return group + ":", true, true
	}
	n, err := Normalize(key)
	return "", false, err == nil && n == key
}

// Keys returns every registration key in registration order, dynamic placeholders included.
func (r *Registry) Keys() []string { return slices.Clone(r.keys) }

// StaticKeys returns the static keys, sorted; dynamic placeholders are never listed.
func (r *Registry) StaticKeys() []string { return slices.Clone(r.sorted) }

// DynamicPrefixes returns the prefixes reserved by dynamic plugins, sorted (e.g. "dataset:").
func (r *Registry) DynamicPrefixes() []string { return slices.Clone(r.prefixes) }

// Plugins returns the plugins in registration order.
func (r *Registry) Plugins() []Plugin { return slices.Clone(r.plugins) }

// Compute returns the computed tags of it in plugin order (not sorted, never nil). Results
// that break the plugin contract and repeats of an earlier tag are dropped and logged, so a
// faulty plugin cannot put a foreign or duplicate tag on an item.
func (r *Registry) Compute(it *gtc.Item) []string {
	out := make([]string, 0, len(r.plugins))
	if it == nil {
		return out
	}
	in := NewInput(it)
	for i, p := range r.plugins {
		tag, ok := r.run(p, in)
		if !ok {
			continue
		}
		key := r.keys[i]
		if !r.fulfils(i, tag) {
			r.logger.LogAttrs(context.Background(), slog.LevelError, "computed tag plugin broke its contract; result dropped",
				slog.String("plugin", key), slog.String("tag", tag), slog.String("item_id", it.ID))
			continue
		}
		// The construction rules already keep contract-abiding plugins from colliding; this
		// guard keeps computedTags a set even if those rules are ever loosened.
		if slices.Contains(out, tag) {
			r.logger.LogAttrs(context.Background(), slog.LevelError, "computed tag emitted twice; repeat dropped",
				slog.String("plugin", key), slog.String("tag", tag), slog.String("item_id", it.ID))
			continue
		}
		out = append(out, tag)
	}
	return out
}

// run calls one plugin; a panic is contained and logged so one bad plugin cannot take a whole
// write path down with it.
func (r *Registry) run(p Plugin, in *Input) (tag string, ok bool) {
	defer func() {
		if v := recover(); v != nil {
			r.logger.LogAttrs(context.Background(), slog.LevelError, "computed tag plugin panicked; result dropped",
				slog.String("plugin", p.Key()), slog.String("item_id", in.Item.ID), slog.Any("panic", v))
			tag, ok = "", false
		}
	}()
	return p.Compute(in)
}

// fulfils reports whether tag is a result plugin i may emit: its static key, or a tag under
// its dynamic prefix.
func (r *Registry) fulfils(i int, tag string) bool {
	if !r.dynamic[i] {
		return tag == r.keys[i]
	}
	prefix := r.prefix[i]
	return len(tag) > len(prefix) && strings.HasPrefix(tag, prefix)
}

// IsComputed reports whether an already-normalized tag is reserved for computed tags: it is
// a static key, it starts with a dynamic prefix, or it is in current (the item's freshly
// computed tags). The comparison is exact and case-sensitive.
func (r *Registry) IsComputed(tag string, current []string) bool {
	if _, ok := r.static[tag]; ok {
		return true
	}
	for _, p := range r.prefixes {
		if strings.HasPrefix(tag, p) {
			return true
		}
	}
	return slices.Contains(current, tag)
}

// SplitManual separates normalized manual tags into those a curator may keep and those that
// are computed (IsComputed with current), both in input order and never nil.
func (r *Registry) SplitManual(manual, current []string) (kept, stripped []string) {
	kept = make([]string, 0, len(manual))
	stripped = []string{}
	for _, t := range manual {
		if r.IsComputed(t, current) {
			stripped = append(stripped, t)
		} else {
			kept = append(kept, t)
		}
	}
	return kept, stripped
}

// splitInPlace is SplitManual for a slice the caller owns: kept reuses tags' backing array,
// and the stripped tags are appended to stripped (allocated only when one is found).
func (r *Registry) splitInPlace(tags, current, stripped []string) (kept, more []string) {
	kept = tags[:0]
	for _, t := range tags {
		if r.IsComputed(t, current) {
			stripped = append(stripped, t)
		} else {
			kept = append(kept, t)
		}
	}
	return kept, stripped
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
