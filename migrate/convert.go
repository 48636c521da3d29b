package migrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

// systemKeys are store system properties and derived index fields. They are never content: the
// store issues them on every write, so they are dropped before a document is compared or
// converted.
var systemKeys = []string{"_etag", "_rid", "_self", "_attachments", "_ts", "gtcIndex", "gtcExact"}

// storedKeys are the top-level keys of the canonical document.
var storedKeys = setOf("id", "datasetName", "bucket", "status", "docType", "schemaVersion", "manualTags",
	"computedTags", "comment", "assignedTo", "assignedAt", "updatedAt", "updatedBy", "reviewedAt", "scenarioId",
	"history", "contextEntries", "traceIds", "toolCalls", "expectedTools", "feedback", "metadata", "plugins",
	"createdBy", "createdAt", "tracePayload", "revision")

// legacyMarkerKeys are the top-level keys only the legacy shape has.
var legacyMarkerKeys = []string{"synthQuestion", "editedQuestion", "answer", "refs", "totalReferences",
	"contextUsedForGeneration", "contextSource", "modelUsedForGeneration", "semanticClusterNumber", "weight",
	"samplingBucket", "questionLength"}

// historyEntryKeys are the keys a stored v2 history entry may have.
var historyEntryKeys = setOf("role", "msg", "expectedBehavior", "turnId", "stepId")

// ragLegacyKeys are the keys of plugins["rag-compat"].data that only legacy documents have.
var ragLegacyKeys = []string{"refs", "retrievals", "historyAnnotations", "totalReferences", "synthQuestion",
	"editedQuestion", "answer"}

// provenanceKeys are kept under metadata.legacyV1 when they are not null.
var provenanceKeys = []string{"contextUsedForGeneration", "contextSource", "modelUsedForGeneration",
	"semanticClusterNumber", "weight", "samplingBucket"}

// questionKeys are the legacy texts a history is built from, in the order they are read.
var questionKeys = []string{"synthQuestion", "editedQuestion", "answer"}

// legacyHandled are the top-level keys the legacy mapping reads itself; every other key is
// unknown and kept verbatim under metadata.legacyV1.
var legacyHandled = func() map[string]bool {
	m := maps.Clone(storedKeys)
	for _, k := range legacyMarkerKeys {
		m[k] = true
	}
	m["tags"] = true
	return m
}()

// v2CopiedKeys are copied from a legacy document and validated like an import: the v2
// keys, plus the plain string fields whose only rule is their type.
var v2CopiedKeys = []string{"comment", "assignedTo", "updatedBy", "createdBy", "createdAt", "scenarioId",
	"contextEntries", "toolCalls", "expectedTools", "feedback", "traceIds", "tracePayload"}

// storedTimeKeys are the date-time keys of the canonical document.
var storedTimeKeys = []string{"assignedAt", "updatedAt", "reviewedAt", "createdAt"}

