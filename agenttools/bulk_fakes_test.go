package agenttools

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/sqlite"
	"github.com/gtc-dev/gtc/tagging"
)

// memAudit is an in-memory audit log with the contract of gtc.AgentOperationStore; the
// stores' own implementations are proven by conformance behaviour 36.
type memAudit struct {
	mu    sync.Mutex
	ops   map[string]*gtc.AgentOperation
	items map[string][]gtc.AgentOpItem
}

func newMemAudit() *memAudit {
	return &memAudit{ops: map[string]*gtc.AgentOperation{}, items: map[string][]gtc.AgentOpItem{}}
}

func (m *memAudit) Create(_ context.Context, op *gtc.AgentOperation) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ops[op.OperationID] != nil {
		return gtc.ErrConflict
	}
	c := *op
	m.ops[op.OperationID] = &c
	return nil
}

func (m *memAudit) Get(_ context.Context, id string) (*gtc.AgentOperation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	op := m.ops[id]
	if op == nil {
		return nil, gtc.ErrNotFound
	}
	c := *op
	return &c, nil
}

func (m *memAudit) Update(_ context.Context, op *gtc.AgentOperation) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := m.ops[op.OperationID]
	if cur == nil {
		return gtc.ErrNotFound
	}
	cur.Status, cur.Counts, cur.FinishedAt = op.Status, op.Counts, op.FinishedAt
	return nil
}

func (m *memAudit) SetUndoneBy(_ context.Context, id, undoID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := m.ops[id]
	if cur == nil {
		return gtc.ErrNotFound
	}
	if cur.UndoneBy != nil {
		return gtc.ErrConflict
	}
	cur.UndoneBy = &undoID
	return nil
}

func (m *memAudit) PutItems(_ context.Context, id string, first int, items []gtc.AgentOpItem) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := m.items[id]
	if first > len(cur) {
		return fmt.Errorf("gap: first %d after %d items", first, len(cur))
	}
	for i, it := range items {
		if first+i < len(cur) {
			cur[first+i] = it
		} else {
			cur = append(cur, it)
		}
	}
	m.items[id] = cur
	return nil
}

