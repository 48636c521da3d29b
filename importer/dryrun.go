package importer

import (
	"context"
	"errors"
	"sync"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

// DryRunCurator is the import service of deps over a store and a tag vocabulary that check
// but do not write: the import runs every step of the route, and only the writes are left
// out.
func DryRunCurator(deps gtc.CuratorDeps) *gtc.Curator {
	items := &dryRunItems{ItemStore: deps.Store.Items(), created: map[[2]string]bool{}}
	deps.Store = dryRunStore{Store: deps.Store, items: items}
	deps.Vocabulary = dryRunVocabulary{TagVocabulary: deps.Vocabulary}
	return gtc.NewCurator(deps)
}

type dryRunStore struct {
	gtc.Store
	items *dryRunItems
}

func (s dryRunStore) Items() gtc.ItemStore { return s.items }

// dryRunItems answers a create as the store would (an existing (datasetName, id), also one
// "created" earlier in the run, is a conflict; an oversized item is too large) without
// writing.
type dryRunItems struct {
	gtc.ItemStore
	mu      sync.Mutex
	created map[[2]string]bool
}

// CreateEach answers each create as Create does: nothing reaches the store.
func (s *dryRunItems) CreateEach(ctx context.Context, items []*gtc.Item) []error {
	errs := make([]error, len(items))
	for i, it := range items {
		_, errs[i] = s.Create(ctx, it)
	}
	return errs
}

func (s *dryRunItems) Create(ctx context.Context, it *gtc.Item) (*gtc.Item, error) {
	if len(codec.ItemStoredJSON(it)) > gtc.MaxItemBytes {
		return nil, gtc.ErrTooLarge
	}
	k := [2]string{it.DatasetName, it.ID}
	if _, err := s.ItemStore.Locate(ctx, it.DatasetName, it.ID); err == nil {
		return nil, &gtc.ConflictError{Existing: gtc.Key{DatasetName: it.DatasetName, Bucket: it.Bucket, ID: it.ID}}
	} else if !errors.Is(err, gtc.ErrNotFound) {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.created[k] {
		return nil, &gtc.ConflictError{Existing: gtc.Key{DatasetName: it.DatasetName, Bucket: it.Bucket, ID: it.ID}}
	}
	s.created[k] = true
	return it.Clone(), nil
}

// Locate also finds the items of earlier batches, so generated ids stay unique in the run.
func (s *dryRunItems) Locate(ctx context.Context, datasetName, id string) (gtc.Key, error) {
	s.mu.Lock()
	seen := s.created[[2]string{datasetName, id}]
	s.mu.Unlock()
	if seen {
		return gtc.Key{DatasetName: datasetName, ID: id}, nil
	}
	return s.ItemStore.Locate(ctx, datasetName, id)
}

// dryRunVocabulary registers no tags (--register-tags with --dry-run).
type dryRunVocabulary struct{ gtc.TagVocabulary }

func (dryRunVocabulary) AddTags(context.Context, []string) ([]string, error) { return nil, nil }
