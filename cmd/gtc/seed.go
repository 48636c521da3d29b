package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gtc-dev/gtc"
)

func runSeed(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("seed", flag.ContinueOnError)
	fs.SetOutput(stderr)
	items := fs.Int("items", 200, "number of items to generate")
	datasets := fs.Int("datasets", 3, "number of datasets to spread them over")
	seed := fs.Uint64("seed", 1, "random seed; the same seed gives the same items")
	ifEmpty := fs.Bool("if-empty", false, "do nothing when the store already has items")
	workers := fs.Int("concurrency", 8, "parallel writers")
	status := fs.String("status", "", "give every item this status (default: a realistic mix)")
	if err := fs.Parse(args); err != nil {
		return usageError("seed: %v", err)
	}
	if *status != "" && !gtc.Status(*status).Valid() {
		return usageError("seed: --status %q: must be one of %s", *status, gtc.StatusList)
	}
	if *items < 0 || *datasets < 1 || *workers < 1 {
		return usageError("seed: --items must be ≥ 0, --datasets and --concurrency ≥ 1")
	}
	a, err := openApp(ctx, stderr)
	if err != nil {
		return err
	}
	defer func() { _ = a.Close() }()
	if *ifEmpty {
		counts, err := a.store.Items().CountByStatus(ctx)
		if err != nil {
			return fatal(fmt.Errorf("count items: %w", err))
		}
		total := 0
		for _, n := range counts {
			total += n
		}
		if total > 0 {
			fmt.Fprintf(stdout, "store already has %d items; nothing seeded\n", total)
			return nil
		}
	}
	start := time.Now()
	gen := newSeedGenerator(*seed, *datasets, time.Now().UTC())
	// Items in flight are finished after a signal; the feed stops.
	wctx := gtc.WithCaller(context.WithoutCancel(ctx), gtc.Caller{UserID: "seed@gtc.local"})
	jobs := make(chan int)
	var created, skipped atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	for range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				it, raw := gen.item(i)
				if *status != "" {
					gen.force(it, gtc.Status(*status))
				}
				_, err := a.curator.CreateItem(wctx, it, raw)
				switch {
				case err == nil:
					created.Add(1)
				case errors.Is(err, gtc.ErrConflict):
					skipped.Add(1)
				default:
					errOnce.Do(func() { firstErr = err })
				}
			}
		}()
	}
feed:
	for i := 0; i < *items; i++ {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
		if firstErr != nil {
			break
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return fatal(fmt.Errorf("seed: %w", firstErr))
	}
	if ctx.Err() != nil {
		fmt.Fprintf(stdout, "seeded %d items before the interruption\n", created.Load())
		return errInterrupted
	}
	fmt.Fprintf(stdout, "seeded %d items in %d datasets (%d already present) in %s\n",
		created.Load(), *datasets, skipped.Load(), time.Since(start).Round(time.Millisecond))
	return nil
}

// seedGenerator makes realistic, deterministic demo items: multi-turn conversations, tool
// calls, expected tools, references, manual tags, mixed statuses and assignments. Item i
// depends only on the seed and i, so runs are repeatable and workers can share it.
type seedGenerator struct {
	seed     uint64
	datasets []string
	now      time.Time
}

var seedDatasetNames = []string{"customer-support", "billing-agent", "devops-assistant", "hr-policies",
	"product-docs", "sales-copilot", "security-faq", "onboarding"}

func newSeedGenerator(seed uint64, n int, now time.Time) *seedGenerator {
	ds := make([]string, n)
	for i := range ds {
		name := seedDatasetNames[i%len(seedDatasetNames)]
		if i >= len(seedDatasetNames) {
			name = fmt.Sprintf("%s-%d", name, i/len(seedDatasetNames)+1)
		}
		ds[i] = name
	}
	return &seedGenerator{seed: seed, datasets: ds, now: now.Truncate(time.Millisecond)}
}

type seedTopic struct {
	tag       string
	questions []string
	answers   []string
	followUps []string
	paths     []string
}

