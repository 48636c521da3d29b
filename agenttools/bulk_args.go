package agenttools

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/gtc-dev/gtc/tagging"
)

// opArgs are the canonical arguments of a writing tool call: what a
// preview binds to. dry_run is never part of them.
type opArgs struct {
	Tool        string   // "manage_tags" or "undo_tag_operation"
	Operation   string   // find_and_tag, delete_tag, merge_tags, undo
	Tag         string   // find_and_tag: to add; delete_tag: to remove
	TagFrom     string   // merge_tags
	TagTo       string   // merge_tags
	Keyword     string   // find_and_tag, trimmed and lower-cased
	Dataset     string   // "" = every dataset
	Status      string   // find_and_tag; "" = every status but deleted
	Tags        []string // find_and_tag filter, normalized, de-duplicated, sorted
	OperationID string   // undo target
}

// wire returns the arguments as the tool takes them (snake_case), with every field of the
// operation present: the audit entry's args and the data of previews and executions.
func (a opArgs) wire() map[string]any {
	opt := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	switch a.Operation {
	case "find_and_tag":
		tags := a.Tags
		if tags == nil {
			tags = []string{}
		}
		return map[string]any{"operation": a.Operation, "keyword": a.Keyword, "tag": a.Tag,
			"dataset": opt(a.Dataset), "status": opt(a.Status), "tags": tags}
	case "delete_tag":
		return map[string]any{"operation": a.Operation, "tag": a.Tag, "dataset": opt(a.Dataset)}
	case "merge_tags":
		return map[string]any{"operation": a.Operation, "tag_from": a.TagFrom, "tag_to": a.TagTo, "dataset": opt(a.Dataset)}
	default:
		return map[string]any{"operation_id": a.OperationID}
	}
}

// hash is the SHA-256 of the canonical arguments with sorted keys (encoding/json sorts map
// keys), the tool included.
func (a opArgs) hash() string {
	m := a.wire()
	m["tool"] = a.Tool
	b, _ := json.Marshal(m) // strings, nils and string slices cannot fail
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// tags lists every tag the arguments name, sorted: what an execution locks and what the
// audit log is filtered by.
func (a opArgs) tags() []string {
	var out []string
	for _, t := range []string{a.Tag, a.TagFrom, a.TagTo} {
		if t != "" {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// describe is the operation and its tags as the texts show them: merge_tags 'a' -> 'b'.
func (a opArgs) describe() string {
	switch a.Operation {
	case "find_and_tag":
		return fmt.Sprintf("find_and_tag %q -> '%s'", a.Keyword, a.Tag)
	case "delete_tag":
		return fmt.Sprintf("delete_tag '%s'", a.Tag)
	case "merge_tags":
		return fmt.Sprintf("merge_tags '%s' -> '%s'", a.TagFrom, a.TagTo)
	default:
		return "undo " + a.OperationID
	}
}

// scope is the filter part of the texts: "all datasets", "dataset x, status draft".
func (a opArgs) scope() string {
	parts := []string{rdDatasetScope(a.Dataset)}
	if a.Operation == "find_and_tag" {
		if a.Status != "" {
			parts = append(parts, "status "+a.Status)
		} else {
			parts = append(parts, "every status but deleted")
		}
		if len(a.Tags) > 0 {
			parts = append(parts, "tags "+strings.Join(a.Tags, ", "))
		}
	}
	return strings.Join(parts, ", ")
}

// tagRole says how an argument tag is used, which decides the computed-tag refusal.
type tagRole int

const (
	roleAdd tagRole = iota
	roleRemove
)

// checkArgTag normalizes one tag argument and refuses a computed one: a tag under a dynamic
// prefix, a static key, or an unknown tag to add in a computed group.
func (b *Bulk) checkArgTag(field, raw string, role tagRole, known map[string]bool) (string, *ToolResult) {
	t, err := tagging.Normalize(raw)
	if err != nil {
		r := ToolFailure(CodeInvalidTag, err.Error(), map[string]any{"fields": []FieldProblem{{Field: field, Message: err.Error()}}})
		return "", &r
	}
	for _, p := range b.reg.DynamicPrefixes() {
		if strings.HasPrefix(t, p) {
			r := ToolFailure(CodeComputedTag, fmt.Sprintf("Refused: '%s' tags come from each item's dataset name and cannot be changed by tools.", p+"…"),
				map[string]any{"tag": t})
			return "", &r
		}
	}
	computedKey := slices.Contains(b.reg.StaticKeys(), t)
	group, _, _ := strings.Cut(t, ":")
	if computedKey || role == roleAdd && b.computedGroups[group] && !known[t] {
		r := ToolFailure(CodeComputedTag, fmt.Sprintf("Refused: '%s' is a computed tag, derived by plugins from item content. Tools can add, remove or rename manual tags only.", t),
			map[string]any{"tag": t})
		return "", &r
	}
	return t, nil
}

// parseManageArgs turns manage_tags arguments into canonical ones, or the refusal.
func (b *Bulk) parseManageArgs(args map[string]any, known map[string]bool) (opArgs, *ToolResult) {
	a := opArgs{Tool: ToolManageTags, Operation: argString(args, "operation"), Dataset: argString(args, "dataset")}
	var bad *ToolResult
	switch a.Operation {
	case "find_and_tag":
		a.Keyword = strings.ToLower(argString(args, "keyword"))
		a.Status = argString(args, "status")
		if a.Tag, bad = b.checkArgTag("tag", argString(args, "tag"), roleAdd, known); bad != nil {
			return a, bad
		}
		if a.Tags, bad = filterTags(args, "tags"); bad != nil {
			return a, bad
		}
		slices.Sort(a.Tags)
		a.Tags = slices.Compact(a.Tags)
	case "delete_tag":
		if a.Tag, bad = b.checkArgTag("tag", argString(args, "tag"), roleRemove, known); bad != nil {
			return a, bad
		}
	case "merge_tags":
		if a.TagFrom, bad = b.checkArgTag("tag_from", argString(args, "tag_from"), roleRemove, known); bad != nil {
			return a, bad
		}
		if a.TagTo, bad = b.checkArgTag("tag_to", argString(args, "tag_to"), roleAdd, known); bad != nil {
			return a, bad
		}
		if a.TagFrom == a.TagTo {
			r := ToolFailure(CodeIdenticalTags, fmt.Sprintf("Refused: tag_from and tag_to are identical after normalization ('%s'); nothing to merge.", a.TagFrom),
				map[string]any{"tag": a.TagFrom})
			return a, &r
		}
	default:
		r := ToolFailure(CodeInvalidInput, fmt.Sprintf("Invalid input: operation must be one of find_and_tag, delete_tag, merge_tags (got '%s').", a.Operation),
			map[string]any{"fields": []FieldProblem{{Field: "operation", Message: "must be one of find_and_tag, delete_tag, merge_tags"}}})
		return a, &r
	}
	return a, nil
}