func setOf(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// IsLegacy reports whether a stored document is an item in the legacy v1 shape (see README.md,
// "Upgrading from the legacy shape"). Documents that are not items (another docType, or neither a
// docType nor a datasetName) are never legacy. Documents written by the current server never are,
// so a converted document is not legacy either.
func IsLegacy(raw map[string]any) bool {
	if !isItemDocument(raw) {
		return false
	}
	if _, ok := raw["tags"]; ok {
		return true
	}
	for _, k := range legacyMarkerKeys {
		if _, ok := raw[k]; ok {
			return true
		}
	}
	for _, k := range []string{"manualTags", "computedTags"} {
		if _, ok := raw[k]; !ok {
			return true
		}
	}
	if raw["history"] == nil {
		return true
	}
	if list, ok := raw["history"].([]any); ok {
		for _, el := range list {
			if m, ok := el.(map[string]any); ok {
				for k := range m {
					if !historyEntryKeys[k] {
						return true
					}
				}
			}
		}
	}
	if data, ok := ragData(raw); ok {
		for _, k := range ragLegacyKeys {
			if _, ok := data[k]; ok {
				return true
			}
		}
	}
	return false
}

// isItemDocument: docType ground-truth-item, or no docType and a datasetName.
func isItemDocument(raw map[string]any) bool {
	switch dt := raw["docType"].(type) {
	case nil:
		_, ok := raw["datasetName"]
		return ok
	case string:
		return dt == gtc.DocTypeItem
	default:
		return false
	}
}

// ragData returns plugins["rag-compat"].data when the document has one that is an object.
func ragData(doc map[string]any) (map[string]any, bool) {
	plugins, _ := doc["plugins"].(map[string]any)
	slot, _ := plugins[gtc.RAGCompatSlot].(map[string]any)
	data, ok := slot["data"].(map[string]any)
	return data, ok
}

// Convert brings one stored document to the current storage format. raw is the document decoded
// with UseNumber; it is not modified. Legacy documents are mapped to v2 (KindMigrate); current
// documents are rewritten in canonical form when their stored JSON differs from it (KindReindex),
// or left alone (KindNone). A document that cannot be converted gives a *DocError and must be left
// untouched. Convert is pure and idempotent: converting Result.Body again gives KindNone and the
// same Body.
func Convert(raw map[string]any, env Env) (Result, error) {
	if env.Tagger == nil {
		return Result{}, errors.New("migrate: Env.Tagger is not set")
	}
	// The mapping edits nested maps, so it works on a deep copy; the changes are listed
	// against the document as it was read (a shallow copy: raw itself is never modified).
	before := make(map[string]any, len(raw))
	for k, v := range raw {
		before[k] = v
	}
	doc, _ := gtc.CopyJSON(raw).(map[string]any)
	for _, k := range systemKeys {
		delete(before, k)
		delete(doc, k)
	}
	c := &converter{env: env, doc: doc, before: before, kept: map[string]any{}}
	if IsLegacy(doc) {
		return c.legacy()
	}
	return c.current()
}

// converter holds the state of one conversion.
type converter struct {
	env      Env
	doc      map[string]any // the document being converted (system keys removed); edited
	before   map[string]any // the document as read (system keys removed); never edited
	warnings []Warning
	kept     map[string]any // what goes to metadata.legacyV1
	keptKeys []string       // the keys actually written there, for the summary
	custom   []string       // the custom:<name> tags made from bare legacy tag names
}

func (c *converter) warn(code, format string, args ...any) {
	c.warnings = append(c.warnings, Warning{Code: code, Message: fmt.Sprintf(format, args...)})
}

func docError(format string, args ...any) *DocError {
	return &DocError{Code: CodeInvalidDocument, Message: fmt.Sprintf(format, args...)}
}

// --- the legacy mapping ---------------------------------------------------------------------

func (c *converter) legacy() (Result, error) {
	id, ds, err := c.identity()
	if err != nil {
		return Result{}, err
	}
	bucket, moved := c.bucket(ds, id)
	status := c.status()
	assignedAt := c.optionalTime("assignedAt")
	updatedAt := c.updatedAt()
	reviewedAt := c.optionalTime("reviewedAt")

	questions := c.questionTexts()
	hist, err := c.history(questions)
	if err != nil {
		return Result{}, err
	}
	plugins, refs, err := c.plugins(hist)
	if err != nil {
		return Result{}, err
	}
	for _, k := range provenanceKeys {
		if v := c.doc[k]; v != nil {
			c.kept[k] = v
		}
	}
	for _, k := range questionKeys {
		if q := questions[k]; q.value != nil && !q.used && !isBlank(q.value) {
			c.kept[k] = q.value
		}
	}
	for _, k := range sortedKeys(c.doc) {
		if !legacyHandled[k] {
			c.kept[k] = c.doc[k]
		}
	}

	v2 := map[string]any{"id": id, "datasetName": ds, "history": hist.entries, "plugins": plugins}
	for _, k := range v2CopiedKeys {
		if v, ok := c.doc[k]; ok {
			v2[k] = v
		}
	}
	if md, ok := c.metadata(); ok {
		v2["metadata"] = md
	}
	it, err := validateItem(v2)
	if err != nil {
		return Result{}, err
	}
	it.Bucket = bucket
	it.Status = status
	it.DocType = gtc.DocTypeItem
	it.SchemaVersion = gtc.SchemaVersionCurrent
	it.AssignedAt, it.UpdatedAt, it.ReviewedAt = assignedAt, updatedAt, reviewedAt

	converted := c.convertTags()
	prep, err := c.env.Tagger.Prepare(it, converted, true)
	var rules *gtc.TagRuleError
	switch {
	case errors.As(err, &rules):
		// The pipeline leaves the prepared tags on the item: the document is still written
		// and a curator fixes the tags at the next save.
	case err != nil:
		return Result{}, docError("manualTags: %v", err)
	}
	if len(prep.Stripped) > 0 {
		c.warn(WarnComputedTagsStripped, "Removed computed tags from manualTags: %s", strings.Join(prep.Stripped, ", "))
	}
	if rules != nil {
		for _, m := range rules.Messages {
			c.warn(WarnTagRuleViolation, "%s", m)
		}
	}
	if it.Status == gtc.StatusApproved {
		for _, f := range gtc.ApprovalErrors(it) {
			c.warn(WarnApprovalRulesNotMet, "%s", f.Message)
		}
	}

	res, err := c.result(it, KindMigrate, moved)
	if err != nil {
		return Result{}, err
	}
	res.Legacy = true
	for _, t := range it.ManualTags {
		if slices.Contains(c.custom, t) {
			res.ConvertedTags = append(res.ConvertedTags, t)
		}
	}
	parts := []string{"legacy → v2", hist.summary()}
	if refs.fromLegacy && refs.count > 0 {
		parts = append(parts, fmt.Sprintf("references: %d → plugins.rag-compat", refs.count))
	}
	if s := tagDiff(stringList(c.before["manualTags"]), it.ManualTags, converted); s != "" {
		parts = append(parts, "manualTags"+s)
	}
	if !sameSet(stringList(c.before["computedTags"]), it.ComputedTags) {
		parts = append(parts, fmt.Sprintf("computedTags set (%d)", len(it.ComputedTags)))
	}
	if hist.tagsRemoved > 0 {
		parts = append(parts, fmt.Sprintf("history tags removed (%d)", hist.tagsRemoved))
	}
	if len(c.keptKeys) > 0 {
		parts = append(parts, "kept in metadata.legacyV1: "+strings.Join(c.keptKeys, ", "))
	}
	if moved {
		parts = append(parts, c.bucketSummary(bucket))
	}
	res.Summary = strings.Join(parts, "; ")
	return res, nil
}

// identity checks id and datasetName (a blank value, or one breaking the item's rules for
// them, is a document error). An id is the document's address, so it is never rewritten:
// one with surrounding whitespace is an error rather than trimmed.
func (c *converter) identity() (id, ds string, err error) {
	var problems []string
	read := func(key string) (string, bool) {
		v, present := c.doc[key]
		switch s := v.(type) {
		case string:
			return s, true
		case nil:
			if present {
				problems = append(problems, key+": must not be null")
			} else {
				problems = append(problems, key+": required")
			}
		default:
			problems = append(problems, key+": expected string")
		}
		return "", false
	}
	if s, ok := read("id"); ok {
		switch t := strings.TrimSpace(s); {
		case t == "":
			problems = append(problems, "id cannot be empty")
		case t != s:
			problems = append(problems, "id has leading or trailing whitespace")
		default:
			if msg := gtc.CheckItemID(s); msg != "" {
				problems = append(problems, problem("id", msg))
			}
			id = s
		}
	}
	if s, ok := read("datasetName"); ok {
		if msg := gtc.CheckDatasetName(s); msg != "" {
			problems = append(problems, problem("datasetName", msg))
		}
		ds = s
	}
	if len(problems) > 0 {
		return "", "", docError("%s", strings.Join(problems, "; "))
	}
	return id, ds, nil
}

// bucket returns the document's bucket in canonical form and whether it differs from the
// stored value (the document then moves).
func (c *converter) bucket(ds, id string) (string, bool) {
	if s, ok := c.doc["bucket"].(string); ok {
		if u, ok := parseBucket(s); ok {
			return u, u != s
		}
	}
	return gtc.DeriveBucket(ds, id), true
}

// parseBucket reads any spelling of a UUID: upper or lower case, with or without hyphens,
// with or without braces.
func parseBucket(s string) (string, bool) {
	if len(s) >= 2 && s[0] == '{' && s[len(s)-1] == '}' {
		s = s[1 : len(s)-1]
	}
	return gtc.ParseUUID(s)
}

func (c *converter) bucketSummary(bucket string) string {
	v, present := c.before["bucket"]
	var from string
	switch s := v.(type) {
	case string:
		from = s
	case nil:
		from = "null"
		if !present {
			from = "(none)"
		}
	default:
		from = compactJSON(v)
	}
	return fmt.Sprintf("bucket %s → %s (move)", from, gtc.ShortBucket(bucket))
}

func (c *converter) status() gtc.Status {
	v := c.doc["status"]
	if v == nil {
		return gtc.StatusDraft // absent or null: the item's default, nothing was lost
	}
	if s, ok := v.(string); ok && gtc.Status(s).Valid() {
		return gtc.Status(s)
	}
	c.warn(WarnUnknownStatus, "Unknown status %s; set to draft", quote(v))
	return gtc.StatusDraft
}

func (c *converter) optionalTime(key string) *time.Time {
	v := c.doc[key]
	if v == nil {
		return nil
	}
	if s, ok := v.(string); ok {
		if t, err := gtc.ParseTime(s); err == nil {
			return &t
		}
	}
	c.warn(WarnInvalidDatetime, "%s: cannot read %s as a date-time; set to null", key, quote(v))
	return nil
}

// updatedAt keeps the legacy value (migration is not a user edit); missing or unreadable
// values become the run's start time.
func (c *converter) updatedAt() time.Time {
	now := c.now()
	v := c.doc["updatedAt"]
	if v == nil {
		return now
	}
	if s, ok := v.(string); ok {
		if t, err := gtc.ParseTime(s); err == nil {
			return t
		}
	}
	c.warn(WarnInvalidDatetime, "updatedAt: cannot read %s as a date-time; set to the run's start time %s",
		quote(v), gtc.FormatStoredTime(now))
	return now
}

// now is Env.Now at the precision the store keeps, so the item and its stored form agree.
func (c *converter) now() time.Time { return c.env.Now.UTC().Truncate(time.Microsecond) }

// questionText is one of the legacy question/answer texts.
type questionText struct {
	value any    // nil when absent
	from  string // the key it was read from
	used  bool   // it became a history turn
}

// questionTexts reads synthQuestion, editedQuestion and answer. Intermediate releases kept
// them in the rag-compat data instead, so that copy stands in when the top-level key is
// absent; when both exist and differ, the rag-compat copy is reported as dropped.
func (c *converter) questionTexts() map[string]*questionText {
	out := map[string]*questionText{}
	data, _ := ragData(c.doc)
	for _, k := range questionKeys {
		q := &questionText{value: c.doc[k], from: k}
		if dv := data[k]; dv != nil {
			switch {
			case q.value == nil:
				q.value, q.from = dv, "plugins.rag-compat.data."+k
			case !isBlank(dv) && !reflect.DeepEqual(trimmed(dv), trimmed(q.value)):
				c.warn(WarnLegacyFieldDropped, "plugins.rag-compat.data.%s dropped: it differs from %s", k, k)
			}
		}
		out[k] = q
	}
	return out
}

// historyResult is the v2 history built from a legacy document.
type historyResult struct {
	entries     []any // v2 history entries, as JSON objects
	turnOf      []int // index in entries of each legacy entry, -1 when dropped
	built       bool
	sources     []string // the keys a built history came from
	dropped     int
	tagsRemoved int
}

func (h *historyResult) summary() string {
	n := len(h.entries)
	switch {
	case h.built && n == 0:
		return "history empty (no question or answer)"
	case h.built:
		return fmt.Sprintf("history built (%s) from %s", plural(n, "turn"), strings.Join(h.sources, "+"))
	case h.dropped > 0:
		return fmt.Sprintf("history converted (%s, %d dropped)", plural(n, "turn"), h.dropped)
	default:
		return fmt.Sprintf("history converted (%s)", plural(n, "turn"))
	}
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// history rebuilds the history: a non-empty legacy list is converted entry by entry;
// otherwise the history is built from the question and the answer.
func (c *converter) history(questions map[string]*questionText) (*historyResult, error) {
	h := &historyResult{entries: []any{}}
	v := c.doc["history"]
	list, isList := v.([]any)
	if v != nil && !isList {
		return nil, docError("history: expected array")
	}
	if len(list) == 0 {
		h.built = true
		user := questions["editedQuestion"]
		if text(user.value) == "" {
			user = questions["synthQuestion"]
		}
		for _, q := range []struct {
			t    *questionText
			role string
		}{{user, "user"}, {questions["answer"], "assistant"}} {
			if s := text(q.t.value); s != "" {
				q.t.used = true
				h.entries = append(h.entries, map[string]any{"role": q.role, "msg": s})
				h.sources = append(h.sources, q.t.from)
			}
		}
		return h, nil
	}
	h.turnOf = make([]int, len(list))
	var removed []string
	for i, el := range list {
		h.turnOf[i] = -1
		p := fmt.Sprintf("history[%d]", i)
		m, ok := el.(map[string]any)
		if !ok {
			c.warn(WarnHistoryEntryDropped, "%s dropped: not an object", p)
			h.dropped++
			continue
		}
		if tags, n := describeTags(m["tags"]); n > 0 {
			removed = append(removed, p+": "+tags)
			h.tagsRemoved += n
		}
		msgKey := "msg"
		if m["msg"] == nil {
			msgKey = "content"
		}
		role, roleProblem := entryText(m["role"], "role")
		msg, msgProblem := entryText(m[msgKey], "msg")
		if roleProblem != "" || msgProblem != "" {
			c.warn(WarnHistoryEntryDropped, "%s dropped: %s", p, joinNonEmpty(" and ", roleProblem, msgProblem))
			h.dropped++
			continue
		}
		entry := map[string]any{"role": role, "msg": msg}
		eb, ebKey := m["expectedBehavior"], "expectedBehavior"
		if eb == nil {
			// The item PUT accepts this alias, so it is not lost here.
			eb, ebKey = m["expected_behavior"], "expected_behavior"
		}
		if eb != nil {
			if isStringList(eb) {
				entry["expectedBehavior"] = eb
			} else {
				c.warn(WarnLegacyFieldDropped, "%s.%s dropped: not a list of strings", p, ebKey)
			}
		}
		for _, k := range []string{"turnId", "stepId"} {
			switch s := m[k].(type) {
			case nil:
			case string:
				entry[k] = s
			default:
				c.warn(WarnLegacyFieldDropped, "%s.%s dropped: not a string", p, k)
			}
		}
		if msgKey == "msg" && m["content"] != nil && !reflect.DeepEqual(trimmed(m["content"]), msg) {
			c.warn(WarnLegacyFieldDropped, "%s.content dropped: msg is used", p)
		}
		for _, k := range sortedKeys(m) {
			switch k {
			case "role", "msg", "content", "expectedBehavior", "expected_behavior", "turnId", "stepId", "refs", "tags":
			default:
				if m[k] != nil {
					c.warn(WarnLegacyFieldDropped, "%s.%s dropped", p, k)
				}
			}
		}
		h.turnOf[i] = len(h.entries)
		h.entries = append(h.entries, entry)
	}
	if len(removed) > 0 {
		c.warn(WarnHistoryTagsRemoved, "Removed history tags: %s", strings.Join(removed, "; "))
	}
	return h, nil
}

// entryText reads a role or msg: a string, trimmed; the problem says why the entry cannot
// keep it.
func entryText(v any, name string) (string, string) {
	switch s := v.(type) {
	case nil:
		return "", name + " is blank"
	case string:
		if t := strings.TrimSpace(s); t != "" {
			return t, ""
		}
		return "", name + " is blank"
	default:
		return "", name + " is not a string"
	}
}

// describeTags renders a history entry's tags for the warning and counts them.
func describeTags(v any) (string, int) {
	switch t := v.(type) {
	case nil:
		return "", 0
	case []any:
		var parts []string
		for _, el := range t {
			switch s := el.(type) {
			case nil:
			case string:
				parts = append(parts, s)
			default:
				parts = append(parts, compactJSON(s))
			}
		}
		return strings.Join(parts, ", "), len(parts)
	case string:
		if strings.TrimSpace(t) == "" {
			return "", 0
		}
		return t, 1
	case map[string]any:
		if len(t) == 0 {
			return "", 0
		}
	}
	return compactJSON(v), 1
}

// refsResult describes the references written.
type refsResult struct {
	count      int
	fromLegacy bool // built from the legacy sources (no data.references existed)
}

// plugins returns the plugins value with the rag-compat slot rebuilt. A plugins value
// or rag-compat slot of the wrong type is returned as it is: validation reports it.
func (c *converter) plugins(h *historyResult) (any, refsResult, error) {
	var plugins map[string]any
	switch p := c.doc["plugins"].(type) {
	case nil:
		plugins = map[string]any{}
	case map[string]any:
		plugins = p
	default:
		return p, refsResult{}, nil
	}
	var slot, data map[string]any
	switch s := plugins[gtc.RAGCompatSlot].(type) {
	case nil:
	case map[string]any:
		slot = s
		switch d := s["data"].(type) {
		case nil:
		case map[string]any:
			data = d
		default:
			return plugins, refsResult{}, nil
		}
	default:
		return plugins, refsResult{}, nil
	}
	if data == nil {
		data = map[string]any{}
	}
	refs, res, err := c.references(data, h)
	if err != nil {
		return nil, refsResult{}, err
	}
	if !isEmptyValue(data["historyAnnotations"]) {
		c.warn(WarnLegacyFieldDropped, "plugins.rag-compat.data.historyAnnotations dropped")
	}
	for _, k := range ragLegacyKeys {
		delete(data, k)
	}
	delete(data, "references")
	if len(refs) > 0 {
		data["references"] = refs
	}
	if len(data) == 0 {
		delete(plugins, gtc.RAGCompatSlot)
		return plugins, res, nil
	}
	if slot == nil {
		slot = map[string]any{"kind": gtc.RAGCompatSlot, "version": "1.0"}
	}
	slot["data"] = data
	plugins[gtc.RAGCompatSlot] = slot
	return plugins, res, nil
}

// references collects plugins["rag-compat"].data.references: an existing references
// list is authoritative; otherwise every legacy source is merged, in order.
func (c *converter) references(data map[string]any, h *historyResult) ([]any, refsResult, error) {
	const dataPath = "plugins.rag-compat.data"
	legacyRefs := c.doc["refs"]
	historyRefs := func(fn func(i int, refs any)) {
		list, _ := c.doc["history"].([]any)
		for i, el := range list {
			if m, ok := el.(map[string]any); ok && m["refs"] != nil {
				fn(i, m["refs"])
			}
		}
	}

	if rv, ok := data["references"]; ok {
		list, isList := rv.([]any)
		if rv != nil && !isList {
			return nil, refsResult{}, docError("%s.references: expected array", dataPath)
		}
		out := []any{}
		for i, el := range list {
			if ref, why := normalizeReference(el); why != "" {
				c.warn(WarnReferenceDropped, "%s.references[%d] dropped: %s", dataPath, i, why)
			} else {
				out = append(out, ref)
			}
		}
		ignored := func(path string, v any) {
			if !isEmptyValue(v) {
				c.warn(WarnLegacyFieldDropped, "%s ignored: %s.references is authoritative", path, dataPath)
			}
		}
		ignored(dataPath+".refs", data["refs"])
		ignored("refs", legacyRefs)
		ignored(dataPath+".retrievals", data["retrievals"])
		historyRefs(func(i int, refs any) { ignored(fmt.Sprintf("history[%d].refs", i), refs) })
		return out, refsResult{count: len(out)}, nil
	}

	out := []any{}
	seen := map[string]bool{}
	add := func(path string, v any, defaultIndex int) {
		ref, why := normalizeReference(v)
		if why != "" {
			c.warn(WarnReferenceDropped, "%s dropped: %s", path, why)
			return
		}
		if _, ok := ref["messageIndex"]; !ok && defaultIndex >= 0 {
			ref["messageIndex"] = json.Number(strconv.Itoa(defaultIndex))
		}
		key := ref["url"].(string) + "\x00" + compactJSON(ref["messageIndex"])
		if seen[key] {
			return
		}
		seen[key] = true
		out = append(out, ref)
	}
	addList := func(path string, v any, defaultIndex int) {
		switch list := v.(type) {
		case nil:
		case []any:
			for i, el := range list {
				add(fmt.Sprintf("%s[%d]", path, i), el, defaultIndex)
			}
		default:
			c.warn(WarnReferenceDropped, "%s dropped: not a list", path)
		}
	}
	addList(dataPath+".refs", data["refs"], -1)
	addList("refs", legacyRefs, -1)
	c.retrievals(dataPath+".retrievals", data["retrievals"], add)
	historyRefs(func(i int, refs any) {
		turn := -1
		if h.turnOf != nil {
			turn = h.turnOf[i]
		}
		addList(fmt.Sprintf("history[%d].refs", i), refs, turn)
	})
	return out, refsResult{count: len(out), fromLegacy: true}, nil
}

// retrievals flattens the legacy retrievals map: tool call ids in sorted order, each
// candidate as a reference whose messageIndex is the step number of its tool call.
func (c *converter) retrievals(path string, v any, add func(path string, v any, defaultIndex int)) {
	if v == nil {
		return
	}
	byCall, ok := v.(map[string]any)
	if !ok {
		c.warn(WarnLegacyFieldDropped, "%s dropped: not an object", path)
		return
	}
	for _, callID := range sortedKeys(byCall) {
		rp := path + "." + callID
		r, _ := byCall[callID].(map[string]any)
		candidates, ok := r["candidates"].([]any)
		if !ok {
			if !isEmptyValue(byCall[callID]) {
				c.warn(WarnLegacyFieldDropped, "%s dropped: no candidates list", rp)
			}
			continue
		}
		for i, cand := range candidates {
			cp := fmt.Sprintf("%s.candidates[%d]", rp, i)
			cm, ok := cand.(map[string]any)
			if !ok {
				add(cp, cand, -1) // reported as not an object
				continue
			}
			ref := map[string]any{"url": cm["url"], "title": cm["title"], "content": cm["chunk"]}
			tc, ok := cm["toolCallId"].(string)
			if !ok {
				tc = callID
			}
			if step := c.stepNumber(tc); step != nil {
				ref["messageIndex"] = step
			}
			add(cp, ref, -1)
		}
	}
}

// stepNumber is the stepNumber of the tool call with the given id, or nil.
func (c *converter) stepNumber(id string) any {
	calls, _ := c.doc["toolCalls"].([]any)
	for _, el := range calls {
		if m, ok := el.(map[string]any); ok {
			if s, ok := m["id"].(string); ok && s == id {
				return m["stepNumber"]
			}
		}
	}
	return nil
}

// normalizeReference checks and cleans one reference: an object with a non-blank string url;
// url trimmed, null-valued keys removed, bonus false when absent. why says why it is invalid.
func normalizeReference(v any) (ref map[string]any, why string) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, "not an object"
	}
	u, _ := m["url"].(string)
	if strings.TrimSpace(u) == "" {
		return nil, gtc.MsgReferenceURLEmpty
	}
	ref = make(map[string]any, len(m)+1)
	for k, val := range m {
		if val != nil {
			ref[k] = val
		}
	}
	ref["url"] = strings.TrimSpace(u)
	if _, ok := ref["bonus"]; !ok {
		ref["bonus"] = false
	}
	return ref, ""
}