func (m *memAudit) Items(_ context.Context, id string, limit int) ([]gtc.AgentOpItem, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := slices.Clone(m.items[id])
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (m *memAudit) List(_ context.Context, f gtc.AgentOpFilter) ([]*gtc.AgentOperation, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var all []*gtc.AgentOperation
	for _, op := range m.ops {
		if (f.Actor == "" || op.Actor == f.Actor) && (f.Tag == "" || slices.Contains(op.Tags, f.Tag)) {
			c := *op
			all = append(all, &c)
		}
	}
	slices.SortFunc(all, func(a, b *gtc.AgentOperation) int {
		if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(b.OperationID, a.OperationID)
	})
	total := len(all)
	if f.Limit > 0 && len(all) > f.Limit {
		all = all[:f.Limit]
	}
	return all, total, nil
}

func (m *memAudit) Running(context.Context) ([]*gtc.AgentOperation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*gtc.AgentOperation
	for _, op := range m.ops {
		if op.Status == gtc.AgentOpRunning {
			c := *op
			out = append(out, &c)
		}
	}
	return out, nil
}

func (m *memAudit) DeleteBefore(_ context.Context, t time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id, op := range m.ops {
		if op.Status != gtc.AgentOpRunning && op.StartedAt.Before(t) {
			delete(m.ops, id)
			delete(m.items, id)
			n++
		}
	}
	return n, nil
}

// spySaver wraps the tag save path: before runs ahead of each item's write (an edit between
// the preview and the write, or a failure to inject, which becomes that item's result);
// calls counts the items.
type spySaver struct {
	next   TagSaver
	mu     sync.Mutex
	calls  int
	before func(k gtc.Key, call int) error
}

func (s *spySaver) SetManualTagsEach(ctx context.Context, changes []gtc.ManualTagsChange) ([]*gtc.Item, []error) {
	out := make([]*gtc.Item, len(changes))
	errs := make([]error, len(changes))
	var pass []gtc.ManualTagsChange
	var at []int
	for i, ch := range changes {
		s.mu.Lock()
		s.calls++
		n := s.calls
		hook := s.before
		s.mu.Unlock()
		if hook != nil {
			if errs[i] = hook(ch.Key, n); errs[i] != nil {
				continue
			}
		}
		pass = append(pass, ch)
		at = append(at, i)
	}
	if len(pass) > 0 {
		written, werrs := s.next.SetManualTagsEach(ctx, pass)
		for n, i := range at {
			out[i], errs[i] = written[n], werrs[n]
		}
	}
	return out, errs
}

func (s *spySaver) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// bulkEnv is a bulk service over a real SQLite file, a fake clock whose sleeps advance it,
// and the in-memory audit log.
type bulkEnv struct {
	t       *testing.T
	store   *sqlite.Store
	cur     *gtc.Curator
	pipe    *tagging.Pipeline
	clock   *gtc.FakeClock
	audit   *memAudit
	saver   *spySaver
	bulk    *Bulk
	known   []string
	slept   time.Duration
	sleepMu sync.Mutex
}

var errTransient = fmt.Errorf("injected: %w", gtc.ErrUnavailable)

func newBulkEnv(t *testing.T, opts BulkOptions) *bulkEnv {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(t.TempDir(), "gtc.db"), Synchronous: "NORMAL"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	reg := defaultRegistry(t)
	vals, err := tagging.NewValidators([]string{"exclusive_group"}, defaultGroups(t).Schema())
	require.NoError(t, err)
	pipe := tagging.NewPipeline(reg, vals, nil)
	clock := gtc.NewFakeClock(time.Date(2025, 11, 21, 10, 0, 0, 0, time.UTC))
	cur := gtc.NewCurator(gtc.CuratorDeps{Store: st, Tagger: pipe, Clock: clock})
	e := &bulkEnv{t: t, store: st, cur: cur, pipe: pipe, clock: clock, audit: newMemAudit(), known: []string{"topic:install", "source:sa", "source:sme"}}
	e.saver = &spySaver{next: cur}
	if opts.ExecWait == 0 {
		opts.ExecWait = 10 * time.Second
	}
	if opts.WritesPerSecond == 0 {
		opts.WritesPerSecond = 1_000_000
	}
	e.bulk = NewBulk(BulkDeps{Items: readOnlyItems{st.Items()}, Saver: e.saver, Audit: e.audit, Leases: st.Leases(), Previews: st.AgentPreviews(), Pipeline: pipe, Clock: clock,
		Known: func(context.Context) ([]string, error) { return e.known, nil },
		Sleep: func(ctx context.Context, d time.Duration) error {
			e.sleepMu.Lock()
			e.slept += d
			e.sleepMu.Unlock()
			clock.Advance(d)
			return ctx.Err()
		}}, opts)
	t.Cleanup(func() { e.bulk.Close(context.Background()) })
	return e
}

// kept reports whether user has a preview of the merge of from into to in e's store.
func (e *bulkEnv) kept(user, from, to string) bool {
	e.t.Helper()
	_, err := e.store.AgentPreviews().Get(context.Background(), user,
		opArgs{Tool: ToolManageTags, Operation: "merge_tags", TagFrom: from, TagTo: to}.hash())
	if err != nil {
		require.ErrorIs(e.t, err, gtc.ErrNotFound)
	}
	return err == nil
}

// add creates an item of dataset ds with one user turn msg and the manual tags.
func (e *bulkEnv) add(ds, id, msg string, manual ...string) *gtc.Item {
	e.t.Helper()
	it := gtc.NewItem(ds, id)
	it.History = []gtc.HistoryEntry{{Role: "user", Msg: msg}, {Role: "assistant", Msg: "answer"}}
	out, err := e.cur.CreateItem(context.Background(), it, manual)
	require.NoError(e.t, err)
	return out
}

func (e *bulkEnv) get(it *gtc.Item) *gtc.Item {
	e.t.Helper()
	out, err := e.store.Items().Get(context.Background(), it.Key())
	require.NoError(e.t, err)
	return out
}

// edit changes an item's comment as a curator would, through a conditional write.
func (e *bulkEnv) edit(k gtc.Key, comment string, addTag string) *gtc.Item {
	e.t.Helper()
	out, err := gtc.Update(context.Background(), e.store.Items(), k, func(cur *gtc.Item) (*gtc.Item, error) {
		cur.Comment = comment
		if addTag != "" {
			if _, err := e.pipe.Prepare(cur, append(slices.Clone(cur.ManualTags), addTag), true); err != nil {
				return nil, err
			}
		}
		cur.UpdatedAt = e.clock.Now()
		return cur, nil
	})
	require.NoError(e.t, err)
	return out
}

// caller is a curator, or an admin when one of roles is admin.
func caller(user string, roles ...string) ToolCall {
	role := gtc.RoleCurator
	if slices.Contains(roles, "admin") {
		role = gtc.RoleAdmin
	}
	return ToolCall{Caller: gtc.Caller{UserID: user, Role: role, Roles: roles}, Via: "http", UserAgent: "test"}
}

func dataOf(t *testing.T, r ToolResult) map[string]any {
	t.Helper()
	m, ok := r.Data.(map[string]any)
	require.True(t, ok, "data is %T", r.Data)
	return m
}

func errCode(r ToolResult) string {
	m, _ := r.Data.(map[string]any)
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// readOnlyItems is the item store the bulk service reads through: any write fails the
// test, so every tool write provably goes through the tag save path (the Saver).
type readOnlyItems struct{ gtc.ItemStore }

var errWriteBypass = errors.New("a tool wrote around the tag save path")

func (readOnlyItems) Create(context.Context, *gtc.Item) (*gtc.Item, error) {
	return nil, errWriteBypass
}
func (readOnlyItems) Replace(context.Context, *gtc.Item, *gtc.Item) (*gtc.Item, error) {
	return nil, errWriteBypass
}
func (readOnlyItems) ReplaceEach(_ context.Context, pairs []gtc.Replacement) ([]*gtc.Item, []error) {
	errs := make([]error, len(pairs))
	for i := range errs {
		errs[i] = errWriteBypass
	}
	return make([]*gtc.Item, len(pairs)), errs
}
func (readOnlyItems) DeleteDataset(context.Context, string) (gtc.DatasetDeletion, error) {
	return gtc.DatasetDeletion{}, errWriteBypass
}
