package gtc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// Curator is the curation service: it applies the domain rules to every read and write the
// API and the commands make. It holds no state of its own beyond its dependencies.
type Curator struct {
	store          Store
	tagger         Tagger
	vocab          TagVocabulary
	clock          Clock
	ids            *IDGenerator
	log            *slog.Logger
	recomputeBatch int
	selfServe      SelfServeOptions
	rand           *lockedRand
	importScreen   ImportScreen
}

// CuratorDeps are the dependencies of the curation service.
type CuratorDeps struct {
	Store      Store
	Tagger     Tagger
	Vocabulary TagVocabulary
	Clock      Clock
	IDs        *IDGenerator
	Log        *slog.Logger // nil discards
	// RecomputeBatch is the page size of recompute (GTC_RECOMPUTE_BATCH_SIZE, default 200).
	RecomputeBatch int
	// SelfServe configures self-serve; a zero DefaultLimit means 10.
	SelfServe SelfServeOptions
	// Rand draws self-serve samples when the store has no sampler of its own; nil seeds
	// one from the system.
	Rand *rand.Rand
	// ImportScreen adds the informational warnings of bulk import (PII, duplicates); nil
	// gives none.
	ImportScreen ImportScreen
}

// NewCurator returns a curation service over the given dependencies.
func NewCurator(d CuratorDeps) *Curator {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Clock == nil {
		d.Clock = SystemClock{}
	}
	if d.RecomputeBatch <= 0 {
		d.RecomputeBatch = 200
	}
	if d.SelfServe.DefaultLimit <= 0 {
		d.SelfServe.DefaultLimit = 10
	}
	if d.Rand == nil {
		d.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return &Curator{store: d.Store, tagger: d.Tagger, vocab: d.Vocabulary, clock: d.Clock, ids: d.IDs, log: d.Log,
		recomputeBatch: d.RecomputeBatch, selfServe: d.SelfServe, rand: &lockedRand{r: d.Rand}, importScreen: d.ImportScreen}
}

// Vocabulary returns the tag vocabulary the service uses.
func (c *Curator) Vocabulary() TagVocabulary { return c.vocab }

// Store returns the service's store.
func (c *Curator) Store() Store { return c.store }

func (c *Curator) now() time.Time { return c.clock.Now().UTC().Truncate(time.Microsecond) }

// itemNotFound is the 404 every item route answers.
func itemNotFound() *Error { return &Error{Code: CodeNotFound, Message: MsgItemNotFound} }

// storeError turns the store's sentinel errors into user errors where the user can act on
// them; anything else is returned wrapped for the HTTP layer to log.
func storeError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotFound):
		return itemNotFound()
	case errors.Is(err, ErrPreconditionFailed):
		return &Error{Code: CodeETagMismatch, Message: MsgETagMismatch}
	case errors.Is(err, ErrConcurrentModification):
		return &Error{Code: CodeConcurrentModification, Message: MsgConcurrentModification}
	case errors.Is(err, ErrTooLarge):
		return &Error{Code: CodeItemTooLarge, Message: MsgItemTooLarge}
	}
	return err
}

// GetItem returns the item stored under k.
func (c *Curator) GetItem(ctx context.Context, k Key) (*Item, error) {
	it, err := c.store.Items().Get(ctx, k)
	if err != nil {
		return nil, storeError(err)
	}
	return it, nil
}

// SaveRoute tells UpdateItem which PUT it serves; the two differ in ownership, approval
// stamping and assignment effects.
type SaveRoute int

// The two item PUT routes.
const (
	CuratorRoute SaveRoute = iota
	AssignmentRoute
)

