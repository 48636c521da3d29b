package observed

import (
	"context"
	"iter"
	"time"

	"github.com/gtc-dev/gtc"
)

// items observes gtc.ItemStore.
type items struct {
	inner gtc.ItemStore
	o     *obs
}

func (s items) Get(ctx context.Context, k gtc.Key) (*gtc.Item, error) {
	ctx, c := s.o.start(ctx, "items.Get")
	it, err := s.inner.Get(ctx, k)
	c.end(err)
	return it, err
}

func (s items) Locate(ctx context.Context, datasetName, id string) (gtc.Key, error) {
	ctx, c := s.o.start(ctx, "items.Locate")
	k, err := s.inner.Locate(ctx, datasetName, id)
	c.end(err)
	return k, err
}

func (s items) Create(ctx context.Context, it *gtc.Item) (*gtc.Item, error) {
	ctx, c := s.o.start(ctx, "items.Create")
	out, err := s.inner.Create(ctx, it)
	c.end(err)
	return out, err
}

// CreateEach is one call however many items it creates; an item's expected refusal (a
// conflict) does not mark it, while any other item's failure does.
func (s items) CreateEach(ctx context.Context, its []*gtc.Item) []error {
	ctx, c := s.o.start(ctx, "items.CreateEach")
	errs := s.inner.CreateEach(ctx, its)
	c.end(firstFailure(errs))
	return errs
}

// firstFailure is the first of errs that is not an expected refusal, or nil.
func firstFailure(errs []error) error {
	for _, err := range errs {
		if err != nil && !expected(Reason(err)) {
			return err
		}
	}
	return nil
}

// ReplaceEach is one call however many items it writes; an item's expected refusal (gone,
// changed) does not mark it, while any other item's failure does.
func (s items) ReplaceEach(ctx context.Context, pairs []gtc.Replacement) ([]*gtc.Item, []error) {
	ctx, c := s.o.start(ctx, "items.ReplaceEach")
	out, errs := s.inner.ReplaceEach(ctx, pairs)
	c.end(firstFailure(errs))
	return out, errs
}

func (s items) Replace(ctx context.Context, prev, next *gtc.Item) (*gtc.Item, error) {
	ctx, c := s.o.start(ctx, "items.Replace")
	out, err := s.inner.Replace(ctx, prev, next)
	c.end(err)
	return out, err
}

func (s items) DeleteDataset(ctx context.Context, datasetName string) (gtc.DatasetDeletion, error) {
	ctx, c := s.o.start(ctx, "items.DeleteDataset")
	d, err := s.inner.DeleteDataset(ctx, datasetName)
	c.end(err)
	return d, err
}

func (s items) Query(ctx context.Context, q gtc.Query) (gtc.QueryPage, error) {
	ctx, c := s.o.start(ctx, "items.Query")
	p, err := s.inner.Query(ctx, q)
	c.end(err)
	return p, err
}

func (s items) QueryAll(ctx context.Context, q gtc.Query) iter.Seq2[*gtc.Item, error] {
	return seq(s.o, ctx, "items.QueryAll", func(ctx context.Context) iter.Seq2[*gtc.Item, error] {
		return s.inner.QueryAll(ctx, q)
	})
}

func (s items) Count(ctx context.Context, f gtc.Filter) (int, error) {
	ctx, c := s.o.start(ctx, "items.Count")
	n, err := s.inner.Count(ctx, f)
	c.end(err)
	return n, err
}

func (s items) Scan(ctx context.Context, spec gtc.ScanSpec, cursor string, limit int) (gtc.ScanPage, error) {
	ctx, c := s.o.start(ctx, "items.Scan")
	p, err := s.inner.Scan(ctx, spec, cursor, limit)
	c.end(err)
	return p, err
}

func (s items) CountByStatus(ctx context.Context) (map[gtc.Status]int, error) {
	ctx, c := s.o.start(ctx, "items.CountByStatus")
	m, err := s.inner.CountByStatus(ctx)
	c.end(err)
	return m, err
}

func (s items) Datasets(ctx context.Context) ([]string, error) {
	ctx, c := s.o.start(ctx, "items.Datasets")
	ds, err := s.inner.Datasets(ctx)
	c.end(err)
	return ds, err
}

func (s items) Eligible(ctx context.Context, e gtc.EligibleSpec) iter.Seq2[gtc.Key, error] {
	return seq(s.o, ctx, "items.Eligible", func(ctx context.Context) iter.Seq2[gtc.Key, error] {
		return s.inner.Eligible(ctx, e)
	})
}

