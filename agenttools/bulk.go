package agenttools

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/tagging"
)

// TagSaver is the tag save path the bulk operations write through: many items at once, each
// standing or falling alone; *gtc.Curator implements it.
type TagSaver interface {
	SetManualTagsEach(ctx context.Context, changes []gtc.ManualTagsChange) ([]*gtc.Item, []error)
}

// BulkOptions are the limits of the writing agent tools.
type BulkOptions struct {
	MaxItems         int           // GTC_AGENT_MAX_ITEMS
	PreviewTTL       time.Duration // GTC_AGENT_PREVIEW_TTL
	CacheSize        int           // GTC_AGENT_PREVIEW_CACHE_SIZE: previews kept in the store
	CacheItems       int           // GTC_AGENT_PREVIEW_CACHE_ITEMS: change entries across them
	PerUser          int           // GTC_AGENT_PREVIEWS_PER_USER
	WritesPerSecond  int           // GTC_AGENT_WRITES_PER_SECOND
	MaxConcurrentOps int           // GTC_AGENT_MAX_CONCURRENT_OPS
	WriteRetries     int           // GTC_AGENT_WRITE_RETRIES
	ToolTimeout      time.Duration // GTC_AGENT_TOOL_TIMEOUT
	ExecWait         time.Duration // GTC_AGENT_EXEC_WAIT
	WriteRoles       []string      // GTC_AGENT_WRITE_ROLES; empty = any caller
	// ShutdownGrace is how long running executions may go on after Close (30 s).
	ShutdownGrace time.Duration
	// LeaseTTL is how long an execution's tag locks last without renewal (30 s); the
	// execution renews them every third of it.
	LeaseTTL time.Duration
}

// DefaultBulkOptions are the defaults of the GTC_AGENT_* settings.
func DefaultBulkOptions() BulkOptions {
	return BulkOptions{MaxItems: 10000, PreviewTTL: 15 * time.Minute, CacheSize: 256, CacheItems: 200000, PerUser: 16,
		WritesPerSecond: 50, MaxConcurrentOps: 4, WriteRetries: 3, ToolTimeout: 30 * time.Second, ExecWait: 60 * time.Second,
		ShutdownGrace: 30 * time.Second, LeaseTTL: 30 * time.Second}
}

// BulkDeps are what the bulk tag operations use.
type BulkDeps struct {
	Items gtc.ItemStore
	Saver TagSaver
	Audit gtc.AgentOperationStore
	// Leases hold the executions' tag locks, where every server of the store sees them.
	Leases gtc.LeaseStore
	// Previews keep the dry runs, where an execution on every server of the store finds
	// them.
	Previews gtc.AgentPreviewStore
	Pipeline *tagging.Pipeline
	// Known returns the tag vocabulary (the manual-tag providers).
	Known func(ctx context.Context) ([]string, error)
	Clock gtc.Clock
	// Entropy feeds the random part of preview and operation ids; nil is crypto/rand.
	Entropy io.Reader
	// Sleep waits d or until ctx ends; nil is a real timer. Tests with a fake clock pass
	// one that advances it.
	Sleep func(ctx context.Context, d time.Duration) error
	Log   *slog.Logger
}

