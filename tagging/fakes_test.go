package tagging

import (
	"context"
	"slices"
	"strings"
	"sync"

	gtc "github.com/gtc-dev/gtc"
)

// fakeTagStore is an in-memory gtc.TagStore that records every call. listErr, addErr and
// removeErr make the matching method fail.
type fakeTagStore struct {
	mu        sync.Mutex
	tags      []string // as stored: List returns them verbatim, like a store of legacy data
	calls     []string // "List", "Add a,b", "Remove a"
	listErr   error
	addErr    error
	removeErr error
}

func newFakeTagStore(tags ...string) *fakeTagStore { return &fakeTagStore{tags: tags} }

func (s *fakeTagStore) List(context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, "List")
	if s.listErr != nil {
		return nil, s.listErr
	}
	return slices.Clone(s.tags), nil
}

func (s *fakeTagStore) Add(_ context.Context, tags []string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, "Add "+strings.Join(tags, ","))
	if s.addErr != nil {
		return nil, s.addErr
	}
	s.tags = sortedUnique(append(s.tags, tags...))
	return slices.Clone(s.tags), nil
}

func (s *fakeTagStore) Remove(_ context.Context, tags []string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, "Remove "+strings.Join(tags, ","))
	if s.removeErr != nil {
		return nil, s.removeErr
	}
	s.tags = slices.DeleteFunc(s.tags, func(t string) bool { return slices.Contains(tags, t) })
	return slices.Clone(s.tags), nil
}

func (s *fakeTagStore) recorded() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// writes are the recorded calls that change the store.
func (s *fakeTagStore) writes() []string {
	return slices.DeleteFunc(s.recorded(), func(c string) bool { return c == "List" })
}

// fakeDefinitionStore is an in-memory gtc.TagDefinitionStore with the upsert semantics of
// the interface: an update keeps CreatedBy and CreatedAt.
type fakeDefinitionStore struct {
	mu      sync.Mutex
	defs    map[string]gtc.TagDefinition
	listErr error
	err     error // returned by Upsert and Delete
	upserts []gtc.TagDefinition
}

func newFakeDefinitionStore() *fakeDefinitionStore {
	return &fakeDefinitionStore{defs: map[string]gtc.TagDefinition{}}
}

func (s *fakeDefinitionStore) Get(_ context.Context, key string) (*gtc.TagDefinition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.defs[key]
	if !ok {
		return nil, gtc.ErrNotFound
	}
	return &d, nil
}

func (s *fakeDefinitionStore) List(context.Context) ([]*gtc.TagDefinition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listErr != nil {
		return nil, s.listErr
	}
	out := []*gtc.TagDefinition{}
	for _, d := range s.defs {
		out = append(out, &d)
	}
	// Deliberately unsorted (map order): the glossary must sort.
	return out, nil
}

func (s *fakeDefinitionStore) Upsert(_ context.Context, d *gtc.TagDefinition) (*gtc.TagDefinition, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.upserts = append(s.upserts, *d)
	if s.err != nil {
		return nil, false, s.err
	}
	stored := *d
	old, exists := s.defs[d.TagKey]
	if exists {
		stored.CreatedBy, stored.CreatedAt = old.CreatedBy, old.CreatedAt
	}
	stored.ETag = "etag-" + d.TagKey
	s.defs[d.TagKey] = stored
	return &stored, !exists, nil
}

func (s *fakeDefinitionStore) Delete(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	if _, ok := s.defs[key]; !ok {
		return gtc.ErrNotFound
	}
	delete(s.defs, key)
	return nil
}