// eligibleSampler observes a store's gtc.EligibleSampler.
type eligibleSampler struct {
	inner gtc.EligibleSampler
	o     *obs
}

func (s eligibleSampler) SampleEligible(ctx context.Context, e gtc.EligibleSpec, n int, exclude map[gtc.Key]bool) ([]gtc.Key, error) {
	ctx, c := s.o.start(ctx, "items.SampleEligible")
	ks, err := s.inner.SampleEligible(ctx, e, n, exclude)
	c.end(err)
	return ks, err
}

// tagCounter observes a store's gtc.TagCounter.
type tagCounter struct {
	inner gtc.TagCounter
	o     *obs
}

func (s tagCounter) CountTags(ctx context.Context, spec gtc.TagCountSpec) (gtc.TagCounts, error) {
	ctx, c := s.o.start(ctx, "items.CountTags")
	tc, err := s.inner.CountTags(ctx, spec)
	c.end(err)
	return tc, err
}

// curation observes gtc.CurationStore.
type curation struct {
	inner gtc.CurationStore
	o     *obs
}

func (s curation) Get(ctx context.Context, datasetName string) (*gtc.CurationInstructions, error) {
	ctx, c := s.o.start(ctx, "curation.Get")
	doc, err := s.inner.Get(ctx, datasetName)
	c.end(err)
	return doc, err
}

func (s curation) Put(ctx context.Context, doc *gtc.CurationInstructions, ifMatch string) (*gtc.CurationInstructions, bool, error) {
	ctx, c := s.o.start(ctx, "curation.Put")
	out, created, err := s.inner.Put(ctx, doc, ifMatch)
	c.end(err)
	return out, created, err
}

// tags observes gtc.TagStore.
type tags struct {
	inner gtc.TagStore
	o     *obs
}

func (s tags) List(ctx context.Context) ([]string, error) {
	ctx, c := s.o.start(ctx, "tags.List")
	out, err := s.inner.List(ctx)
	c.end(err)
	return out, err
}

func (s tags) Add(ctx context.Context, ts []string) ([]string, error) {
	ctx, c := s.o.start(ctx, "tags.Add")
	out, err := s.inner.Add(ctx, ts)
	c.end(err)
	return out, err
}

func (s tags) Remove(ctx context.Context, ts []string) ([]string, error) {
	ctx, c := s.o.start(ctx, "tags.Remove")
	out, err := s.inner.Remove(ctx, ts)
	c.end(err)
	return out, err
}

// definitions observes gtc.TagDefinitionStore.
type definitions struct {
	inner gtc.TagDefinitionStore
	o     *obs
}

func (s definitions) Get(ctx context.Context, key string) (*gtc.TagDefinition, error) {
	ctx, c := s.o.start(ctx, "tagDefinitions.Get")
	d, err := s.inner.Get(ctx, key)
	c.end(err)
	return d, err
}

func (s definitions) List(ctx context.Context) ([]*gtc.TagDefinition, error) {
	ctx, c := s.o.start(ctx, "tagDefinitions.List")
	ds, err := s.inner.List(ctx)
	c.end(err)
	return ds, err
}

func (s definitions) Upsert(ctx context.Context, d *gtc.TagDefinition) (*gtc.TagDefinition, bool, error) {
	ctx, c := s.o.start(ctx, "tagDefinitions.Upsert")
	out, created, err := s.inner.Upsert(ctx, d)
	c.end(err)
	return out, created, err
}

func (s definitions) Delete(ctx context.Context, key string) error {
	ctx, c := s.o.start(ctx, "tagDefinitions.Delete")
	err := s.inner.Delete(ctx, key)
	c.end(err)
	return err
}

// maintenance observes gtc.Maintenance.
type maintenance struct {
	inner gtc.Maintenance
	o     *obs
}

func (s maintenance) ScanRaw(ctx context.Context, datasets []string, cursor string, limit int) (gtc.RawPage, error) {
	ctx, c := s.o.start(ctx, "maintenance.ScanRaw")
	p, err := s.inner.ScanRaw(ctx, datasets, cursor, limit)
	c.end(err)
	return p, err
}

func (s maintenance) GetRaw(ctx context.Context, partitionKey []any, id string) (gtc.RawDoc, error) {
	ctx, c := s.o.start(ctx, "maintenance.GetRaw")
	d, err := s.inner.GetRaw(ctx, partitionKey, id)
	c.end(err)
	return d, err
}

