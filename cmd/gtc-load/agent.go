package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gtc-dev/gtc/cmd/internal/ledger"
)

// agent runs two bulk tag operations on the library, at a third and at two thirds of the
// run, and puts each one's applied items into the ledger.
func (l *load) agent() {
	user := fmt.Sprintf("lt-%s-agent@example.com", l.runID)
	ops := []struct {
		at   time.Duration
		args map[string]any
	}{
		{l.deadline.Sub(l.start) / 3, map[string]any{"operation": "find_and_tag", "keyword": agentKeyword, "tag": "topic:performance", "dataset": l.library}},
		{2 * l.deadline.Sub(l.start) / 3, map[string]any{"operation": "merge_tags", "tag_from": "topic:performance", "tag_to": "intent:feedback", "dataset": l.library}},
	}
	for _, op := range ops {
		l.sleep(time.Until(l.start.Add(op.at)))
		if !l.running() {
			return
		}
		l.agentOp(user, op.args)
	}
}

type toolResult struct {
	Content string          `json:"content"`
	Data    json.RawMessage `json:"data"`
	IsError bool            `json:"isError"`
}

// toolOutcome is how a tool call ended.
type toolOutcome int

const (
	toolOK      toolOutcome = iota
	toolNotSent             // the load was over
	toolFailed              // answered with an error: nothing was done
	toolUnknown             // no answer, or a 5xx: the call may or may not have taken effect
)

// tool calls one agent tool (failures are recorded).
func (l *load) tool(kind, name, user string, args map[string]any, mode sendMode) (toolResult, toolOutcome) {
	a, sent := l.send(kind, http.MethodPost, "/v1/agent/tools/"+name, args, user, "", mode)
	switch {
	case !sent:
		return toolResult{}, toolNotSent
	case a.err != nil || a.status/100 == 5:
		return toolResult{}, toolUnknown
	case a.status != http.StatusOK:
		return toolResult{}, toolFailed
	}
	var tr toolResult
	if err := json.Unmarshal(a.body, &tr); err != nil {
		l.rec.note("%s: %v", kind, err)
		return toolResult{}, toolUnknown
	}
	if tr.IsError {
		l.rec.note("%s: tool error: %.300s", kind, tr.Content)
		return toolResult{}, toolFailed
	}
	return tr, toolOK
}

func (l *load) agentLine(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.agentLines = append(l.agentLines, fmt.Sprintf(format, args...))
}

