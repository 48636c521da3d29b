package cosmos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/internal/parallel"
)

// The meta container holds the registry of dataset names and their buckets, and
// the migration marker.

const (
	registryID  = "dataset"
	markerID    = "marker"
	datasetsTTL = 30 * time.Second
	// knownTTL bounds how long a process trusts that a bucket it registered is still
	// registered: another replica's DeleteDataset removes the entry, and the next create
	// after this long registers the bucket again.
	knownTTL = time.Minute
)

type registryEntry struct {
	ID          string   `json:"id"`
	PK          string   `json:"pk"`
	Kind        string   `json:"kind"`
	DatasetName string   `json:"datasetName"`
	Buckets     []string `json:"buckets"`
	CreatedAt   string   `json:"createdAt"`
	ETag        string   `json:"_etag,omitempty"`
}

// Marker is the migration marker in the meta container (see README.md).
type Marker struct {
	ID                string `json:"id"`
	PK                string `json:"pk"`
	Kind              string `json:"kind"`
	IndexVersion      int    `json:"indexVersion"`
	MigratedAt        string `json:"migratedAt,omitempty"`
	MigratedBy        string `json:"migratedBy,omitempty"`
	RegistryRebuiltAt string `json:"registryRebuiltAt,omitempty"`
	ETag              string `json:"_etag,omitempty"`
}

// migrated reports whether gtc migrate (or a new deployment) recorded that every item
// document has the index fields of the current version.
func (m *Marker) migrated() bool {
	return m != nil && m.MigratedAt != "" && m.IndexVersion >= gtc.IndexVersion
}

func registryPK(ds string) string { return "dataset:" + ds }

// errRace marks a lost conditional write; retryConditional tries again.
var errRace = errors.New("cosmos: lost a conditional write")

// retryConditional runs fn (a read and a conditional write) up to 5 times while it loses
// races, with 20–200 ms of jitter between attempts.
func retryConditional(ctx context.Context, op string, fn func() error) error {
	return retryConditionalN(ctx, op, conditionalAttempts, fn)
}

// retryConditionalN is retryConditional with its own number of attempts.
func retryConditionalN(ctx context.Context, op string, attempts int, fn func() error) error {
	for attempt := range attempts {
		err := fn()
		if !errors.Is(err, errRace) {
			return err
		}
		if attempt == attempts-1 {
			break
		}
		select {
		case <-ctx.Done():
			return wrapErr(op, ctx.Err())
		case <-time.After(time.Duration(20+rand.IntN(181)) * time.Millisecond):
		}
	}
	return fmt.Errorf("cosmos: %s: %w", op, gtc.ErrConcurrentModification)
}

// raced turns the statuses of a lost conditional write into errRace.
func raced(err error) error {
	if st := statusOf(err); st == http.StatusPreconditionFailed || st == http.StatusConflict {
		return errRace
	}
	return err
}

func etagPtr(s string) *azcore.ETag {
	e := azcore.ETag(s)
	return &e
}

// registry is the process's view of the registry documents.
type registry struct {
	s *Store

	// adding serializes this process's registrations: the writers of one process never race
	// each other for the registry document (an import's concurrent creates into a new
	// dataset all register its buckets at once), only other processes' writers.
	adding sync.Mutex

	mu        sync.Mutex
	known     map[partition]time.Time // registered buckets this process has seen, and when
	names     []string                // confirmed dataset names, sorted
	namesAt   time.Time
	namesGood bool
}

func newRegistry(s *Store) *registry {
	return &registry{s: s, known: map[partition]time.Time{}}
}

func (r *registry) invalidate() {
	r.mu.Lock()
	r.namesGood = false
	r.mu.Unlock()
}

// readByKey reads the document (keyField = pk, id) of a single-path container into v and
// reports whether it exists. It is a query filtered on the full key rather than a point
// read, so a missing document is "no rows" on every server (the stock test server answers
// 500 for a point read of a missing document); Cosmos DB routes it to the one partition.
func (s *Store) readByKey(ctx context.Context, c *azcosmos.ContainerClient, keyField, pk, id string, v any) (bool, error) {
	q := sqlQuery{
		text:   "SELECT * FROM c WHERE c." + keyField + " = @pk AND c.id = @id",
		params: []azcosmos.QueryParameter{{Name: "@pk", Value: pk}, {Name: "@id", Value: id}},
	}
	found := false
	err := s.rows(ctx, c, "read "+c.ID(), q, func(row []byte) error {
		found = true
		if err := json.Unmarshal(row, v); err != nil {
			return fmt.Errorf("cosmos: read %s %s: %w: %w", c.ID(), id, gtc.ErrUnavailable, err)
		}
		return nil
	})
	return found, err
}