func (s maintenance) CountRaw(ctx context.Context, datasets []string) (int, error) {
	ctx, c := s.o.start(ctx, "maintenance.CountRaw")
	n, err := s.inner.CountRaw(ctx, datasets)
	c.end(err)
	return n, err
}

func (s maintenance) ReplaceRaw(ctx context.Context, prev gtc.RawDoc, body map[string]any) (gtc.RawDoc, error) {
	ctx, c := s.o.start(ctx, "maintenance.ReplaceRaw")
	d, err := s.inner.ReplaceRaw(ctx, prev, body)
	c.end(err)
	return d, err
}

func (s maintenance) MoveRaw(ctx context.Context, prev gtc.RawDoc, body map[string]any) (gtc.RawDoc, error) {
	ctx, c := s.o.start(ctx, "maintenance.MoveRaw")
	d, err := s.inner.MoveRaw(ctx, prev, body)
	c.end(err)
	return d, err
}

func (s maintenance) EnsureRegistered(ctx context.Context, k gtc.Key) error {
	ctx, c := s.o.start(ctx, "maintenance.EnsureRegistered")
	err := s.inner.EnsureRegistered(ctx, k)
	c.end(err)
	return err
}

func (s maintenance) DuplicateIDs(ctx context.Context, datasets []string) iter.Seq2[[]gtc.Key, error] {
	return seq(s.o, ctx, "maintenance.DuplicateIDs", func(ctx context.Context) iter.Seq2[[]gtc.Key, error] {
		return s.inner.DuplicateIDs(ctx, datasets)
	})
}

// agentOps observes gtc.AgentOperationStore.
type agentOps struct {
	inner gtc.AgentOperationStore
	o     *obs
}

func (s agentOps) Create(ctx context.Context, op *gtc.AgentOperation) error {
	ctx, c := s.o.start(ctx, "agentOperations.Create")
	err := s.inner.Create(ctx, op)
	c.end(err)
	return err
}

func (s agentOps) Get(ctx context.Context, id string) (*gtc.AgentOperation, error) {
	ctx, c := s.o.start(ctx, "agentOperations.Get")
	op, err := s.inner.Get(ctx, id)
	c.end(err)
	return op, err
}

func (s agentOps) Update(ctx context.Context, op *gtc.AgentOperation) error {
	ctx, c := s.o.start(ctx, "agentOperations.Update")
	err := s.inner.Update(ctx, op)
	c.end(err)
	return err
}

func (s agentOps) SetUndoneBy(ctx context.Context, id, undoID string) error {
	ctx, c := s.o.start(ctx, "agentOperations.SetUndoneBy")
	err := s.inner.SetUndoneBy(ctx, id, undoID)
	c.end(err)
	return err
}

func (s agentOps) PutItems(ctx context.Context, id string, first int, its []gtc.AgentOpItem) error {
	ctx, c := s.o.start(ctx, "agentOperations.PutItems")
	err := s.inner.PutItems(ctx, id, first, its)
	c.end(err)
	return err
}

func (s agentOps) Items(ctx context.Context, id string, limit int) ([]gtc.AgentOpItem, error) {
	ctx, c := s.o.start(ctx, "agentOperations.Items")
	its, err := s.inner.Items(ctx, id, limit)
	c.end(err)
	return its, err
}

func (s agentOps) List(ctx context.Context, f gtc.AgentOpFilter) ([]*gtc.AgentOperation, int, error) {
	ctx, c := s.o.start(ctx, "agentOperations.List")
	ops, n, err := s.inner.List(ctx, f)
	c.end(err)
	return ops, n, err
}

func (s agentOps) Running(ctx context.Context) ([]*gtc.AgentOperation, error) {
	ctx, c := s.o.start(ctx, "agentOperations.Running")
	ops, err := s.inner.Running(ctx)
	c.end(err)
	return ops, err
}

func (s agentOps) DeleteBefore(ctx context.Context, t time.Time) (int, error) {
	ctx, c := s.o.start(ctx, "agentOperations.DeleteBefore")
	n, err := s.inner.DeleteBefore(ctx, t)
	c.end(err)
	return n, err
}

func (s maintenance) WriteMigrationMarker(ctx context.Context, by string) error {
	ctx, c := s.o.start(ctx, "maintenance.WriteMigrationMarker")
	err := s.inner.WriteMigrationMarker(ctx, by)
	c.end(err)
	return err
}

type revisions struct {
	inner gtc.RevisionStore
	o     *obs
}