// agentOp previews args, executes them, waits until the operation has finished and
// records its items. Once the execution was sent, every follow-up read is sent even when
// the load is over: the ledger must know every write the operation made.
func (l *load) agentOp(user string, args map[string]any) {
	pv, res := l.tool(opPreview, "manage_tags", user, cloneArgs(args, true), measured)
	if res != toolOK {
		if res != toolNotSent {
			l.agentLine("%s: the preview failed; nothing executed", args["operation"])
		}
		return
	}
	var p struct {
		PreviewID   string `json:"previewId"`
		WouldChange int    `json:"wouldChange"`
	}
	_ = json.Unmarshal(pv.Data, &p)
	if p.WouldChange == 0 {
		l.agentLine("%s: preview found nothing to change", args["operation"])
		return
	}
	ex, res := l.tool(opExecute, "manage_tags", user, cloneArgs(args, false), long)
	var opID string
	switch res {
	case toolNotSent:
		return
	case toolFailed:
		l.agentLine("%s: the execution was refused", args["operation"])
		return
	case toolOK:
		var e struct {
			OperationID string `json:"operationId"`
		}
		if err := json.Unmarshal(ex.Data, &e); err != nil || e.OperationID == "" {
			l.rec.note("%s: no operation id in %.300s", opExecute, ex.Data)
			return
		}
		opID = e.OperationID
	case toolUnknown:
		// The execution may have started: look for the operation made from the preview.
		if opID = l.findOperation(user, p.PreviewID); opID == "" {
			l.agentLine("%s: the execution got no answer and no operation came from preview %s", args["operation"], p.PreviewID)
			return
		}
	}
	for {
		op, res := l.tool(opListOps, "list_tag_operations", user, map[string]any{"operation_id": opID}, followUp)
		if res != toolOK {
			l.rec.note("agent: cannot read operation %s; its writes are missing from the ledger", opID)
			return
		}
		var got struct {
			Operation struct {
				Status string `json:"status"`
				Items  []struct {
					DatasetName      string   `json:"datasetName"`
					Bucket           string   `json:"bucket"`
					ID               string   `json:"id"`
					Result           string   `json:"result"`
					ETagBefore       string   `json:"etagBefore"`
					ETagAfter        *string  `json:"etagAfter"`
					ManualTagsBefore []string `json:"manualTagsBefore"`
					ManualTagsAfter  []string `json:"manualTagsAfter"`
				} `json:"items"`
			} `json:"operation"`
			ItemsTruncated bool `json:"itemsTruncated"`
		}
		if err := json.Unmarshal(op.Data, &got); err != nil {
			l.rec.note("%s: %v", opListOps, err)
			return
		}
		if got.Operation.Status == "running" {
			time.Sleep(250 * time.Millisecond)
			continue
		}
		if got.ItemsTruncated {
			l.rec.note("agent: operation %s lists only part of its items; the ledger cannot know every write", opID)
		}
		results := map[string]int{}
		for _, it := range got.Operation.Items {
			k := ledger.Key{Dataset: it.DatasetName, Bucket: it.Bucket, ID: it.ID}
			results[it.Result]++
			switch it.Result {
			case "applied":
				if it.ETagAfter == nil {
					l.rec.note("agent: %s applied without etagAfter", k)
					continue
				}
				l.led.Ack(k, normETag(it.ETagBefore), normETag(*it.ETagAfter), ledger.Fields{"manualTags": it.ManualTagsAfter})
			case "failed", "pending":
				// May or may not have landed: with the planned tags or not at all.
				l.led.Unknown(k, normETag(it.ETagBefore), ledger.Fields{"manualTags": plannedTags(args, it.ManualTagsBefore)})
			}
		}
		l.agentLine("%s %s: %s; items %s", args["operation"], opID, got.Operation.Status, resultText(results))
		return
	}
}

// findOperation looks among the agent's newest operations for the one executed from
// preview previewID; it asks a few times, since the server may still be starting it.
func (l *load) findOperation(user, previewID string) string {
	for attempt := 0; attempt < 20; attempt++ {
		list, res := l.tool(opListOps, "list_tag_operations", user, map[string]any{"mine_only": true, "limit": 10}, followUp)
		if res == toolOK {
			var got struct {
				Operations []struct {
					OperationID string `json:"operationId"`
					PreviewID   string `json:"previewId"`
				} `json:"operations"`
			}
			_ = json.Unmarshal(list.Data, &got)
			for _, op := range got.Operations {
				if op.PreviewID == previewID {
					return op.OperationID
				}
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	return ""
}

func cloneArgs(args map[string]any, dryRun bool) map[string]any {
	out := make(map[string]any, len(args)+1)
	for k, v := range args {
		out[k] = v
	}
	out["dry_run"] = dryRun
	return out
}

// plannedTags is what a find_and_tag or merge_tags sets on an item with tags before.
func plannedTags(args map[string]any, before []string) []string {
	set := map[string]bool{}
	for _, t := range before {
		set[t] = true
	}
	switch args["operation"] {
	case "find_and_tag":
		set[args["tag"].(string)] = true
	case "merge_tags":
		delete(set, args["tag_from"].(string))
		set[args["tag_to"].(string)] = true
	}
	out := make([]string, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// resultText lists an operation's item results, e.g. "applied×180 skipped_changed×3".
func resultText(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s×%d", n, m[n])
	}
	return strings.Join(parts, " ")
}