// readEntry reads a dataset's entry; nil when there is none.
func (r *registry) readEntry(ctx context.Context, ds string) (*registryEntry, error) {
	var e registryEntry
	found, err := r.s.readByKey(ctx, r.s.meta, "pk", registryPK(ds), registryID, &e)
	if err != nil || !found {
		return nil, err
	}
	return &e, nil
}

// ensure registers p's bucket unless this process already knows it is registered. It runs
// before the first item is written into the bucket, so the registry never misses one.
func (r *registry) ensure(ctx context.Context, p partition) error {
	fresh := func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		at, ok := r.known[p]
		return ok && time.Since(at) < knownTTL
	}
	if fresh() {
		return nil
	}
	r.adding.Lock()
	defer r.adding.Unlock()
	if fresh() { // registered by another writer of this process meanwhile
		return nil
	}
	if err := r.add(ctx, p.Dataset, []string{p.Bucket}); err != nil {
		return err
	}
	r.mu.Lock()
	r.known[p] = time.Now()
	r.namesGood = false
	r.mu.Unlock()
	return nil
}

// add merges buckets into the dataset's entry (buckets are only ever added).
func (r *registry) add(ctx context.Context, ds string, buckets []string) error {
	const op = "register buckets"
	pk := azcosmos.NewPartitionKeyString(registryPK(ds))
	return retryConditional(ctx, op, func() error {
		e, err := r.readEntry(ctx, ds)
		if err != nil {
			return err
		}
		if e == nil {
			e = &registryEntry{ID: registryID, PK: registryPK(ds), Kind: "dataset", DatasetName: ds,
				Buckets: slices.Compact(slices.Sorted(slices.Values(buckets))), CreatedAt: gtc.FormatStoredTime(r.s.clock.Now())}
			body, _ := json.Marshal(e)
			_, err := r.s.meta.CreateItem(ctx, pk, body, nil)
			return wrapErr(op, raced(err))
		}
		merged := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(e.Buckets), buckets...))))
		if len(merged) == len(e.Buckets) {
			return nil
		}
		etag := e.ETag
		e.Buckets, e.ETag = merged, ""
		body, _ := json.Marshal(e)
		_, err = r.s.meta.ReplaceItem(ctx, pk, registryID, body, &azcosmos.ItemOptions{IfMatchEtag: etagPtr(etag)})
		return wrapErr(op, raced(err))
	})
}

// remove deletes the dataset's entry (last step of DeleteDataset).
func (r *registry) remove(ctx context.Context, ds string) error {
	_, err := r.s.meta.DeleteItem(ctx, azcosmos.NewPartitionKeyString(registryPK(ds)), registryID, nil)
	r.mu.Lock()
	for p := range r.known {
		if p.Dataset == ds {
			delete(r.known, p)
		}
	}
	r.namesGood = false
	r.mu.Unlock()
	if err != nil && statusOf(err) != http.StatusNotFound {
		return wrapErr("delete registry", err)
	}
	return nil
}

