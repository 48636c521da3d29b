package tagging

import (
	"context"
	"errors"
	"log/slog"
	"slices"

	gtc "github.com/gtc-dev/gtc"
)

// Pipeline prepares the tags of every item the service writes:
// normalize, strip computed keys, recompute computed tags, and optionally validate. It is
// immutable and safe for concurrent use.
type Pipeline struct {
	reg        *Registry
	validators []TagValidator
	logger     *slog.Logger
}

var _ gtc.Tagger = (*Pipeline)(nil)

// NewPipeline builds the pipeline. validators run in the given order; a nil logger discards
// the warnings about stripped tags.
func NewPipeline(reg *Registry, validators []TagValidator, logger *slog.Logger) *Pipeline {
	if logger == nil {
		logger = discardLogger()
	}
	return &Pipeline{reg: reg, validators: slices.Clone(validators), logger: logger}
}

// Registry returns the computed-tag registry the pipeline uses.
func (p *Pipeline) Registry() *Registry { return p.reg }

// Validators returns the validators the pipeline runs, in order.
func (p *Pipeline) Validators() []TagValidator { return slices.Clone(p.validators) }

// NormalizeManual normalizes raw manual tags and returns them de-duplicated and sorted. When
// any entry is malformed it returns a *gtc.TagFormatError listing every bad entry with its
// position in raw, so a client can fix them all at once.
func (p *Pipeline) NormalizeManual(raw []string) ([]string, error) { return normalizeAll(raw) }

// Prepare runs the pipeline on it with rawManual as the manual tags and sets it.ManualTags
// and it.ComputedTags. Normalization happens before stripping, so "Turns:MultiTurn" is
// stripped as turns:multiturn. On a *gtc.TagFormatError the item is untouched. On a
// *gtc.TagRuleError (only when validate is true) the item and the returned Prepared already
// hold the prepared tags, so a caller that only reports violations (migration) can still
// write; callers that reject must not.
func (p *Pipeline) Prepare(it *gtc.Item, rawManual []string, validate bool) (gtc.Prepared, error) {
	if it == nil {
		return gtc.Prepared{}, errors.New("tagging: Prepare called with a nil item")
	}
	normalized, err := p.NormalizeManual(rawManual)
	if err != nil {
		return gtc.Prepared{}, err
	}

	// normalized is a fresh slice, so the split can reuse it.
	manual, stripped := p.reg.splitInPlace(normalized, nil, nil)
	// Plugins may read the manual tags, so they must be final before computing.
	it.ManualTags = manual
	computed := p.reg.Compute(it)
	it.ComputedTags = computed

	// Step 4 (rule (c) of IsComputed). Compute already drops results outside a plugin's key,
	// so this is a no-op today; it keeps "no tag is both manual and computed" from resting on
	// those checks alone. A manual tag equal to a computed one is the only new case here.
	if slices.ContainsFunc(manual, func(t string) bool { return slices.Contains(computed, t) }) {
		// Split a copy: it.ManualTags has been shown to the plugins and must not change
		// under them.
		manual, stripped = p.reg.splitInPlace(slices.Clone(manual), computed, stripped)
		it.ManualTags = manual
	}
	if len(stripped) == 0 {
		stripped = []string{}
	} else {
		slices.Sort(stripped)
		stripped = slices.Compact(stripped)
	}
	if len(stripped) > 0 {
		p.logger.LogAttrs(context.Background(), slog.LevelWarn, "removed computed tags from manualTags",
			slog.String("item_id", it.ID), slog.String("dataset", it.DatasetName), slog.Any("stripped", stripped))
	}

	prep := gtc.Prepared{
		ManualTags:   slices.Clone(manual),
		ComputedTags: slices.Clone(computed),
		Stripped:     stripped,
	}
	if validate {
		if msgs := ValidateTags(p.validators, manual, computed); len(msgs) > 0 {
			return prep, &gtc.TagRuleError{Messages: msgs}
		}
	}
	return prep, nil
}