// metadata returns the metadata value with c.kept merged under legacyV1 (existing keys win),
// and whether the document has metadata at all. A metadata value that is not an
// object is returned as it is, for validation to report.
func (c *converter) metadata() (any, bool) {
	mv, present := c.doc["metadata"]
	if len(c.kept) == 0 {
		return mv, present
	}
	var md map[string]any
	switch m := mv.(type) {
	case nil:
		md = map[string]any{}
	case map[string]any:
		md = m
	default:
		return mv, true
	}
	keys := sortedKeys(c.kept)
	switch existing := md["legacyV1"].(type) {
	case nil:
		md["legacyV1"] = c.kept
		c.keptKeys = keys
	case map[string]any:
		for _, k := range keys {
			if old, ok := existing[k]; ok {
				if !reflect.DeepEqual(old, c.kept[k]) {
					c.warn(WarnLegacyFieldDropped, "metadata.legacyV1.%s already holds another value; the document's %s dropped", k, k)
				}
				continue
			}
			existing[k] = c.kept[k]
			c.keptKeys = append(c.keptKeys, k)
		}
	default:
		for _, k := range keys {
			c.warn(WarnLegacyFieldDropped, "metadata.legacyV1 is not an object; the document's %s dropped", k)
		}
	}
	return md, true
}