// partitions lists the registered partitions of the datasets a filter selects, sorted.
func (r *registry) partitions(ctx context.Context, names []string, prefix string) ([]partition, error) {
	b := &builder{}
	b.add("c.kind = 'dataset'")
	if len(names) > 0 {
		b.in("c.datasetName", "d", dedupe(names))
	}
	if prefix != "" {
		b.add("STARTSWITH(c.datasetName, " + b.param("prefix", prefix) + ")")
	}
	q := sqlQuery{text: "SELECT c.datasetName, c.buckets FROM c WHERE " + b.where(), params: b.params}
	var out []partition
	err := eachRow(ctx, r.s, r.s.meta, "list registry", q, func(e registryEntry) error {
		for _, bk := range e.Buckets {
			out = append(out, partition{Dataset: e.DatasetName, Bucket: bk})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Dataset != out[j].Dataset {
			return out[i].Dataset < out[j].Dataset
		}
		return out[i].Bucket < out[j].Bucket
	})
	return out, nil
}

// datasetGroups splits partitions sorted by dataset into one run per dataset, in order.
func datasetGroups(parts []partition) [][]partition {
	var out [][]partition
	for i := 0; i < len(parts); {
		j := i + 1
		for j < len(parts) && parts[j].Dataset == parts[i].Dataset {
			j++
		}
		out = append(out, parts[i:j])
		i = j
	}
	return out
}

// datasets lists the registered names that hold at least one visible item, sorted; cached
// for 30 s and invalidated by this process's creates and deletions.
func (r *registry) datasets(ctx context.Context) ([]string, error) {
	r.mu.Lock()
	if r.namesGood && time.Since(r.namesAt) < datasetsTTL {
		out := slices.Clone(r.names)
		r.mu.Unlock()
		return out, nil
	}
	r.mu.Unlock()
	parts, err := r.partitions(ctx, nil, "")
	if err != nil {
		return nil, err
	}
	groups := datasetGroups(parts)
	confirmed := make([]bool, len(groups))
	err = parallel.ForEach(ctx, len(groups), partitionQueryParallel, func(ctx context.Context, i int) error {
		for _, p := range groups[i] {
			b := itemWhere(&p)
			q := sqlQuery{text: "SELECT TOP 1 c.id FROM c WHERE " + b.where(), params: b.params, pk: &p}
			found := false
			err := r.s.rows(ctx, r.s.gt, "confirm dataset", q, func([]byte) error { found = true; return nil })
			if err != nil {
				return err
			}
			if found {
				confirmed[i] = true
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := []string{}
	for i, ps := range groups {
		if confirmed[i] {
			out = append(out, ps[0].Dataset)
		}
	}
	r.mu.Lock()
	r.names, r.namesAt, r.namesGood = slices.Clone(out), time.Now(), true
	r.mu.Unlock()
	return out, nil
}

// ReadMarker returns the migration marker, or nil when there is none.
func (s *Store) ReadMarker(ctx context.Context) (*Marker, error) {
	var m Marker
	found, err := s.readByKey(ctx, s.meta, "pk", markerID, markerID, &m)
	if err != nil || !found {
		return nil, err
	}
	return &m, nil
}

// updateMarker applies fn to the marker (a fresh one when absent) with a conditional write.
func (s *Store) updateMarker(ctx context.Context, fn func(m *Marker)) error {
	const op = "write marker"
	pk := azcosmos.NewPartitionKeyString(markerID)
	return retryConditional(ctx, op, func() error {
		m, err := s.ReadMarker(ctx)
		if err != nil {
			return err
		}
		if m == nil {
			m = &Marker{ID: markerID, PK: markerID, Kind: "marker", IndexVersion: gtc.IndexVersion}
			fn(m)
			body, _ := json.Marshal(m)
			_, err := s.meta.CreateItem(ctx, pk, body, nil)
			return wrapErr(op, raced(err))
		}
		etag := m.ETag
		m.ETag = ""
		fn(m)
		body, _ := json.Marshal(m)
		_, err = s.meta.ReplaceItem(ctx, pk, markerID, body, &azcosmos.ItemOptions{IfMatchEtag: etagPtr(etag)})
		return wrapErr(op, raced(err))
	})
}

// startupRegistry reads the marker and rebuilds the registry when asked to (RebuildRegistry).
// It reports whether the marker says the database is migrated.
func (s *Store) startupRegistry(ctx context.Context) (migrated bool, err error) {
	m, err := s.ReadMarker(ctx)
	if err != nil {
		return false, fmt.Errorf("cosmos: open: reading the migration marker: %w", err)
	}
	migrated = m.migrated()
	now := gtc.FormatStoredTime(s.clock.Now())
	if !migrated {
		n, err := s.count(ctx, s.gt, "count documents", sqlQuery{text: "SELECT VALUE COUNT(1) FROM c"})
		if err != nil {
			return false, fmt.Errorf("cosmos: open: counting documents: %w", err)
		}
		if n == 0 {
			// A new deployment: nothing to migrate, nothing to register.
			err := s.updateMarker(ctx, func(m *Marker) {
				m.MigratedAt, m.RegistryRebuiltAt = now, now
				m.MigratedBy = "gtc " + s.opts.Version
				m.IndexVersion = gtc.IndexVersion
			})
			return err == nil, err
		}
		s.log.Warn("cosmos: the database has not been migrated by this version of gtc; documents without the current index stay invisible until gtc migrate runs", "database", s.opts.Database)
	} else {
		s.log.Info("cosmos: migration marker", "migratedAt", m.MigratedAt, "migratedBy", m.MigratedBy, "registryRebuiltAt", m.RegistryRebuiltAt)
	}
	rebuild := false
	switch s.opts.RebuildRegistry {
	case RebuildAlways:
		rebuild = true
	case RebuildAuto:
		if m == nil || m.RegistryRebuiltAt == "" {
			rebuild = true
		} else {
			entries, err := s.count(ctx, s.meta, "count registry", sqlQuery{text: "SELECT VALUE COUNT(1) FROM c WHERE c.kind = 'dataset'"})
			if err != nil {
				return false, fmt.Errorf("cosmos: open: counting registry entries: %w", err)
			}
			if entries == 0 {
				items, err := s.count(ctx, s.gt, "count items", sqlQuery{text: "SELECT VALUE COUNT(1) FROM c WHERE " + visible})
				if err != nil {
					return false, fmt.Errorf("cosmos: open: counting items: %w", err)
				}
				rebuild = items > 0
			}
		}
	}
	if !rebuild {
		return migrated, nil
	}
	if err := s.RebuildRegistry(ctx); err != nil {
		return false, fmt.Errorf("cosmos: open: rebuilding the dataset registry failed (gtc migrate rebuilds it too): %w", err)
	}
	return migrated, nil
}

// RebuildRegistry registers the partition of every visible item with one cross-partition
// projection scan and records the time on the marker.
func (s *Store) RebuildRegistry(ctx context.Context) error {
	start := time.Now()
	s.log.Info("cosmos: rebuilding the dataset registry", "database", s.opts.Database)
	seen := map[string]map[string]bool{}
	rows := 0
	q := sqlQuery{text: "SELECT c.datasetName, c.bucket FROM c WHERE " + visible}
	type pair struct {
		Dataset string `json:"datasetName"`
		Bucket  string `json:"bucket"`
	}
	err := eachRow(ctx, s, s.gt, "rebuild registry", q, func(p pair) error {
		if seen[p.Dataset] == nil {
			seen[p.Dataset] = map[string]bool{}
		}
		seen[p.Dataset][p.Bucket] = true
		rows++
		if rows%100000 == 0 {
			s.log.Info("cosmos: registry rebuild progress", "items", rows, "datasets", len(seen))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for ds, buckets := range seen {
		list := make([]string, 0, len(buckets))
		for b := range buckets {
			list = append(list, b)
		}
		if err := s.registry.add(ctx, ds, list); err != nil {
			return err
		}
	}
	s.registry.invalidate()
	now := gtc.FormatStoredTime(s.clock.Now())
	if err := s.updateMarker(ctx, func(m *Marker) { m.RegistryRebuiltAt = now }); err != nil {
		return err
	}
	s.log.Info("cosmos: dataset registry rebuilt", "items", rows, "datasets", len(seen), "duration_ms", time.Since(start).Milliseconds())
	return nil
}

// background runs while the database is not migrated: it logs how many documents still
// await gtc migrate, now and every 10 minutes, until the marker says the database is migrated.
func (s *Store) background(ctx context.Context) {
	defer close(s.bgDone)
	s.logUnmigrated(ctx)
	t := time.NewTicker(10 * time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if m, err := s.ReadMarker(ctx); err == nil && m.migrated() {
				return
			}
			s.logUnmigrated(ctx)
		}
	}
}

func (s *Store) logUnmigrated(ctx context.Context) {
	if n, err := s.count(ctx, s.gt, "count unmigrated", pendingQuery()); err == nil && n > 0 {
		s.log.Warn("cosmos: documents await gtc migrate and stay invisible until it runs", "documents", n, "database", s.opts.Database)
	}
}