// UpdateItem applies an item PUT. ifMatch is the If-Match header ("" when absent). The first
// failing step answers and nothing is written.
func (c *Curator) UpdateItem(ctx context.Context, k Key, patch *ItemPatch, ifMatch string, route SaveRoute) (*Item, error) {
	if route == AssignmentRoute {
		ctx = WithChange(ctx, Change{Source: SourceAssignment})
	}
	caller := CallerFrom(ctx)
	// 2. Load.
	cur, err := c.store.Items().Get(ctx, k)
	if err != nil {
		return nil, storeError(err)
	}
	// 3. Output-only keys.
	if patch.HasComputedTags || patch.HasTags {
		var fields []FieldError
		if patch.HasComputedTags {
			fields = append(fields, FieldError{Field: "computedTags", Message: "computedTags cannot be set directly; they are system-generated"})
		}
		if patch.HasTags {
			fields = append(fields, FieldError{Field: "tags", Message: "'tags' field is deprecated; use 'manualTags' instead"})
		}
		return nil, FieldsError(CodeFieldNotAllowed, fields)
	}
	// 4. Ownership (assignment route).
	if route == AssignmentRoute && cur.AssignedTo != nil && *cur.AssignedTo != "" && *cur.AssignedTo != caller.UserID {
		return nil, &Error{Code: CodeAssignmentOwnership, Message: "ASSIGNMENT_OWNERSHIP"}
	}
	// 5. ETag presence.
	token := strings.TrimSpace(ifMatch)
	if token == "" && patch.ETag.Set && !patch.ETag.Null {
		token = strings.TrimSpace(patch.ETag.V)
	}
	if token == "" {
		return nil, &Error{Code: CodeETagRequired, Message: MsgETagRequired}
	}
	now := c.now()
	// 6. Apply the fields.
	next := cur.Clone()
	manual, err := c.applyPatch(next, patch, route, caller, now)
	if err != nil {
		return nil, err
	}
	// 7. Tag pipeline with validation.
	if _, err := c.tagger.Prepare(next, manual, true); err != nil {
		return nil, tagError(err, "")
	}
	// 8. Approval rules on every save that ends approved.
	if next.Status == StatusApproved {
		if fails := ApprovalErrors(next); len(fails) > 0 {
			return nil, ApprovalError(fails)
		}
	}
	// 9. Server fields.
	next.UpdatedAt = now
	if route == AssignmentRoute && (next.Status == StatusApproved || next.Status == StatusDeleted) {
		next.AssignedTo = nil
		next.AssignedAt = nil
	}
	// 10. Conditional write on the presented token. A token that does not name what was read
	// is passed through so the store's compare-and-swap refuses it.
	prev := cur
	if !SameETag(token, cur.ETag) {
		prev = cur.Clone()
		prev.ETag = token
	}
	out, err := c.store.Items().Replace(ctx, prev, next)
	if err != nil {
		return nil, storeError(err)
	}
	return out, nil
}

