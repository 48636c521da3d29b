package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/gtc-dev/gtc/cmd/internal/ledger"
)

// curator fills its queue, reads and saves each item, and approves about one in four.
func (l *load) curator(n int, r *rand.Rand) {
	user := fmt.Sprintf("lt-%s-curator-%02d@example.com", l.runID, n)
	st := &curatorState{user: user, seen: map[ledger.Key]bool{}}
	l.mu.Lock()
	l.curators = append(l.curators, st)
	l.mu.Unlock()
	foreign := 0 // drafts of other datasets this curator holds (a shared server); never edited
	for round := 0; l.running(); round++ {
		// Ask for 10 of ours on top of the foreign items that stay in the queue (at most
		// the server's default maximum of 100).
		limit := min(100, 10+foreign)
		a, sent := l.send(opSelfServe, http.MethodPost, "/v1/assignments/self-serve", map[string]int{"limit": limit}, user, "", measured)
		if !sent {
			return
		}
		if a.err != nil || a.status/100 == 5 {
			st.claimsUnknown = true // it may have claimed items before it failed
		}
		if a.err != nil || a.status != http.StatusOK {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		var ss struct {
			Assigned      []item `json:"assigned"`
			NewlyAssigned int    `json:"newlyAssigned"`
		}
		if err := json.Unmarshal(a.body, &ss); err != nil {
			l.rec.note("%s: %v", opSelfServe, err)
			continue
		}
		l.claimed.Add(int64(ss.NewlyAssigned))
		var mine []item
		foreign = 0
		for _, it := range ss.Assigned {
			if it.DatasetName != l.queue {
				foreign++ // another dataset's draft on a shared server: never edited
				continue
			}
			// A claim is a write of the server's own: the ETag of an item this curator
			// sees for the first time is a new starting state. (Items it saw before hold
			// what its own writes made, which the ledger must explain by itself.)
			if !st.seen[it.key()] {
				st.seen[it.key()] = true
				l.led.Base(it.key(), normETag(it.ETag))
			}
			mine = append(mine, it)
		}
		storeMax(&l.foreignMax, int64(foreign))
		if len(mine) == 0 {
			l.dry.Add(1)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if round%4 == 3 {
			if _, sent := l.send(opMy, http.MethodGet, "/v1/assignments/my", nil, user, "", measured); !sent {
				return
			}
		}
		for _, q := range mine {
			if !l.running() {
				return
			}
			cur, ok := l.getItem(q.key(), user)
			if !ok {
				continue
			}
			path := itemPath("/v1/assignments", q.key())
			etag := l.write(opEdit, path, q.key(), cur.ETag,
				ledger.Fields{"status": "draft", "comment": l.comment(user), "manualTags": pickTags(r)}, user)
			if etag == "" || r.IntN(4) != 0 {
				continue
			}
			if l.write(opApprove, path, q.key(), etag,
				ledger.Fields{"status": "approved", "comment": l.comment(user), "manualTags": pickTags(r)}, user) != "" {
				l.approved.Add(1)
			}
		}
	}
}

// curatorState is what the end of the run needs to know of one curator.
type curatorState struct {
	user          string
	seen          map[ledger.Key]bool // queue items it got from self-serve
	claimsUnknown bool                // a self-serve failed: it may have claimed unseen items
}

// reconcileClaims records, for each curator whose self-serve failed, the items it holds
// but never saw: claims made by the request it got no answer to. Their ETags are
// starting states the ledger could not learn otherwise. It waits a moment first, for
// requests the client gave up on to finish in the server.
func (l *load) reconcileClaims() error {
	l.mu.Lock()
	curators := slices.Clone(l.curators)
	l.mu.Unlock()
	waited := false
	for _, st := range curators {
		if !st.claimsUnknown {
			continue
		}
		if !waited {
			time.Sleep(2 * time.Second)
			waited = true
		}
		a, _ := l.send(opMy, http.MethodGet, "/v1/assignments/my", nil, st.user, "", followUp)
		if a.err != nil || a.status != http.StatusOK {
			return fmt.Errorf("the queue of %s, whose self-serve failed, could not be read: %v %d", st.user, a.err, a.status)
		}
		var items []item
		if err := json.Unmarshal(a.body, &items); err != nil {
			return fmt.Errorf("the queue of %s: %w", st.user, err)
		}
		for _, it := range items {
			if it.DatasetName == l.queue && !st.seen[it.key()] {
				st.seen[it.key()] = true
				l.led.Base(it.key(), normETag(it.ETag))
				l.lateClaims.Add(1)
			}
		}
	}
	return nil
}

// editor reads a random library item and saves it through the curator PUT.
func (l *load) editor(n int, r *rand.Rand) {
	user := fmt.Sprintf("lt-%s-editor-%02d@example.com", l.runID, n)
	for l.running() {
		k := l.libKeys[r.IntN(len(l.libKeys))]
		cur, ok := l.getItem(k, user)
		if !ok {
			continue
		}
		l.write(opEditorPut, itemPath("/v1/ground-truths", k), k, cur.ETag,
			ledger.Fields{"comment": l.comment(user), "manualTags": pickTags(r)}, user)
	}
}

// explorer lists pages the way the explorer view filters them.
func (l *load) explorer(n int, r *rand.Rand) {
	user := fmt.Sprintf("lt-%s-explorer-%02d@example.com", l.runID, n)
	for l.running() {
		q := url.Values{"dataset": {[]string{l.queue, l.library}[r.IntN(2)]}, "limit": {"25"},
			"page": {fmt.Sprint(1 + r.IntN(3))}, "sortBy": {[]string{"reviewedAt", "updatedAt", "id"}[r.IntN(3)]}}
		if s := []string{"", "draft", "approved"}[r.IntN(3)]; s != "" {
			q.Set("status", s)
		}
		if t := []string{"", "source:sme", "topic:install", "source:synthetic"}[r.IntN(4)]; t != "" {
			q.Set("tags", t)
		}
		if r.IntN(8) == 0 {
			q.Set("keyword", agentKeyword)
		}
		if _, sent := l.send(opList, http.MethodGet, "/v1/ground-truths?"+q.Encode(), nil, user, "", measured); !sent {
			return
		}
	}
}

// exporter exports the approved items of both datasets, then pauses; it alternates a
// jsonl stream and the default snapshot as an attachment (artifacts would leave files in
// a shared server's export storage).
func (l *load) exporter(every time.Duration) {
	user := fmt.Sprintf("lt-%s-exporter@example.com", l.runID)
	for i := 0; l.running(); i++ {
		body := map[string]any{"filters": map[string]any{"datasetNames": []string{l.library, l.queue}}}
		if i%2 == 0 {
			body["format"], body["delivery"] = "jsonl", map[string]any{"mode": "stream"}
		}
		if _, sent := l.send(opExport, http.MethodPost, "/v1/ground-truths/snapshot", body, user, "", measured); !sent {
			return
		}
		l.sleep(every)
	}
}

// sleep waits d, or less when the load ends first.
func (l *load) sleep(d time.Duration) {
	end := time.Now().Add(d)
	for l.running() && time.Now().Before(end) {
		time.Sleep(min(50*time.Millisecond, time.Until(end)))
	}
}
