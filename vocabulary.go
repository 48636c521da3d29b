package gtc

import (
	"context"
	"slices"
	"strings"
	"time"
)

// TagStore is the one global set of manual tags curators build up. Add and Remove are
// read-modify-write of one record, conditional on its ETag and retried, so concurrent calls
// never lose each other's changes. Callers pass normalized tags.
type TagStore interface {
	// List returns the stored tags, sorted and unique.
	List(ctx context.Context) ([]string, error)
	// Add unions tags into the set and returns the new set.
	Add(ctx context.Context, tags []string) ([]string, error)
	// Remove subtracts tags from the set (absent tags are a no-op) and returns the new set.
	Remove(ctx context.Context, tags []string) ([]string, error)
}

// TagDefinition is a glossary entry curators wrote for a tag key.
type TagDefinition struct {
	TagKey      string
	Description string
	CreatedBy   *string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	ETag        string
}

// TagDefinitionStore keeps tag definitions by key.
type TagDefinitionStore interface {
	// Get returns one definition or ErrNotFound.
	Get(ctx context.Context, key string) (*TagDefinition, error)
	// List returns every definition sorted by key.
	List(ctx context.Context) ([]*TagDefinition, error)
	// Upsert creates d, or replaces the description and UpdatedAt of an existing definition
	// while keeping its CreatedBy and CreatedAt. It reports whether it created.
	Upsert(ctx context.Context, d *TagDefinition) (*TagDefinition, bool, error)
	// Delete removes a definition; a missing key is ErrNotFound.
	Delete(ctx context.Context, key string) error
}

// TagVocabulary answers what tags exist and manages the tag store and the glossary. The
// tagging package implements it; the API and the curation service use it.
type TagVocabulary interface {
	// KnownTags is the known-tag set: the allow-list, the groups file and the tag store,
	// minus computed keys; sorted.
	KnownTags(ctx context.Context) ([]string, error)
	// ComputedKeys are the static computed keys, sorted.
	ComputedKeys() []string
	// AddTags normalizes raw (a *TagFormatError names every bad entry, and then nothing is
	// stored), stores the tags that are not computed keys, and returns the computed ones it
	// refused, sorted.
	AddTags(ctx context.Context, raw []string) (ignored []string, err error)
	// RemoveTags normalizes raw and removes the tags from the tag store.
	RemoveTags(ctx context.Context, raw []string) error
	// Schema describes the configured tag groups.
	Schema() TagSchema
	// Glossary lists the manual groups, the computed keys and the tag definitions.
	Glossary(ctx context.Context) (*Glossary, error)
	// PutDefinition creates or updates the definition of key; a new one is attributed to by.
	PutDefinition(ctx context.Context, key, description, by string) (*TagDefinition, error)
	// DeleteDefinition removes the definition of key, or answers NOT_FOUND.
	DeleteDefinition(ctx context.Context, key string) error
}

// TagSchema is the answer of GET /v1/tags/schema.
type TagSchema struct {
	Version string           `json:"version"`
	Groups  []TagGroupSchema `json:"groups"`
}

// TagGroupSchema is one configured tag group.
type TagGroupSchema struct {
	Name      string          `json:"name"`
	Values    []string        `json:"values"`
	Exclusive bool            `json:"exclusive"`
	DependsOn []TagDependency `json:"depends_on"`
}

// TagDependency is one tag a group needs present.
type TagDependency struct {
	Group string `json:"group"`
	Value string `json:"value"`
}

// Glossary is the answer of GET /v1/tags/glossary.
type Glossary struct {
	Version string          `json:"version"`
	Groups  []GlossaryGroup `json:"groups"`
}

// Glossary group types.
const (
	GlossaryManual   = "manual"
	GlossaryComputed = "computed"
	GlossaryCustom   = "custom"
)

// GlossaryGroup is one group of the glossary.
type GlossaryGroup struct {
	Name        string        `json:"name"`
	Description *string       `json:"description"`
	Type        string        `json:"type"`
	Tags        []GlossaryTag `json:"tags"`
}

// GlossaryTag is one described tag.
type GlossaryTag struct {
	Key         string  `json:"key"`
	Description *string `json:"description"`
}

// TagGroups lists the groups of the glossary's tags (the part of each key before its first
// colon) and of its manual groups, sorted and distinct.
func (g *Glossary) TagGroups() []string {
	var out []string
	for _, gr := range g.Groups {
		if gr.Type == GlossaryManual {
			out = append(out, gr.Name)
		}
		for _, t := range gr.Tags {
			if group, _, ok := strings.Cut(t.Key, ":"); ok && group != "" {
				out = append(out, group)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