var seedTopics = []seedTopic{
	{"topic:install", []string{
		"Where do I download the installer for the desktop client?",
		"The installation fails with error 0x80070005 on Windows 11. What should I check first?",
		"Can I install the agent silently on a fleet of machines using our deployment tool and a configuration file?",
	}, []string{
		"Use the download page in the admin portal; the installer is signed and works on Windows and macOS.",
		"That code means access denied. Run the installer as an administrator and make sure no antivirus blocks the service account.",
		"Yes. Pass /quiet and point CONFIG_FILE at your settings file; the deployment guide lists every property.",
	}, []string{"Does it also work on ARM machines?", "Which ports does the agent need open?"},
		[]string{"/install/desktop", "/help/install-errors", "/kb/CS104233"}},
	{"topic:license", []string{
		"How many seats are included in the team plan?",
		"We are moving from monthly to annual billing. Do unused seats carry over to the new term?",
	}, []string{
		"The team plan includes 25 seats; you can add more in blocks of five.",
		"Unused seats are credited pro rata on the first annual invoice.",
	}, []string{"Is there a discount for non-profits?"},
		[]string{"/licensing/plans", "/help/billing/annual"}},
	{"topic:performance", []string{
		"Search results take more than ten seconds to load for large workspaces. How can we speed that up?",
		"What is the recommended memory for the indexing service?",
	}, []string{
		"Enable incremental indexing and raise the worker count; large workspaces should also use the regional cache.",
		"Plan for 4 GiB per million documents, plus 2 GiB of headroom.",
	}, []string{"Does the cache need its own disk?"},
		[]string{"/performance/tuning", "/kb/CS220871"}},
	{"topic:security", []string{
		"Is customer data encrypted at rest?",
		"How do I rotate the API keys without downtime for the integrations that use them?",
		"Can we restrict sign-in to our corporate network?",
	}, []string{
		"Yes, all data is encrypted at rest with AES-256 and keys are managed per tenant.",
		"Create the second key, roll it out to every integration, then revoke the first one.",
		"Use conditional access with a named location for your corporate IP ranges.",
	}, []string{"Who can see the audit log?"},
		[]string{"/security/encryption", "/help/security/keys", "/kb/CS310045"}},
	{"topic:compatibility", []string{
		"Does the plugin work with version 12 of the editor?",
		"Which browsers are supported?",
	}, []string{
		"Version 12 is supported from plugin release 4.2 onwards.",
		"The current versions of Edge, Chrome, Firefox and Safari are supported.",
	}, []string{"And the version before that?"},
		[]string{"/compatibility/matrix", "/help/browsers"}},
	{"topic:general", []string{
		"What is the difference between a workspace and a project?",
		"How do I contact support outside business hours?",
	}, []string{
		"A workspace holds people and settings; projects live inside a workspace and hold the work.",
		"Use the in-app chat; urgent incidents can be raised by phone from the status page.",
	}, []string{"Can a project move between workspaces?"},
		[]string{"/concepts/workspaces", "/help/contact"}},
}

var seedTools = []string{"search_docs", "get_order_status", "lookup_account", "create_ticket", "calculate_refund", "escalate_to_human"}
var seedCurators = []string{"alice@example.com", "bob@example.com", "chen@example.com", "dana@example.com"}
var seedSources = []string{"source:sme", "source:synthetic", "source:sme_curated", "source:user", "source:sa"}