// applyPatch is step 6: it applies the present keys to it and returns the raw manual tags
// the pipeline must use. Every semantic problem is listed; the code is the first one's.
func (c *Curator) applyPatch(it *Item, p *ItemPatch, route SaveRoute, caller Caller, now time.Time) ([]string, error) {
	type problem struct {
		code  string
		field string
		msg   string
	}
	var probs []problem
	add := func(code, field, msg string) { probs = append(probs, problem{code, field, msg}) }

	statusSent := false
	raw := it.ManualTags
	for _, key := range p.Keys {
		switch key {
		case "status":
			if p.Status.Null {
				add(CodeInvalidField, "status", "status cannot be null; omit the field to leave it unchanged")
			} else if st := Status(p.Status.V); !st.Valid() {
				add(CodeInvalidStatus, "status", fmt.Sprintf("Invalid status value: %s. Must be one of: %s", p.Status.V, StatusList))
			} else {
				it.Status = st
				statusSent = true
			}
		case "comment":
			it.Comment = p.Comment.V
		case "scenarioId":
			it.ScenarioID = p.ScenarioID.V
		case "history":
			hist := make([]HistoryEntry, 0, len(p.History.V))
			for i, h := range p.History.V {
				msg := ""
				if h.Msg != nil {
					msg = strings.TrimSpace(*h.Msg)
				}
				if msg == "" {
					add(CodeInvalidField, fmt.Sprintf("history[%d].msg", i), "history entries must include a non-empty msg")
				}
				role := strings.TrimSpace(h.Role)
				if role == "" {
					add(CodeInvalidField, fmt.Sprintf("history[%d].role", i), "history entries must include a non-empty role")
				}
				e := HistoryEntry{Role: role, Msg: msg, TurnID: h.TurnID, StepID: h.StepID}
				if h.ExpectedBehaviorSet {
					if !h.ExpectedBehaviorOK {
						add(CodeInvalidField, fmt.Sprintf("history[%d].expectedBehavior", i), "history expectedBehavior must be a list when provided")
					} else {
						e.ExpectedBehavior = h.ExpectedBehavior
					}
				}
				hist = append(hist, e)
			}
			it.History = hist
		case "contextEntries":
			it.ContextEntries = p.ContextEntries.V
		case "toolCalls":
			it.ToolCalls = p.ToolCalls.V
		case "expectedTools":
			if p.ExpectedTools.Null {
				add(CodeInvalidField, "expectedTools", "expectedTools cannot be null; omit the field to leave it unchanged")
			} else {
				it.ExpectedTools = p.ExpectedTools.V
			}
		case "feedback":
			it.Feedback = p.Feedback.V
		case "metadata":
			it.Metadata = p.Metadata.V
		case "plugins":
			it.Plugins = p.Plugins.V
		case "traceIds":
			it.TraceIDs = p.TraceIDs.V
		case "tracePayload":
			it.TracePayload = p.TracePayload.V
		case "manualTags":
			raw = p.ManualTags.V
		}
	}
	// Manual tags are normalized last, so their format problems follow the others.
	if p.ManualTags.Set {
		if _, err := c.tagger.NormalizeManual(raw); err != nil {
			var fe *TagFormatError
			if !errors.As(err, &fe) {
				return nil, err
			}
			for _, tp := range fe.Problems {
				add(CodeInvalidTagFormat, fmt.Sprintf("manualTags[%d]", tp.Index), tp.Message)
			}
		}
	}
	if len(probs) > 0 {
		fields := make([]FieldError, len(probs))
		for i, pr := range probs {
			fields[i] = FieldError{Field: pr.field, Message: pr.msg}
		}
		return nil, &Error{Code: probs[0].code, Message: probs[0].msg, Fields: fields}
	}
	// Final status and approval stamps.
	stamp := false
	switch route {
	case CuratorRoute:
		stamp = statusSent && it.Status == StatusApproved
	case AssignmentRoute:
		if !statusSent && p.Approve.Set && p.Approve.V {
			it.Status = StatusApproved
		}
		stamp = it.Status == StatusApproved
	}
	if stamp {
		t := now
		it.ReviewedAt = &t
		u := caller.UserID
		it.UpdatedBy = &u
	}
	it.FillDefaults()
	return raw, nil
}

// tagError maps tag pipeline errors to the PUT answers (400); prefix is prepended to the
// field paths (import uses "[n].").
func tagError(err error, prefix string) error {
	var fe *TagFormatError
	if errors.As(err, &fe) {
		fields := make([]FieldError, len(fe.Problems))
		for i, p := range fe.Problems {
			fields[i] = FieldError{Field: fmt.Sprintf("%smanualTags[%d]", prefix, p.Index), Message: p.Message}
		}
		return FieldsError(CodeInvalidTagFormat, fields)
	}
	var re *TagRuleError
	if errors.As(err, &re) {
		fields := make([]FieldError, len(re.Messages))
		for i, m := range re.Messages {
			fields[i] = FieldError{Field: prefix + "manualTags", Message: m}
		}
		return &Error{Code: CodeTagRuleViolation, Message: strings.Join(re.Messages, "; "), Fields: fields}
	}
	return err
}

// DeleteItem soft-deletes the item. ifMatch "" means no precondition.
func (c *Curator) DeleteItem(ctx context.Context, k Key, ifMatch string) error {
	_, err := SoftDelete(ctx, c.store.Items(), k, strings.TrimSpace(ifMatch), func(it *Item) error {
		it.UpdatedAt = c.now()
		_, err := c.tagger.Prepare(it, it.ManualTags, false)
		return tagError(err, "") // a stored tag the rules refuse names itself
	})
	return storeError(err)
}

