package tagging

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	gtc "github.com/gtc-dev/gtc"
)

// Texts and limits of the tag vocabulary endpoints.
const (
	// TagSchemaVersion is the version of the schema and glossary answers.
	TagSchemaVersion = "v1"
	// GlossaryComputedName names the glossary group of the static computed keys.
	GlossaryComputedName = "computed"
	// GlossaryComputedDescription describes that group.
	GlossaryComputedDescription = "Derived by the server from each item's content; read-only"
	// GlossaryCustomName names the glossary group of the tag definitions.
	GlossaryCustomName = "custom"
	// GlossaryCustomDescription describes that group.
	GlossaryCustomDescription = "Tags that curators have described in the glossary"
	// MaxDefinitionKeyLength is the longest tag_key of a definition, in characters.
	MaxDefinitionKeyLength = 200
	// MaxDefinitionDescriptionLength is the longest definition description, in characters.
	MaxDefinitionDescriptionLength = 10000
)

// Vocabulary answers what tags exist and manages the tag store and the glossary. It holds no
// state of its own beyond its configuration and is safe for concurrent use when its stores
// are.
type Vocabulary struct {
	reg       *Registry
	groups    *Groups // nil: no groups file
	providers []ManualTagProvider
	tags      gtc.TagStore
	defs      gtc.TagDefinitionStore
	clock     gtc.Clock
	logger    *slog.Logger
}

var _ gtc.TagVocabulary = (*Vocabulary)(nil)

// NewVocabulary builds the vocabulary from the computed-tag registry, the parsed
// GTC_ALLOWED_MANUAL_TAGS (ParseAllowList), the groups file (nil for none), the tag store and
// the definition store. A nil clock is the system clock; a nil logger discards the warnings
// about tag-store entries that are not valid tags.
func NewVocabulary(reg *Registry, allow []string, groups *Groups, tags gtc.TagStore, defs gtc.TagDefinitionStore,
	clock gtc.Clock, logger *slog.Logger) *Vocabulary {
	if clock == nil {
		clock = gtc.SystemClock{}
	}
	if logger == nil {
		logger = discardLogger()
	}
	providers := []ManualTagProvider{NewAllowListProvider(allow)}
	if groups != nil {
		providers = append(providers, NewGroupsProvider(groups))
	}
	providers = append(providers, NewTagStoreProvider(tags, logger))
	return &Vocabulary{reg: reg, groups: groups, providers: providers, tags: tags, defs: defs, clock: clock, logger: logger}
}

// KnownTags is the known-tag set: the allowlist, the groups file and the tag store, minus
// computed keys; sorted.
func (v *Vocabulary) KnownTags(ctx context.Context) ([]string, error) {
	return KnownTags(ctx, v.providers, v.reg)
}

// ComputedKeys are the static computed keys, sorted.
func (v *Vocabulary) ComputedKeys() []string { return v.reg.StaticKeys() }

// AddTags normalizes raw and adds the tags to the tag store, all or nothing: a
// *gtc.TagFormatError names every bad entry by its position in raw, and then nothing is
// stored. Tags reserved for computed tags (IsComputed(t, nil)) are not stored; they are
// returned as ignored, sorted and unique (never nil).
func (v *Vocabulary) AddTags(ctx context.Context, raw []string) (ignored []string, err error) {
	tags, err := normalizeAll(raw)
	if err != nil {
		return nil, err
	}
	keep := make([]string, 0, len(tags))
	ignored = []string{}
	for _, t := range tags {
		if v.reg.IsComputed(t, nil) {
			ignored = append(ignored, t)
		} else {
			keep = append(keep, t)
		}
	}
	if len(keep) > 0 {
		if _, err := v.tags.Add(ctx, keep); err != nil {
			return nil, fmt.Errorf("add to tag store: %w", err)
		}
	}
	return ignored, nil
}

