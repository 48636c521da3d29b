package gtc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"go.opentelemetry.io/otel/attribute"
)

// Import per-item codes and warning codes.
const (
	CodeInvalidTag               = "INVALID_TAG"
	CodeApprovalValidationFailed = "APPROVAL_VALIDATION_FAILED"
	CodeDuplicateID              = "DUPLICATE_ID"
	CodeCreateFailed             = "CREATE_FAILED"
	CodeOutputFieldsIgnored      = "OUTPUT_FIELDS_IGNORED"
	CodeComputedTagsStripped     = "COMPUTED_TAGS_STRIPPED"
)

// ImportOptions are the query flags of a bulk import.
type ImportOptions struct {
	Approve      bool
	RegisterTags bool
	// Batch is the index of this call among the batches of one run, counted from 0 (gtc
	// import sends its input in batches; a request is one batch). It only labels the
	// "import.batch" span.
	Batch int
	// ConvertedTags, when set, holds per entry (by position) the manual tags that a legacy
	// v1 conversion made for it (custom:<name> from a bare legacy tag name; gtc import
	// converts legacy documents). The element's author never wrote them, so they are
	// accepted without RegisterTags and, like registered tags, added to the tag store when
	// the item is created: the item then exports and imports again. Every other unknown tag
	// of the entry is refused as usual.
	ConvertedTags [][]string
}

// ImportIssue is one per-item error or warning of an import.
type ImportIssue struct {
	Index   int     `json:"index"`
	ItemID  *string `json:"itemId"`
	Field   *string `json:"field"`
	Code    string  `json:"code"`
	Message string  `json:"message"`
}

// PIIWarning reports an e-mail address or phone number found in an imported item.
type PIIWarning struct {
	ItemID      string `json:"item_id"`
	Field       string `json:"field"`
	PatternType string `json:"pattern_type"`
	Snippet     string `json:"snippet"`
	Position    int    `json:"position"`
}

// DuplicateWarning reports an imported draft that repeats an approved item.
type DuplicateWarning struct {
	ItemID            string `json:"itemId"`
	DuplicateID       string `json:"duplicateId"`
	DuplicateQuestion string `json:"duplicateQuestion"`
	DuplicateStatus   string `json:"duplicateStatus"`
	MatchReason       string `json:"matchReason"`
}