// Bulk runs the writing agent tools: previews, executions, the audit log and undo. It is
// safe for concurrent use.
type Bulk struct {
	items          gtc.ItemStore
	saver          TagSaver
	audit          gtc.AgentOperationStore
	leases         gtc.LeaseStore
	previews       gtc.AgentPreviewStore
	pipe           *tagging.Pipeline
	reg            *tagging.Registry
	known          func(ctx context.Context) ([]string, error)
	clock          gtc.Clock
	sleep          func(ctx context.Context, d time.Duration) error
	log            *slog.Logger
	opts           BulkOptions
	computedGroups map[string]bool

	idMu    sync.Mutex
	entropy io.Reader

	mu      sync.Mutex
	running map[string]*execution // by operation id
	closed  bool
	// swept is when expired previews were last deleted (sweepPreviews).
	swept time.Time

	limiter *tokenBucket
	baseCtx context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// NewBulk returns the bulk tag operations service.
func NewBulk(d BulkDeps, o BulkOptions) *Bulk {
	def := DefaultBulkOptions()
	for _, x := range []struct{ v, def *int }{{&o.MaxItems, &def.MaxItems}, {&o.CacheSize, &def.CacheSize},
		{&o.CacheItems, &def.CacheItems}, {&o.PerUser, &def.PerUser}, {&o.WritesPerSecond, &def.WritesPerSecond},
		{&o.MaxConcurrentOps, &def.MaxConcurrentOps}, {&o.WriteRetries, &def.WriteRetries}} {
		if *x.v <= 0 {
			*x.v = *x.def
		}
	}
	for _, x := range []struct{ v, def *time.Duration }{{&o.PreviewTTL, &def.PreviewTTL}, {&o.ToolTimeout, &def.ToolTimeout},
		{&o.ExecWait, &def.ExecWait}, {&o.ShutdownGrace, &def.ShutdownGrace}, {&o.LeaseTTL, &def.LeaseTTL}} {
		if *x.v <= 0 {
			*x.v = *x.def
		}
	}
	if d.Clock == nil {
		d.Clock = gtc.SystemClock{}
	}
	if d.Entropy == nil {
		d.Entropy = rand.Reader
	}
	if d.Sleep == nil {
		d.Sleep = realSleep
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Known == nil {
		d.Known = func(context.Context) ([]string, error) { return nil, nil }
	}
	reg := d.Pipeline.Registry()
	groups := map[string]bool{}
	for _, k := range reg.StaticKeys() {
		g, _, _ := strings.Cut(k, ":")
		groups[g] = true
	}
	for _, p := range reg.DynamicPrefixes() {
		groups[strings.TrimSuffix(p, ":")] = true
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Bulk{items: d.Items, saver: d.Saver, audit: d.Audit, leases: d.Leases, previews: d.Previews, pipe: d.Pipeline, reg: reg, known: d.Known,
		clock: d.Clock, sleep: d.Sleep, log: d.Log, opts: o, computedGroups: groups, entropy: ulid.Monotonic(d.Entropy, 0),
		running: map[string]*execution{},
		limiter: newTokenBucket(o.WritesPerSecond, d.Clock, d.Sleep), baseCtx: ctx, cancel: cancel}
}

func realSleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *Bulk) now() time.Time { return b.clock.Now().UTC().Truncate(time.Microsecond) }

// newID returns prefix + a ULID (26 Crockford base-32 characters, sortable by time).
func (b *Bulk) newID(prefix string) string {
	b.idMu.Lock()
	defer b.idMu.Unlock()
	id, err := ulid.New(ulid.Timestamp(b.clock.Now()), b.entropy)
	if err != nil {
		// The entropy source failed (crypto/rand does not); fall back to the system's.
		id = ulid.MustNew(ulid.Timestamp(b.clock.Now()), rand.Reader)
	}
	return prefix + id.String()
}

// knownSet returns the vocabulary as a set.
func (b *Bulk) knownSet(ctx context.Context) (map[string]bool, error) {
	tags, err := b.known(ctx)
	if err != nil {
		return nil, err
	}
	m := make(map[string]bool, len(tags))
	for _, t := range tags {
		m[t] = true
	}
	return m, nil
}

// canWrite applies GTC_AGENT_WRITE_ROLES.
func (b *Bulk) canWrite(c gtc.Caller) bool {
	if len(b.opts.WriteRoles) == 0 {
		return true
	}
	for _, r := range b.opts.WriteRoles {
		if c.HasRole(strings.ToLower(r)) {
			return true
		}
	}
	return false
}

// ManageTags is the manage_tags tool.
func (b *Bulk) ManageTags(ctx context.Context, call ToolCall, args map[string]any) ToolResult {
	known, err := b.knownSet(ctx)
	if err != nil {
		return b.internal(ctx, "read the tag vocabulary", err, false)
	}
	a, bad := b.parseManageArgs(args, known)
	if bad != nil {
		return *bad
	}
	if !argBool(args, "dry_run", true) {
		return b.execute(ctx, call, a, nil)
	}
	rctx, cancel := context.WithTimeout(ctx, b.opts.ToolTimeout)
	defer cancel()
	if r, err := checkDataset(rctx, b.items, a.Dataset); err != nil {
		return b.readFailure(rctx, "list datasets", err)
	} else if r != nil {
		return *r
	}
	p, err := b.planManage(rctx, a)
	if err != nil {
		return b.planFailure(rctx, err)
	}
	for _, t := range []string{a.Tag, a.TagTo} {
		if t != "" && (a.Operation != "delete_tag") && !known[t] {
			p.notes = append(p.notes, "Note: '"+t+"' is not in the tag vocabulary (new tag).")
		}
	}
	return b.storePreview(ctx, call, p)
}

// UndoTagOperation is the undo_tag_operation tool.
func (b *Bulk) UndoTagOperation(ctx context.Context, call ToolCall, args map[string]any) ToolResult {
	a := opArgs{Tool: ToolUndoTagOperation, Operation: gtc.AgentKindUndo, OperationID: argString(args, "operation_id")}
	rctx, cancel := context.WithTimeout(ctx, b.opts.ToolTimeout)
	defer cancel()
	target, bad := b.undoTarget(rctx, call, a.OperationID)
	if bad != nil {
		return *bad
	}
	if !argBool(args, "dry_run", true) {
		return b.execute(ctx, call, a, target)
	}
	p, err := b.planUndo(rctx, a, target)
	if err != nil {
		return b.planFailure(rctx, err)
	}
	return b.storePreview(ctx, call, p)
}

// undoTarget reads the operation an undo names and applies the undo checks, in order.
func (b *Bulk) undoTarget(ctx context.Context, call ToolCall, id string) (*gtc.AgentOperation, *ToolResult) {
	op, err := b.audit.Get(ctx, id)
	if errors.Is(err, gtc.ErrNotFound) {
		r := ToolFailure(CodeNotFound, "No tag operation "+id+". list_tag_operations shows the executed ones.", nil)
		return nil, &r
	}
	if err != nil {
		r := b.readFailure(ctx, "read the operation", err)
		return nil, &r
	}
	extra := map[string]any{"operationId": op.OperationID}
	switch {
	case op.Status == gtc.AgentOpRunning:
		r := ToolFailure(CodeOperationRunning, "Not undone: "+op.OperationID+" is still running; try again when it has finished.", extra)
		return nil, &r
	case op.UndoneBy != nil:
		extra["undoneBy"] = *op.UndoneBy
		r := ToolFailure(CodeAlreadyUndone, "Not undone: "+op.OperationID+" was already undone by "+*op.UndoneBy+".", extra)
		return nil, &r
	case op.Counts.Applied == 0:
		r := ToolFailure(CodeNothingToUndo, "Nothing to undo: "+op.OperationID+" changed no items.", extra)
		return nil, &r
	case op.Actor != call.Caller.UserID && !call.Caller.Role.Includes(gtc.RoleAdmin):
		r := ToolFailure(CodeForbidden, "Forbidden: "+op.OperationID+" was run by "+op.Actor+"; undoing another user's operation needs the admin role.", nil)
		return nil, &r
	}
	return op, nil
}

// storePreview keeps a preview of p in the store (unless it changes nothing) and answers
// it.
func (b *Bulk) storePreview(ctx context.Context, call ToolCall, p *plan) ToolResult {
	now := b.now()
	var pv *gtc.AgentPreview
	if len(p.changes) > 0 {
		ctx, cancel := context.WithTimeout(ctx, b.opts.ToolTimeout)
		defer cancel()
		data, err := encodePlan(p)
		if err != nil {
			return b.readFailure(ctx, "keep the preview", err)
		}
		kept, err := b.previews.Put(ctx, gtc.AgentPreview{ID: b.newID("pv_"), Caller: call.Caller.UserID, Hash: p.args.hash(),
			CreatedAt: now, ExpiresAt: now.Add(b.opts.PreviewTTL), State: gtc.AgentPreviewOpen, Changes: len(p.changes), Plan: data},
			gtc.AgentPreviewBounds{PerUser: b.opts.PerUser, Total: b.opts.CacheSize, TotalChanges: b.opts.CacheItems})
		if err != nil {
			return b.readFailure(ctx, "keep the preview", err)
		}
		pv = &kept
		if running := b.lockHolder(ctx, lockNames(p.args)); running != "" {
			p.notes = append(p.notes, "Warning: operation "+running+" on the same tag is running now; an execution will wait for it (TAG_BUSY).")
		}
	}
	return previewResult(p, pv)
}

func (b *Bulk) planFailure(ctx context.Context, err error) ToolResult {
	var tm errTooMany
	if errors.As(err, &tm) {
		return ToolFailure(CodeTooManyItems,
			"Refused: more than "+Count(tm.count)+" items would change, over the limit of "+Count(b.opts.MaxItems)+
				" per operation. Narrow it by dataset, status or tags and preview again.",
			map[string]any{"limit": b.opts.MaxItems, "count": tm.count + 1})
	}
	return b.readFailure(ctx, "work out the preview", err)
}

// readFailure answers a read or preview that failed (TIMEOUT or INTERNAL); nothing changed.
func (b *Bulk) readFailure(ctx context.Context, what string, err error) ToolResult {
	return readFault(ctx, b.log, b.opts.ToolTimeout, what, err)
}

// internal answers an unexpected fault, saying whether anything changed.
func (b *Bulk) internal(ctx context.Context, what string, err error, changed bool) ToolResult {
	return internalFault(ctx, b.log, what, err, changed)
}

func isNotFound(err error) bool { return errors.Is(err, gtc.ErrNotFound) }

// ListTagOperations is the list_tag_operations tool.
func (b *Bulk) ListTagOperations(ctx context.Context, call ToolCall, args map[string]any) ToolResult {
	ctx, cancel := context.WithTimeout(ctx, b.opts.ToolTimeout)
	defer cancel()
	if id := argString(args, "operation_id"); id != "" {
		op, err := b.audit.Get(ctx, id)
		if errors.Is(err, gtc.ErrNotFound) {
			return ToolFailure(CodeNotFound, "No tag operation "+id+".", nil)
		}
		if err != nil {
			return b.readFailure(ctx, "read the operation", err)
		}
		items, err := b.audit.Items(ctx, id, maxEntryItems+1)
		if err != nil {
			return b.readFailure(ctx, "read the operation's items", err)
		}
		return operationResult(op, items)
	}
	f := gtc.AgentOpFilter{Limit: argInt(args, "limit", 10)}
	if argBool(args, "mine_only", false) {
		f.Actor = call.Caller.UserID
	}
	if t := argString(args, "tag"); t != "" {
		n, err := tagging.NormalizeFilterTag(t)
		if err != nil {
			return ToolFailure(CodeInvalidTag, err.Error(), map[string]any{"fields": []FieldProblem{{Field: "tag", Message: err.Error()}}})
		}
		f.Tag = n
	}
	ops, total, err := b.audit.List(ctx, f)
	if err != nil {
		return b.readFailure(ctx, "list the operations", err)
	}
	return operationsResult(ops, total, f)
}