// ListRequest is a checked explorer list query.
type ListRequest struct {
	Filter Filter
	Sort   SortKey
	Desc   bool
	Page   int
	Limit  int
}

// ListPage is one explorer page.
type ListPage struct {
	Items      []*Item
	Page       int
	Limit      int
	Total      int
	TotalPages int
	HasNext    bool
	HasPrev    bool
}

// List returns one page of the explorer list with an exact total.
func (c *Curator) List(ctx context.Context, r ListRequest) (*ListPage, error) {
	// Saturated: a page far past the end (any page ≥ 1 is valid) reads nothing instead of
	// overflowing into a negative offset.
	offset := math.MaxInt - MaxQueryLimit
	if r.Page-1 <= offset/r.Limit {
		offset = (r.Page - 1) * r.Limit
	}
	p, err := c.store.Items().Query(ctx, Query{Filter: r.Filter, Sort: r.Sort, Desc: r.Desc, Offset: offset, Limit: r.Limit})
	if err != nil {
		return nil, err
	}
	totalPages := 0
	if p.Total > 0 {
		totalPages = (p.Total + r.Limit - 1) / r.Limit
	}
	items := p.Items
	if items == nil {
		items = []*Item{}
	}
	return &ListPage{
		Items: items, Page: r.Page, Limit: r.Limit, Total: p.Total, TotalPages: totalPages,
		HasNext: r.Page < totalPages, HasPrev: r.Page > 1 && p.Total > 0, // page × limit < total, without overflow
	}, nil
}

// ListDataset streams every item of one dataset, newest update first. The store reads it
// page by page, so the caller holds one page at a time, however large the dataset.
func (c *Curator) ListDataset(ctx context.Context, dataset string, status *Status) iter.Seq2[*Item, error] {
	f := Filter{DatasetNames: []string{dataset}}
	if status != nil {
		f.Statuses = []Status{*status}
	}
	return c.store.Items().QueryAll(ctx, Query{Filter: f, Sort: SortRecent, Limit: MaxQueryLimit})
}

// Stats counts items by status.
func (c *Curator) Stats(ctx context.Context) (map[Status]int, error) {
	return c.store.Items().CountByStatus(ctx)
}

// Datasets lists the dataset names that have items.
func (c *Curator) Datasets(ctx context.Context) ([]string, error) {
	ds, err := c.store.Items().Datasets(ctx)
	if ds == nil && err == nil {
		ds = []string{}
	}
	return ds, err
}

// CurationInstructions returns a dataset's instructions, or NOT_FOUND "Not found".
func (c *Curator) CurationInstructions(ctx context.Context, dataset string) (*CurationInstructions, error) {
	doc, err := c.store.Curation().Get(ctx, dataset)
	if errors.Is(err, ErrNotFound) {
		return nil, &Error{Code: CodeNotFound, Message: "Not found"}
	}
	return doc, err
}

// PutCurationInstructions creates or replaces a dataset's instructions.
// token is If-Match, else the body's _etag, else etag. created reports a 201.
func (c *Curator) PutCurationInstructions(ctx context.Context, dataset, instructions, token string) (*CurationInstructions, bool, error) {
	caller := CallerFrom(ctx)
	u := caller.UserID
	token = strings.TrimSpace(token)
	if token != "" {
		// The store compares tokens exactly; the API tolerates quotes and W/.
		cur, err := c.store.Curation().Get(ctx, dataset)
		switch {
		case errors.Is(err, ErrNotFound):
			return nil, false, &Error{Code: CodeETagMismatch, Message: MsgETagMismatch}
		case err != nil:
			return nil, false, err
		case SameETag(token, cur.ETag):
			token = cur.ETag
		}
	}
	doc := &CurationInstructions{DatasetName: dataset, Instructions: instructions, UpdatedAt: c.now(), UpdatedBy: &u}
	out, created, err := c.store.Curation().Put(ctx, doc, token)
	switch {
	case err == nil:
		return out, created, nil
	case errors.Is(err, ErrConflict):
		return nil, false, &Error{Code: CodeETagRequired, Message: MsgETagRequired}
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrPreconditionFailed):
		return nil, false, &Error{Code: CodeETagMismatch, Message: MsgETagMismatch}
	}
	return nil, false, err
}