// convertTags is the first part of the tag split: the raw manual tags of the legacy tags
// and manualTags, each mapped by --tag-map, normalized, or turned into custom:<name>.
func (c *converter) convertTags() []string {
	out := []string{}
	add := func(raw string) {
		if t, ok := c.convertTag(raw); ok {
			out = append(out, t)
		}
	}
	for _, field := range []string{"tags", "manualTags"} {
		switch v := c.doc[field].(type) {
		case nil:
		case string:
			for _, piece := range strings.Split(v, ",") {
				add(piece)
			}
		case []any:
			for i, el := range v {
				switch s := el.(type) {
				case nil:
				case string:
					add(s)
				default:
					c.warn(WarnLegacyTagDropped, "%s[%d] dropped: not a string (%s)", field, i, compactJSON(s))
				}
			}
		default:
			c.warn(WarnLegacyTagDropped, "%s dropped: not a list or a string (%s)", field, compactJSON(v))
		}
	}
	return out
}

func (c *converter) convertTag(raw string) (string, bool) {
	if mapped, ok := c.lookupTagMap(raw); ok {
		if mapped == nil {
			return "", false
		}
		raw = *mapped
	}
	e := strings.TrimSpace(raw)
	if e == "" {
		return "", false
	}
	norm, err := c.normalize(e)
	if err == nil {
		return norm, true
	}
	if strings.Contains(e, ":") {
		c.warn(WarnLegacyTagDropped, "%v", err)
		return "", false
	}
	// The curator UI's convention for bare names.
	custom := "custom:" + strings.ToLower(strings.Join(strings.Fields(e), " "))
	norm, err = c.normalize(custom)
	if err != nil {
		c.warn(WarnLegacyTagDropped, "%v", err)
		return "", false
	}
	c.warn(WarnLegacyTagConverted, "'%s' → '%s'", e, norm)
	c.custom = append(c.custom, norm)
	return norm, true
}

