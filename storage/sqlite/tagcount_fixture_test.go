package sqlite

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/tagging"
)

// tagFixtureDatasets are the dataset names of the tag-count fixtures.
var tagFixtureDatasets = []string{"customer-support", "billing-agent", "devops-assistant", "hr-policies",
	"product-docs", "sales-copilot", "security-faq", "onboarding", "Mixed Case DS", "legal"}

// tagFixtureManual are the manual tags the fixtures draw from, a misspelling and a stray tag
// in a computed group among them.
var tagFixtureManual = []string{
	"topic:install", "topic:instal", "topic:license", "topic:performance", "topic:security",
	"topic:compatibility", "topic:general", "source:sme", "source:synthetic", "source:sa",
	"difficulty:easy", "difficulty:hard", "intent:action", "intent:info", "turns:three",
}

// tagFixtureItem is item n of a tag-count fixture: a conversation of one to three exchanges
// with a question of varying length, zero to four references, zero to three manual tags
// (about a third of the items have none) and the computed tags reg derives from it.
func tagFixtureItem(r *rand.Rand, reg *tagging.Registry, n int, base time.Time) *gtc.Item {
	ds := tagFixtureDatasets[n%len(tagFixtureDatasets)]
	id := fmt.Sprintf("gt-%06d", n)
	it := gtc.NewItem(ds, id)
	it.Bucket = gtc.DeriveBucket(ds, id)
	it.Status = []gtc.Status{gtc.StatusDraft, gtc.StatusDraft, gtc.StatusApproved, gtc.StatusSkipped, gtc.StatusDeleted}[r.IntN(5)]
	it.UpdatedAt = base.Add(-time.Duration(r.IntN(365*24*3600)) * time.Second)
	for e := range 1 + r.IntN(3) {
		q := benchText(r, []int{4, 15, 40}[r.IntN(3)])
		if e == 0 && r.IntN(10) == 0 {
			q += " password reset"
		}
		a := benchText(r, 30)
		if r.IntN(25) == 0 {
			a = "NO_ANSWER"
		}
		it.History = append(it.History, gtc.HistoryEntry{Role: "user", Msg: q}, gtc.HistoryEntry{Role: "assistant", Msg: a})
	}
	if nRefs := r.IntN(5); nRefs > 0 {
		refs := make([]map[string]any, 0, nRefs)
		for k := range nRefs {
			host := []string{"https://docs.example.com/article/", "https://support.example.com/helpcenter/"}[r.IntN(2)]
			refs = append(refs, map[string]any{"url": fmt.Sprintf("%s%d/%d", host, n, k), "title": benchText(r, 4)})
		}
		data, _ := json.Marshal(map[string]any{"references": refs})
		it.Plugins[gtc.RAGCompatSlot] = gtc.PluginPayload{Kind: gtc.RAGCompatSlot, Version: "1.0", Data: data}
	}
	if r.IntN(3) > 0 {
		for range 1 + r.IntN(3) {
			t := tagFixtureManual[r.IntN(len(tagFixtureManual))]
			if !containsString(it.ManualTags, t) {
				it.ManualTags = append(it.ManualTags, t)
			}
		}
	}
	it.ComputedTags = reg.Compute(it)
	return it
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