// RemoveTags normalizes raw and removes the tags from the tag store; a *gtc.TagFormatError
// names every bad entry, and then nothing is removed. Removing an absent tag is a no-op.
// Stored entries in another spelling of a removed tag (written by other tools or before
// tags were composed into Normalization Form C, e.g. "cafe\u0301:x" for "café:x") are
// removed with it: the known-tag set shows them normalized, so they are that tag.
func (v *Vocabulary) RemoveTags(ctx context.Context, raw []string) error {
	tags, err := normalizeAll(raw)
	if err != nil {
		return err
	}
	if len(tags) == 0 {
		return nil
	}
	stored, err := v.tags.List(ctx)
	if err != nil {
		return fmt.Errorf("read tag store: %w", err)
	}
	drop := tags
	for _, s := range stored {
		if _, found := slices.BinarySearch(tags, s); found {
			continue
		}
		if t, err := Normalize(s); err == nil {
			if _, found := slices.BinarySearch(tags, t); found {
				drop = append(drop, s)
			}
		}
	}
	if _, err := v.tags.Remove(ctx, drop); err != nil {
		return fmt.Errorf("remove from tag store: %w", err)
	}
	return nil
}

// normalizeAll normalizes every entry of raw and returns the tags sorted and unique, or a
// *gtc.TagFormatError listing every entry that failed with its position in raw.
func normalizeAll(raw []string) ([]string, error) {
	out := make([]string, 0, len(raw))
	var problems []gtc.TagProblem
	for i, r := range raw {
		t, err := Normalize(r)
		if err != nil {
			problems = append(problems, gtc.TagProblem{Index: i, Message: err.Error()})
			continue
		}
		out = append(out, t)
	}
	if len(problems) > 0 {
		return nil, &gtc.TagFormatError{Problems: problems}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Schema describes the groups of the groups file: groups sorted by
// name, values sorted, dependencies split at their first colon and sorted by group, then
// value. No slice is nil, so every key encodes as a list.
func (v *Vocabulary) Schema() gtc.TagSchema {
	out := gtc.TagSchema{Version: TagSchemaVersion, Groups: []gtc.TagGroupSchema{}}
	if v.groups == nil {
		return out
	}
	for _, g := range v.groups.Groups() {
		deps := make([]gtc.TagDependency, 0, len(g.DependsOn))
		for _, d := range g.DependsOn {
			group, value, _ := strings.Cut(d, ":")
			deps = append(deps, gtc.TagDependency{Group: group, Value: value})
		}
		// Not the order of the tags: "a-b:x" sorts before "a:y" as a string, but group
		// "a" comes before group "a-b".
		slices.SortFunc(deps, func(a, b gtc.TagDependency) int {
			return cmp.Or(strings.Compare(a.Group, b.Group), strings.Compare(a.Value, b.Value))
		})
		values := slices.Clone(g.Values)
		if values == nil {
			values = []string{}
		}
		slices.Sort(values)
		out.Groups = append(out.Groups, gtc.TagGroupSchema{Name: g.Name, Values: values, Exclusive: g.Exclusive, DependsOn: deps})
	}
	slices.SortFunc(out.Groups, func(a, b gtc.TagGroupSchema) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Glossary lists, in this order: one manual group per groups-file
// group in file order; the computed group with the static keys and their plugins'
// descriptions (when there is a static key); the custom group with every tag definition
// sorted by key (only when one exists). No slice is nil.
func (v *Vocabulary) Glossary(ctx context.Context) (*gtc.Glossary, error) {
	defs, err := v.defs.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list tag definitions: %w", err)
	}
	out := &gtc.Glossary{Version: TagSchemaVersion, Groups: []gtc.GlossaryGroup{}}
	if v.groups != nil {
		for _, g := range v.groups.Groups() {
			tags := make([]gtc.GlossaryTag, 0, len(g.Values))
			for _, val := range g.Values {
				tags = append(tags, gtc.GlossaryTag{Key: g.Name + ":" + val, Description: g.ValueDescription(val)})
			}
			out.Groups = append(out.Groups, gtc.GlossaryGroup{Name: g.Name, Description: g.Description, Type: gtc.GlossaryManual, Tags: tags})
		}
	}

	if keys := v.reg.StaticKeys(); len(keys) > 0 {
		descriptions := make(map[string]string, len(keys))
		for _, p := range v.reg.Plugins() {
			descriptions[p.Key()] = p.Description()
		}
		tags := make([]gtc.GlossaryTag, 0, len(keys))
		for _, k := range keys {
			d := descriptions[k]
			tags = append(tags, gtc.GlossaryTag{Key: k, Description: &d})
		}
		out.Groups = append(out.Groups, gtc.GlossaryGroup{
			Name: GlossaryComputedName, Description: ptr(GlossaryComputedDescription), Type: gtc.GlossaryComputed, Tags: tags,
		})
	}

	if len(defs) > 0 {
		defs = slices.Clone(defs)
		slices.SortStableFunc(defs, func(a, b *gtc.TagDefinition) int { return strings.Compare(a.TagKey, b.TagKey) })
		tags := make([]gtc.GlossaryTag, 0, len(defs))
		for _, d := range defs {
			tags = append(tags, gtc.GlossaryTag{Key: d.TagKey, Description: ptr(d.Description)})
		}
		out.Groups = append(out.Groups, gtc.GlossaryGroup{
			Name: GlossaryCustomName, Description: ptr(GlossaryCustomDescription), Type: gtc.GlossaryCustom, Tags: tags,
		})
	}
	return out, nil
}

// PutDefinition creates or updates the glossary definition of key. key is trimmed and
// composed into Unicode Normalization Form C (DefinitionKey) and must then be
// 1–MaxDefinitionKeyLength characters without invisible format characters; it is not
// otherwise normalized, since a definition may describe any key the UI shows. description
// may be 0–MaxDefinitionDescriptionLength characters. Violations are one VALIDATION_ERROR
// naming every field at fault. A new definition is attributed to by (no creator when by is
// ""); the store keeps the creator and creation time of an existing one.
func (v *Vocabulary) PutDefinition(ctx context.Context, key, description, by string) (*gtc.TagDefinition, error) {
	key = DefinitionKey(key)
	var fields []gtc.FieldError
	switch n := utf8.RuneCountInString(key); {
	case n < 1:
		fields = append(fields, gtc.FieldError{Field: "tag_key", Message: "must be at least 1 character"})
	case n > MaxDefinitionKeyLength:
		fields = append(fields, gtc.FieldError{Field: "tag_key", Message: fmt.Sprintf("must be at most %d characters", MaxDefinitionKeyLength)})
	default:
		if r, ok := gtc.FormatChar(key); ok {
			fields = append(fields, gtc.FieldError{Field: "tag_key", Message: gtc.InvisibleCharMessage("tag_key", r)})
		}
	}
	if utf8.RuneCountInString(description) > MaxDefinitionDescriptionLength {
		fields = append(fields, gtc.FieldError{Field: "description", Message: fmt.Sprintf("must be at most %d characters", MaxDefinitionDescriptionLength)})
	}
	if len(fields) > 0 {
		return nil, gtc.ValidationError(fields)
	}
	now := v.clock.Now().UTC().Truncate(time.Microsecond)
	d := &gtc.TagDefinition{TagKey: key, Description: description, CreatedAt: now, UpdatedAt: now}
	if by != "" {
		d.CreatedBy = ptr(by)
	}
	stored, _, err := v.defs.Upsert(ctx, d)
	if errors.Is(err, gtc.ErrInvalidArgument) {
		// A key the store cannot hold (Cosmos DB refuses / \ ? # in ids): the caller's to fix.
		return nil, gtc.ValidationError([]gtc.FieldError{{Field: "tag_key", Message: "contains characters that are not allowed"}})
	}
	if err != nil {
		return nil, fmt.Errorf("store tag definition '%s': %w", key, err)
	}
	return stored, nil
}

// DefinitionKey is the form in which a glossary definition's key is stored and looked up:
// trimmed and composed into Unicode Normalization Form C, so the key of a tag typed with
// combining marks is the key of the normalized tag.
func DefinitionKey(raw string) string {
	k := strings.TrimSpace(raw)
	if isASCII(k) {
		return k
	}
	return norm.NFC.String(k)
}

// DeleteDefinition removes the definition of key, looked up by DefinitionKey (and, for a
// definition stored before keys were composed, by key as sent); an absent one is NOT_FOUND
// ("Tag definition '<key>' not found").
func (v *Vocabulary) DeleteDefinition(ctx context.Context, key string) error {
	err := v.defs.Delete(ctx, DefinitionKey(key))
	if k := DefinitionKey(key); k != key && (errors.Is(err, gtc.ErrNotFound) || errors.Is(err, gtc.ErrInvalidArgument)) {
		err = v.defs.Delete(ctx, key)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, gtc.ErrNotFound), errors.Is(err, gtc.ErrInvalidArgument):
		// A key the store cannot hold (Cosmos DB refuses / \ ? # in ids) has no definition.
		return &gtc.Error{Code: gtc.CodeNotFound, Message: fmt.Sprintf("Tag definition '%s' not found", key)}
	default:
		return fmt.Errorf("delete tag definition '%s': %w", key, err)
	}
}

func ptr[T any](v T) *T { return &v }