// lookupTagMap finds an entry exactly as stored, else trimmed (pieces of a comma-separated
// string usually carry a space).
func (c *converter) lookupTagMap(raw string) (*string, bool) {
	if c.env.TagMap == nil {
		return nil, false
	}
	if m, ok := c.env.TagMap[raw]; ok {
		return m, true
	}
	m, ok := c.env.TagMap[strings.TrimSpace(raw)]
	return m, ok
}

func (c *converter) normalize(tag string) (string, error) {
	out, err := c.env.Tagger.NormalizeManual([]string{tag})
	if err != nil {
		return "", err
	}
	if len(out) != 1 {
		return "", fmt.Errorf("tag '%s' normalizes to nothing", tag)
	}
	return out[0], nil
}

// --- current documents (storage form only) -------------------------------------------------

func (c *converter) current() (Result, error) {
	id, ds, err := c.identity()
	if err != nil {
		return Result{}, err
	}
	bucket, moved := c.bucket(ds, id)
	work := maps.Clone(c.doc)
	// A key the stored form does not have would be lost by a rewrite; keep it the way the
	// legacy mapping keeps unknown keys.
	for _, k := range sortedKeys(work) {
		if !storedKeys[k] {
			c.kept[k] = work[k]
			delete(work, k)
		}
	}
	if len(c.kept) > 0 {
		work["metadata"], _ = c.metadata()
	}
	work["bucket"] = bucket
	var problems []string
	for _, k := range []string{"manualTags", "computedTags"} {
		if list, ok := work[k].([]any); ok {
			for i, el := range list {
				if _, ok := el.(string); !ok {
					problems = append(problems, fmt.Sprintf("%s[%d]: expected string", k, i))
				}
			}
		} else if work[k] != nil {
			problems = append(problems, k+": expected array")
		}
	}
	if len(problems) > 0 {
		return Result{}, docError("%s", strings.Join(problems, "; "))
	}
	// Any RFC 3339 spelling is read; the stored form has one.
	for _, k := range storedTimeKeys {
		if s, ok := work[k].(string); ok {
			if t, err := gtc.ParseTime(s); err == nil {
				work[k] = gtc.FormatStoredTime(t)
			}
		}
	}
	if _, err := validateItem(work); err != nil {
		return Result{}, err
	}
	b, err := marshalJSON(work)
	if err != nil {
		return Result{}, docError("the document cannot be encoded as JSON: %v", err)
	}
	it, err := codec.DecodeStoredItem(b)
	if err != nil {
		return Result{}, docError("%v", err)
	}
	if work["updatedAt"] == nil {
		it.UpdatedAt = c.now()
	}
	if it.AssignedTo != nil && *it.AssignedTo == "" {
		// Every write path of the API stores "not assigned" as null.
		it.AssignedTo = nil
	}
	kind := KindReindex
	if len(c.kept) > 0 {
		kind = KindMigrate
	}
	res, err := c.result(it, kind, moved)
	if err != nil {
		return Result{}, err
	}
	var parts []string
	if len(c.keptKeys) > 0 {
		parts = append(parts, "unknown keys moved to metadata.legacyV1: "+strings.Join(c.keptKeys, ", "))
	}
	if dropped := slices.DeleteFunc(sortedKeys(c.kept), func(k string) bool { return slices.Contains(c.keptKeys, k) }); len(dropped) > 0 {
		parts = append(parts, "unknown keys dropped: "+strings.Join(dropped, ", "))
	}
	for _, ch := range res.Changes {
		// The bucket and the moved keys are reported on their own; anything else is form.
		if ch.Path != "bucket" && storedKeys[ch.Path] && !(ch.Path == "metadata" && len(c.kept) > 0) {
			parts = append(parts, "reindex (storage form only)")
			break
		}
	}
	if moved {
		parts = append(parts, c.bucketSummary(bucket))
	}
	switch {
	case len(res.Changes) == 0:
		res.Kind = KindNone
		res.Summary = "unchanged"
	default:
		res.Summary = strings.Join(parts, "; ")
	}
	return res, nil
}