func (s revisions) List(ctx context.Context, datasetName, id, cursor string, limit int) (gtc.RevisionPage, error) {
	ctx, c := s.o.start(ctx, "revisions.List")
	p, err := s.inner.List(ctx, datasetName, id, cursor, limit)
	c.end(err)
	return p, err
}

func (s revisions) Get(ctx context.Context, datasetName, id string, n int64) (*gtc.Revision, error) {
	ctx, c := s.o.start(ctx, "revisions.Get")
	r, err := s.inner.Get(ctx, datasetName, id, n)
	c.end(err)
	return r, err
}

type leases struct {
	inner gtc.LeaseStore
	o     *obs
}

func (s leases) Acquire(ctx context.Context, name, holder string, ttl time.Duration) (gtc.Lease, error) {
	return observe(s.o, ctx, "leases.Acquire", func(ctx context.Context) (gtc.Lease, error) { return s.inner.Acquire(ctx, name, holder, ttl) })
}

func (s leases) Renew(ctx context.Context, l gtc.Lease, ttl time.Duration) (gtc.Lease, error) {
	return observe(s.o, ctx, "leases.Renew", func(ctx context.Context) (gtc.Lease, error) { return s.inner.Renew(ctx, l, ttl) })
}

func (s leases) Release(ctx context.Context, l gtc.Lease) error {
	ctx, c := s.o.start(ctx, "leases.Release")
	err := s.inner.Release(ctx, l)
	c.end(err)
	return err
}

func (s leases) Get(ctx context.Context, name string) (gtc.Lease, error) {
	return observe(s.o, ctx, "leases.Get", func(ctx context.Context) (gtc.Lease, error) { return s.inner.Get(ctx, name) })
}

type jobs struct {
	inner gtc.JobStore
	o     *obs
}

// observe observes one store call of name that returns a value.
func observe[T any](o *obs, ctx context.Context, name string, fn func(ctx context.Context) (T, error)) (T, error) {
	ctx, c := o.start(ctx, name)
	v, err := fn(ctx)
	c.end(err)
	return v, err
}

func (s jobs) Create(ctx context.Context, j gtc.Job) (gtc.Job, error) {
	return observe(s.o, ctx, "jobs.Create", func(ctx context.Context) (gtc.Job, error) { return s.inner.Create(ctx, j) })
}

func (s jobs) Get(ctx context.Context, id string) (gtc.Job, error) {
	return observe(s.o, ctx, "jobs.Get", func(ctx context.Context) (gtc.Job, error) { return s.inner.Get(ctx, id) })
}

func (s jobs) Replace(ctx context.Context, j gtc.Job) (gtc.Job, error) {
	return observe(s.o, ctx, "jobs.Replace", func(ctx context.Context) (gtc.Job, error) { return s.inner.Replace(ctx, j) })
}

func (s jobs) Unfinished(ctx context.Context, limit int) ([]gtc.Job, error) {
	return observe(s.o, ctx, "jobs.Unfinished", func(ctx context.Context) ([]gtc.Job, error) { return s.inner.Unfinished(ctx, limit) })
}

func (s jobs) DeleteFinished(ctx context.Context, t time.Time) (int, error) {
	return observe(s.o, ctx, "jobs.DeleteFinished", func(ctx context.Context) (int, error) { return s.inner.DeleteFinished(ctx, t) })
}

type agentPreviews struct {
	inner gtc.AgentPreviewStore
	o     *obs
}

func (s agentPreviews) Put(ctx context.Context, p gtc.AgentPreview, b gtc.AgentPreviewBounds) (gtc.AgentPreview, error) {
	return observe(s.o, ctx, "agentPreviews.Put", func(ctx context.Context) (gtc.AgentPreview, error) { return s.inner.Put(ctx, p, b) })
}

func (s agentPreviews) Get(ctx context.Context, caller, hash string) (gtc.AgentPreview, error) {
	return observe(s.o, ctx, "agentPreviews.Get", func(ctx context.Context) (gtc.AgentPreview, error) { return s.inner.Get(ctx, caller, hash) })
}

func (s agentPreviews) SetState(ctx context.Context, p gtc.AgentPreview, state, opID string) (gtc.AgentPreview, error) {
	return observe(s.o, ctx, "agentPreviews.SetState", func(ctx context.Context) (gtc.AgentPreview, error) {
		return s.inner.SetState(ctx, p, state, opID)
	})
}

func (s agentPreviews) DeleteExpired(ctx context.Context, t time.Time) (int, error) {
	return observe(s.o, ctx, "agentPreviews.DeleteExpired", func(ctx context.Context) (int, error) { return s.inner.DeleteExpired(ctx, t) })
}