func (g *seedGenerator) item(i int) (*gtc.Item, []string) {
	r := rand.New(rand.NewPCG(g.seed, uint64(i)))
	ds := g.datasets[i%len(g.datasets)]
	it := gtc.NewItem(ds, fmt.Sprintf("gt-%06d", i))
	topic := seedTopics[r.IntN(len(seedTopics))]

	// Conversation: one to three exchanges, sometimes with a planner step.
	exchanges := 1 + r.IntN(3)
	for e := 0; e < exchanges; e++ {
		q := topic.questions[r.IntN(len(topic.questions))]
		if e > 0 {
			q = topic.followUps[r.IntN(len(topic.followUps))]
		}
		turn := fmt.Sprintf("t%d", 2*e+1)
		it.History = append(it.History, gtc.HistoryEntry{Role: "user", Msg: q, TurnID: &turn})
		if r.IntN(5) == 0 {
			it.History = append(it.History, gtc.HistoryEntry{Role: "planner", Msg: "Look up the relevant documentation before answering."})
		}
		a := topic.answers[r.IntN(len(topic.answers))]
		if r.IntN(25) == 0 {
			a = "NO_ANSWER"
		}
		aturn := fmt.Sprintf("t%d", 2*e+2)
		h := gtc.HistoryEntry{Role: "assistant", Msg: a, TurnID: &aturn}
		if r.IntN(3) == 0 {
			h.ExpectedBehavior = []string{"tool:search", "generation:answer"}
		}
		it.History = append(it.History, h)
	}

	// Tool calls and expectations: required tools are always among the calls.
	nCalls := r.IntN(4)
	called := map[string]bool{}
	for c := 0; c < nCalls; c++ {
		name := seedTools[r.IntN(len(seedTools))]
		step := int64(c + 1)
		args, _ := json.Marshal(map[string]any{"query": strings.ToLower(strings.Fields(it.History[0].Msg)[0]), "top": 5})
		resp, _ := json.Marshal(map[string]any{"status": "ok", "hits": r.IntN(8)})
		it.ToolCalls = append(it.ToolCalls, gtc.ToolCall{ID: fmt.Sprintf("call_%d", c+1), Name: name, CallType: "tool",
			Arguments: args, StepNumber: &step, Response: resp})
		called[name] = true
	}
	for _, name := range seedTools {
		switch {
		case called[name] && len(it.ExpectedTools.Required) == 0:
			it.ExpectedTools.Required = append(it.ExpectedTools.Required, gtc.ToolExpectation{Name: name})
		case called[name]:
			it.ExpectedTools.Optional = append(it.ExpectedTools.Optional, gtc.ToolExpectation{Name: name})
		case name == "escalate_to_human" && r.IntN(2) == 0:
			it.ExpectedTools.NotNeeded = append(it.ExpectedTools.NotNeeded, gtc.ToolExpectation{Name: name})
		}
	}

	// References in the rag-compat slot.
	nRefs := r.IntN(5)
	if nRefs > 0 {
		refs := make([]map[string]any, 0, nRefs)
		for k := 0; k < nRefs; k++ {
			path := topic.paths[r.IntN(len(topic.paths))]
			ref := map[string]any{
				"url":   fmt.Sprintf("https://docs.example.com%s?ref=%d", path, k),
				"title": titleOf(path),
				"bonus": k > 1,
			}
			if r.IntN(2) == 0 {
				ref["visitedAt"] = gtc.FormatAPITime(g.now.Add(-time.Duration(r.IntN(90*24)) * time.Hour))
				ref["keyParagraph"] = "See the section on " + strings.TrimPrefix(topic.tag, "topic:") + "."
			}
			refs = append(refs, ref)
		}
		data, _ := json.Marshal(map[string]any{"references": refs})
		it.Plugins[gtc.RAGCompatSlot] = gtc.PluginPayload{Kind: gtc.RAGCompatSlot, Version: "1.0", Data: data}
	}

	if r.IntN(4) == 0 {
		it.ContextEntries = append(it.ContextEntries, gtc.ContextEntry{Key: "customerTier", Value: json.RawMessage(`"enterprise"`)})
	}
	if r.IntN(5) == 0 {
		it.Feedback = append(it.Feedback, gtc.FeedbackEntry{Source: "thumbs", Values: json.RawMessage(`{"rating":` + fmt.Sprint(1+r.IntN(5)) + `}`)})
	}
	if r.IntN(3) == 0 {
		it.TraceIDs = map[string]string{"traceId": fmt.Sprintf("%032x", r.Uint64()), "conversationId": fmt.Sprintf("conv-%d", r.IntN(100000))}
	}
	it.Metadata = json.RawMessage(fmt.Sprintf(`{"origin":"seed","score":%.2f,"seq":%d}`, r.Float64(), i))
	if r.IntN(6) == 0 {
		it.Comment = "Check the answer against the latest release notes."
	}
	it.ScenarioID = fmt.Sprintf("scenario-%02d", r.IntN(40))

	// Manual tags respect the exclusive groups of the built-in schema.
	raw := []string{seedSources[r.IntN(len(seedSources))], topic.tag}
	if r.IntN(2) == 0 {
		raw = append(raw, []string{"difficulty:easy", "difficulty:medium", "difficulty:hard"}[r.IntN(3)])
	}
	if r.IntN(3) == 0 {
		raw = append(raw, []string{"intent:informational", "intent:action", "intent:clarification"}[r.IntN(3)])
	}

	// Status mix and the matching server-managed fields.
	created := g.now.Add(-time.Duration(r.IntN(90*24*60)) * time.Minute)
	it.CreatedAt = &created
	it.UpdatedAt = created.Add(time.Duration(r.IntN(7*24*60)) * time.Minute)
	if it.UpdatedAt.After(g.now) {
		it.UpdatedAt = g.now
	}
	switch p := r.IntN(100); {
	case p < 45:
		it.Status = gtc.StatusDraft
		if r.IntN(3) == 0 {
			g.assign(it, r)
		}
	case p < 80:
		it.Status = gtc.StatusApproved
		rev := it.UpdatedAt
		it.ReviewedAt = &rev
		who := seedCurators[r.IntN(len(seedCurators))]
		it.UpdatedBy = &who
	case p < 90:
		it.Status = gtc.StatusSkipped
		g.assign(it, r)
	default:
		it.Status = gtc.StatusDeleted
	}
	return it, raw
}

// force gives an item another status with the server-managed fields that go with it.
func (g *seedGenerator) force(it *gtc.Item, st gtc.Status) {
	it.Status = st
	switch st {
	case gtc.StatusApproved:
		rev := it.UpdatedAt
		it.ReviewedAt = &rev
		who := seedCurators[0]
		it.UpdatedBy = &who
		it.AssignedTo, it.AssignedAt = nil, nil
	case gtc.StatusDraft:
		it.ReviewedAt, it.UpdatedBy = nil, nil
		it.AssignedTo, it.AssignedAt = nil, nil
	case gtc.StatusSkipped:
		if it.AssignedTo == nil {
			who, at := seedCurators[1], it.UpdatedAt
			it.AssignedTo, it.AssignedAt = &who, &at
		}
	}
}

func (g *seedGenerator) assign(it *gtc.Item, r *rand.Rand) {
	who := seedCurators[r.IntN(len(seedCurators))]
	at := it.UpdatedAt
	it.AssignedTo = &who
	it.AssignedAt = &at
}

// titleOf makes a page title from the last segment of a documentation path.
func titleOf(path string) string {
	last := strings.ReplaceAll(path[strings.LastIndex(path, "/")+1:], "-", " ")
	if last == "" {
		return "Documentation"
	}
	return strings.ToUpper(last[:1]) + last[1:]
}