// --- shared ---------------------------------------------------------------------------------

// validateItem checks an item object with the import rules (codec.DecodeItemObject) and
// returns the item it describes.
func validateItem(obj map[string]any) (*gtc.Item, error) {
	b, err := marshalJSON(obj)
	if err != nil {
		return nil, docError("the document cannot be encoded as JSON: %v", err)
	}
	e, err := codec.DecodeItemObject(b)
	if err != nil {
		if ge, ok := gtc.AsError(err); ok && len(ge.Fields) > 0 {
			msgs := make([]string, len(ge.Fields))
			for i, f := range ge.Fields {
				msgs[i] = problem(f.Field, f.Message)
			}
			return nil, docError("%s", strings.Join(msgs, "; "))
		}
		return nil, docError("%v", err)
	}
	return e.Item, nil
}

// result encodes the item in its stored form and lists what changed.
func (c *converter) result(it *gtc.Item, kind Kind, moved bool) (Result, error) {
	body, err := gtc.DecodeRawObject(codec.ItemStoredJSON(it))
	if err != nil {
		return Result{}, fmt.Errorf("migrate: canonical document of %s does not decode: %w", it.Key(), err)
	}
	res := Result{Item: it, Body: body, Kind: kind, Changes: diff(c.before, body), Warnings: c.warnings}
	if moved {
		k := it.Key()
		res.NewKey = &k
	}
	return res, nil
}