// DeleteDataset hard-deletes a dataset's items and instructions.
func (c *Curator) DeleteDataset(ctx context.Context, dataset string) (DatasetDeletion, error) {
	return c.store.Items().DeleteDataset(ctx, dataset)
}

// CreateItem creates one new item through the full tag pipeline, filling the bucket and the
// creation stamps when they are absent (gtc seed). It never overwrites an existing item.
func (c *Curator) CreateItem(ctx context.Context, it *Item, rawManual []string) (*Item, error) {
	caller := CallerFrom(ctx)
	now := c.now()
	if it.Bucket == "" {
		it.Bucket = DeriveBucket(it.DatasetName, it.ID)
	}
	if it.CreatedAt == nil {
		t := now
		it.CreatedAt = &t
	}
	if it.CreatedBy == nil {
		u := caller.UserID
		it.CreatedBy = &u
	}
	if it.UpdatedAt.IsZero() {
		it.UpdatedAt = now
	}
	if _, err := c.tagger.Prepare(it, rawManual, true); err != nil {
		return nil, tagError(err, "")
	}
	out, err := c.store.Items().Create(ctx, it)
	if err != nil {
		return nil, storeError(err)
	}
	return out, nil
}

// RestoreItem writes the content of was, an earlier version of the item k, as the item's
// next revision: every field a PUT may change (status included) takes was's value, through
// the curator save path, so the computed tags are made again and the validators and approval
// rules apply as to any edit. ifMatch is required, as for a PUT. The assignment is left as
// it is.
func (c *Curator) RestoreItem(ctx context.Context, k Key, was *Item, ifMatch string) (*Item, error) {
	ctx = WithChange(ctx, Change{Source: SourceRestore})
	hist := make([]HistoryPatch, len(was.History))
	for i, h := range was.History {
		hist[i] = HistoryPatch{Role: h.Role, Msg: &h.Msg, TurnID: h.TurnID, StepID: h.StepID,
			ExpectedBehavior: h.ExpectedBehavior, ExpectedBehaviorSet: h.ExpectedBehavior != nil, ExpectedBehaviorOK: true}
	}
	p := &ItemPatch{
		Status:         Opt[string]{Set: true, V: string(was.Status)},
		Comment:        Opt[string]{Set: true, V: was.Comment},
		History:        Opt[[]HistoryPatch]{Set: true, V: hist},
		ContextEntries: Opt[[]ContextEntry]{Set: true, V: was.ContextEntries},
		ToolCalls:      Opt[[]ToolCall]{Set: true, V: was.ToolCalls},
		ExpectedTools:  Opt[ExpectedTools]{Set: true, V: was.ExpectedTools},
		Feedback:       Opt[[]FeedbackEntry]{Set: true, V: was.Feedback},
		Metadata:       Opt[json.RawMessage]{Set: true, V: was.Metadata},
		Plugins:        Opt[map[string]PluginPayload]{Set: true, V: was.Plugins},
		ManualTags:     Opt[[]string]{Set: true, V: was.ManualTags},
		TraceIDs:       Opt[map[string]string]{Set: true, Null: was.TraceIDs == nil, V: was.TraceIDs},
		TracePayload:   Opt[json.RawMessage]{Set: true, V: was.TracePayload},
		ScenarioID:     Opt[string]{Set: true, V: was.ScenarioID},
		Keys: []string{"status", "comment", "history", "contextEntries", "toolCalls", "expectedTools", "feedback",
			"metadata", "plugins", "manualTags", "traceIds", "tracePayload", "scenarioId"},
	}
	return c.UpdateItem(ctx, k, p, ifMatch, CuratorRoute)
}
