package tagging

import (
	"context"
	"fmt"
	"slices"
)

// ManualTagProvider is one source of the manual tag vocabulary:
// the environment allowlist, the groups file, or the tag store.
type ManualTagProvider interface {
	// Name identifies the provider in messages: "env", "groups-file", "tag-store".
	Name() string
	// AllowedTags returns the provider's tags, normalized, unique and sorted.
	AllowedTags(ctx context.Context) ([]string, error)
}

// KnownTags is the known-tag set: the sorted union of every provider's tags minus those
// reserved for computed tags (IsComputed(t, nil)). The first provider error is returned,
// naming the provider.
func KnownTags(ctx context.Context, providers []ManualTagProvider, reg *Registry) ([]string, error) {
	var all []string
	for _, p := range providers {
		tags, err := p.AllowedTags(ctx)
		if err != nil {
			return nil, fmt.Errorf("manual tag provider %s: %w", p.Name(), err)
		}
		for _, t := range tags {
			if !reg.IsComputed(t, nil) {
				all = append(all, t)
			}
		}
	}
	return sortedUnique(all), nil
}

// AllowListProvider serves the parsed GTC_ALLOWED_MANUAL_TAGS entries.
type AllowListProvider struct {
	tags []string
}

var _ ManualTagProvider = (*AllowListProvider)(nil)

// NewAllowListProvider serves tags, the result of ParseAllowList.
func NewAllowListProvider(tags []string) *AllowListProvider {
	return &AllowListProvider{tags: sortedUnique(tags)}
}

// Name returns "env".
func (*AllowListProvider) Name() string { return "env" }

// AllowedTags returns the allowlist.
func (p *AllowListProvider) AllowedTags(context.Context) ([]string, error) {
	return slices.Clone(p.tags), nil
}

// GroupsProvider serves the tags of a groups file.
type GroupsProvider struct {
	groups *Groups
}

var _ ManualTagProvider = (*GroupsProvider)(nil)

// NewGroupsProvider serves the tags of groups.
func NewGroupsProvider(groups *Groups) *GroupsProvider { return &GroupsProvider{groups: groups} }

// Name returns "groups-file".
func (*GroupsProvider) Name() string { return "groups-file" }

// AllowedTags returns every group:value of the groups file.
func (p *GroupsProvider) AllowedTags(context.Context) ([]string, error) {
	return p.groups.AllowedTags(), nil
}

// Schema returns the tag schema of the groups file.
func (p *GroupsProvider) Schema() Schema { return p.groups.Schema() }