// problem names a field and what is wrong with it the way the API's messages do: a message
// that starts with the field's generic path ("toolCalls[].name cannot be empty") gets the
// concrete path instead ("toolCalls[0].name cannot be empty"); any other is prefixed.
func problem(field, msg string) string {
	var g strings.Builder
	for i := 0; i < len(field); i++ {
		if field[i] == '[' {
			if j := strings.IndexByte(field[i:], ']'); j > 1 && isDigits(field[i+1:i+j]) {
				g.WriteString("[]")
				i += j
				continue
			}
		}
		g.WriteByte(field[i])
	}
	if generic := g.String(); strings.HasPrefix(msg, generic+" ") {
		return field + msg[len(generic):]
	}
	return field + ": " + msg
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// diff lists the top-level keys whose values differ, sorted by key.
func diff(before, after map[string]any) []Change {
	keys := sortedKeys(before)
	for k := range after {
		if _, ok := before[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []Change
	for _, k := range keys {
		b, inBefore := before[k]
		a, inAfter := after[k]
		if inBefore == inAfter && reflect.DeepEqual(a, b) {
			continue
		}
		out = append(out, Change{Path: k, Before: b, After: a, Added: !inBefore, Removed: !inAfter})
	}
	return out
}

// tagDiff describes how the manual tags changed: "+t" for each new tag in conversion order,
// then "-t" for each stored tag that is gone.
func tagDiff(old, final, order []string) string {
	var b strings.Builder
	seen := map[string]bool{}
	for _, t := range order {
		if !seen[t] && slices.Contains(final, t) && !slices.Contains(old, t) {
			seen[t] = true
			b.WriteString(" +" + t)
		}
	}
	for _, t := range old {
		if !seen["-"+t] && !slices.Contains(final, t) {
			seen["-"+t] = true
			b.WriteString(" -" + t)
		}
	}
	return b.String()
}

// stringList returns the strings of a JSON list (other elements skipped).
func stringList(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, el := range list {
		if s, ok := el.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

func isStringList(v any) bool {
	list, ok := v.([]any)
	if !ok {
		return false
	}
	for _, el := range list {
		if _, ok := el.(string); !ok {
			return false
		}
	}
	return true
}

// text is a string value trimmed, or "" for anything else.
func text(v any) string {
	s, _ := v.(string)
	return strings.TrimSpace(s)
}

// trimmed is v with surrounding whitespace removed when it is a string.
func trimmed(v any) any {
	if s, ok := v.(string); ok {
		return strings.TrimSpace(s)
	}
	return v
}

func isBlank(v any) bool {
	s, ok := v.(string)
	return ok && strings.TrimSpace(s) == ""
}

// isEmptyValue: null, a blank string, an empty list or an empty object (nothing to lose).
func isEmptyValue(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return strings.TrimSpace(t) == ""
	case []any:
		return len(t) == 0
	case map[string]any:
		return len(t) == 0
	}
	return false
}

func joinNonEmpty(sep string, parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// quote renders a value for a message: a string in single quotes, anything else as JSON.
func quote(v any) string {
	if s, ok := v.(string); ok {
		return "'" + s + "'"
	}
	return compactJSON(v)
}

// compactJSON renders a value as JSON for messages, cut after 80 characters.
func compactJSON(v any) string {
	b, err := marshalJSON(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if utf8.RuneCount(b) <= 80 {
		return string(b)
	}
	r := []rune(string(b))
	return string(r[:80]) + "…"
}

// marshalJSON encodes v without HTML escaping, so texts read back as they were.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}