// ValidationSummary counts the outcome of an import.
type ValidationSummary struct {
	Total     int `json:"total"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
}

// ImportResult is the answer of a bulk import; it is returned even when every item failed.
type ImportResult struct {
	Imported          int                `json:"imported"`
	Failed            int                `json:"failed"`
	Errors            []ImportIssue      `json:"errors"`
	UUIDs             []string           `json:"uuids"`
	PIIWarnings       []PIIWarning       `json:"piiWarnings"`
	DuplicateWarnings []DuplicateWarning `json:"duplicateWarnings"`
	Warnings          []ImportIssue      `json:"warnings"`
	ValidationSummary ValidationSummary  `json:"validationSummary"`
}

// CheckImportTags runs the whole-request tag checks of an import: manual-tag format and tag
// rules for every element, all problems reported together as one 422.
func (c *Curator) CheckImportTags(entries []*ImportEntry) error {
	var fields []FieldError
	more := 0
	for n, e := range entries {
		probe := e.Item.Clone()
		_, err := c.tagger.Prepare(probe, e.RawManualTags, true)
		if err == nil {
			continue
		}
		mapped := tagError(err, fmt.Sprintf("[%d].", n))
		ge, ok := AsError(mapped)
		if !ok {
			return err
		}
		// Only the first MaxFieldErrors problems are listed; the others are counted.
		keep := min(len(ge.Fields), max(MaxFieldErrors-len(fields), 0))
		fields = append(fields, ge.Fields[:keep]...)
		more += len(ge.Fields) - keep + ge.More
	}
	if len(fields) > 0 {
		return ValidationErrorMore(fields, more)
	}
	return nil
}

// Import creates the items of a schema-checked bulk import. Failures of single items are
// reported in the result and never stop the others; existing items are never overwritten. A
// call is one "import.batch" span (a request rejected by the tag checks is none); its store
// calls nest under it.
func (c *Curator) Import(ctx context.Context, entries []*ImportEntry, opts ImportOptions) (res *ImportResult, err error) {
	ctx = WithChange(ctx, Change{Source: SourceImport})
	if err := c.CheckImportTags(entries); err != nil {
		return nil, err
	}
	ctx, span := startBatchSpan(ctx, "import.batch", opts.Batch)
	defer func() {
		var imported, failed int
		if res != nil {
			imported, failed = res.Imported, res.Failed
		}
		endBatchSpan(span, err, len(entries), attribute.Int("gtc.batch.imported", imported), attribute.Int("gtc.batch.failed", failed))
	}()
	caller := CallerFrom(ctx)
	res = &ImportResult{
		Errors: []ImportIssue{}, UUIDs: make([]string, len(entries)), PIIWarnings: []PIIWarning{},
		DuplicateWarnings: []DuplicateWarning{}, Warnings: []ImportIssue{},
	}
	inRequest := map[Key]bool{} // (dataset, id) of earlier elements; Bucket unused
	failed := map[int]bool{}
	var pending []pendingCreate
	// The known-tag set is read at most once, and only when an item needs it.
	var known map[string]bool
	knownTags := func() (map[string]bool, error) {
		if known == nil {
			list, err := c.vocab.KnownTags(ctx)
			if err != nil {
				return nil, err
			}
			known = make(map[string]bool, len(list))
			for _, t := range list {
				known[t] = true
			}
		}
		return known, nil
	}
	fail := func(i int, id, field, code, msg string) {
		iss := ImportIssue{Index: i, ItemID: &id, Code: code, Message: msg}
		if field != "" {
			iss.Field = &field
		}
		res.Errors = append(res.Errors, iss)
		failed[i] = true
	}
	for i, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		it := e.Item
		// 1. Generate a blank id.
		if it.ID == "" {
			it.ID = c.ids.New(func(id string) bool {
				return inRequest[Key{DatasetName: it.DatasetName, ID: id}] || c.idExists(ctx, it.DatasetName, id)
			})
		}
		res.UUIDs[i] = it.ID
		id := it.ID
		if len(e.IgnoredFields) > 0 {
			res.Warnings = append(res.Warnings, ImportIssue{Index: i, ItemID: &id, Code: CodeOutputFieldsIgnored,
				Message: "Ignored output-only fields: " + strings.Join(e.IgnoredFields, ", ")})
		}
		// 2. Normalize and strip computed keys.
		prep, err := c.tagger.Prepare(it, e.RawManualTags, false)
		if err != nil {
			return nil, err // the whole-request check above already passed
		}
		if len(prep.Stripped) > 0 {
			f := "manualTags"
			res.Warnings = append(res.Warnings, ImportIssue{Index: i, ItemID: &id, Field: &f, Code: CodeComputedTagsStripped,
				Message: "Removed computed tags from manualTags: " + strings.Join(prep.Stripped, ", ")})
			c.log.WarnContext(ctx, "computed tags removed from manualTags", "item", id, "dataset", it.DatasetName, "removed", prep.Stripped)
		}
		// 3. Vocabulary: every remaining manual tag must be known, unless registerTags or
		// made by a legacy conversion; unknown tags are registered when the item is created.
		var unknown, refused []string
		if len(it.ManualTags) > 0 && c.vocab != nil {
			kt, err := knownTags()
			if err != nil {
				return nil, err
			}
			var converted []string
			if i < len(opts.ConvertedTags) {
				converted = opts.ConvertedTags[i]
			}
			for _, t := range it.ManualTags {
				if !kt[t] {
					unknown = append(unknown, t)
					if !slices.Contains(converted, t) {
						refused = append(refused, t)
					}
				}
			}
		}
		if len(refused) > 0 && !opts.RegisterTags {
			msgs := make([]string, len(refused))
			for k, t := range refused {
				msgs[k] = fmt.Sprintf("Unknown tag '%s'.", t)
			}
			fail(i, id, "manualTags", CodeInvalidTag, strings.Join(msgs, "; "))
			continue
		}
		now := c.now()
		// 4. Approval.
		if opts.Approve {
			it.Status = StatusApproved
			t := now
			it.ReviewedAt = &t
			u := caller.UserID
			it.UpdatedBy = &u
			if fails := ApprovalErrors(it); len(fails) > 0 {
				for _, f := range fails {
					fail(i, id, "approval", CodeApprovalValidationFailed, f.Message)
				}
				continue
			}
		}
		// 5. Defaults, then the computed tags of the final item.
		if it.Bucket == "" {
			it.Bucket = DeriveBucket(it.DatasetName, it.ID)
		}
		if !e.SentCreatedAt {
			t := now
			it.CreatedAt = &t
		}
		if !e.SentCreatedBy {
			u := caller.UserID
			it.CreatedBy = &u
		}
		if !e.SentUpdatedAt {
			it.UpdatedAt = now
		}
		if _, err := c.tagger.Prepare(it, it.ManualTags, false); err != nil {
			return nil, err
		}
		// 6. Create-only: a (dataset, id) earlier in this request is a duplicate too.
		k := Key{DatasetName: it.DatasetName, ID: it.ID}
		if inRequest[k] {
			fail(i, id, "id", CodeDuplicateID, fmt.Sprintf("Item with id '%s' already exists", id))
			continue
		}
		inRequest[k] = true
		pending = append(pending, pendingCreate{index: i, item: it, unknown: unknown})
	}
	// The store writes the items together, as it writes many fastest; each one still stands
	// or falls alone.
	items := make([]*Item, len(pending))
	for n, p := range pending {
		items[n] = p.item
	}
	errs := c.store.Items().CreateEach(ctx, items)
	register := map[string]bool{}
	var full error // the first create refused for want of storage space
	for n, p := range pending {
		id := p.item.ID
		switch err := errs[n]; {
		case errors.Is(err, ErrStorageFull):
			if full == nil {
				full = err
			}
			fail(p.index, id, "", CodeCreateFailed, "The server is out of storage space; the item was not saved")
		case err == nil:
			res.Imported++
			for _, t := range p.unknown {
				register[t] = true
			}
		case errors.Is(err, ErrConflict):
			fail(p.index, id, "id", CodeDuplicateID, fmt.Sprintf("Item with id '%s' already exists", id))
		case errors.Is(err, ErrTooLarge):
			fail(p.index, id, "", CodeItemTooLarge, MsgItemTooLarge)
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return nil, err
		default:
			c.log.ErrorContext(ctx, "import: create failed", "item", id, "dataset", p.item.DatasetName, "err", err)
			msg := "The store refused the item"
			if errors.Is(err, ErrUnavailable) {
				msg = "The store is not reachable"
			}
			fail(p.index, id, "", CodeCreateFailed, msg)
		}
	}
	if full != nil && res.Imported == 0 {
		// Nothing was saved: the request as a whole failed and can be sent again once
		// there is room. When some items were saved, the per-item errors say which were not.
		return nil, full
	}
	// 7. Register the unknown manual tags of the created items in the tag store.
	if len(register) > 0 {
		tags := make([]string, 0, len(register))
		for t := range register {
			tags = append(tags, t)
		}
		sort.Strings(tags)
		if _, err := c.vocab.AddTags(ctx, tags); err != nil {
			return nil, err
		}
	}
	sort.SliceStable(res.Errors, func(a, b int) bool { return res.Errors[a].Index < res.Errors[b].Index })
	res.Failed = len(failed)
	res.ValidationSummary = ValidationSummary{Total: len(entries), Succeeded: res.Imported, Failed: res.Failed}
	c.importWarnings(ctx, entries, res)
	return res, nil
}

// ImportScreen screens the entries of an import request for things a curator should look
// at, without changing the import's outcome: it appends to res.PIIWarnings and
// res.DuplicateWarnings. It runs after the writes, over every entry of the request, failed
// ones included, so approved items of the same request can be matched. A failure inside it
// is its own to log; it gives no warnings then.
type ImportScreen interface {
	Screen(ctx context.Context, entries []*ImportEntry, res *ImportResult)
}

// importWarnings runs the import screen, if there is one, over every request entry.
func (c *Curator) importWarnings(ctx context.Context, entries []*ImportEntry, res *ImportResult) {
	if c.importScreen != nil {
		c.importScreen.Screen(ctx, entries, res)
	}
}

// pendingCreate is an import element that passed steps 1–5.
type pendingCreate struct {
	index   int
	item    *Item
	unknown []string // manual tags to register when created
}

func (c *Curator) idExists(ctx context.Context, dataset, id string) bool {
	_, err := c.store.Items().Locate(ctx, dataset, id)
	return !errors.Is(err, ErrNotFound)
}
