package agenttools

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/gtc-dev/gtc"
)

// Previews are kept in the store (gtc.AgentPreviewStore), so that an execution on any
// server of the store applies a dry run made on any other. The store keeps the plan as the
// bytes encodePlan makes: the plan's JSON (storedPlan), gzip-compressed, since the plan of
// 10,000 changes is several megabytes of repetitive text.

// planFormat is the version of storedPlan; a plan of another version is not executed.
const planFormat = 1

// storedPlan is a plan as a preview keeps it. An undo's target operation is not kept: the
// execution reads it again.
type storedPlan struct {
	Format           int            `json:"format"`
	Args             storedArgs     `json:"args"`
	Matched          int            `json:"matched"`
	Changes          []storedChange `json:"changes"`
	Unchanged        int            `json:"unchanged"`
	Skipped          []storedSkip   `json:"skipped,omitzero"`
	ByDataset        map[string]int `json:"byDataset"`
	AlreadyHadTarget int            `json:"alreadyHadTarget"`
	Notes            []string       `json:"notes,omitzero"`
}

type storedArgs struct {
	Tool        string   `json:"tool"`
	Operation   string   `json:"operation"`
	Tag         string   `json:"tag,omitzero"`
	TagFrom     string   `json:"tagFrom,omitzero"`
	TagTo       string   `json:"tagTo,omitzero"`
	Keyword     string   `json:"keyword,omitzero"`
	Dataset     string   `json:"dataset,omitzero"`
	Status      string   `json:"status,omitzero"`
	Tags        []string `json:"tags,omitzero"`
	OperationID string   `json:"operationId,omitzero"`
}

// storedChange is a change; a nil tag list is left out, so it reads back nil, and an empty
// one is written [].
type storedChange struct {
	DatasetName      string     `json:"datasetName"`
	Bucket           string     `json:"bucket"`
	ID               string     `json:"id"`
	Status           gtc.Status `json:"status"`
	Question         string     `json:"question"`
	ETag             string     `json:"etag"`
	Before           []string   `json:"before,omitzero"`
	After            []string   `json:"after,omitzero"`
	AlreadyHadTarget bool       `json:"alreadyHadTarget,omitzero"`
}

type storedSkip struct {
	DatasetName string `json:"datasetName"`
	Bucket      string `json:"bucket"`
	ID          string `json:"id"`
	Reason      string `json:"reason"`
}

// encodePlan turns p into the bytes a preview keeps.
func encodePlan(p *plan) ([]byte, error) {
	sp := storedPlan{Format: planFormat, Args: storedArgs(p.args),
		Matched: p.matched, Changes: make([]storedChange, len(p.changes)), Unchanged: p.unchanged,
		ByDataset: p.byDataset, AlreadyHadTarget: p.alreadyHadTarget, Notes: p.notes}
	for i, c := range p.changes {
		sp.Changes[i] = storedChange{DatasetName: c.key.DatasetName, Bucket: c.key.Bucket, ID: c.key.ID, Status: c.status,
			Question: c.question, ETag: c.etag, Before: c.before, After: c.after, AlreadyHadTarget: c.alreadyHadTarget}
	}
	if len(p.skipped) > 0 {
		sp.Skipped = make([]storedSkip, len(p.skipped))
		for i, s := range p.skipped {
			sp.Skipped[i] = storedSkip{DatasetName: s.key.DatasetName, Bucket: s.key.Bucket, ID: s.key.ID, Reason: s.reason}
		}
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed) // a valid level cannot fail
	if err := json.MarshalWrite(zw, sp); err != nil {
		return nil, fmt.Errorf("encode the plan: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("encode the plan: %w", err)
	}
	return buf.Bytes(), nil
}

// decodePlan reads back a plan encodePlan made.
func decodePlan(data []byte) (*plan, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("decode the plan: %w", err)
	}
	var sp storedPlan
	if err := json.UnmarshalRead(zr, &sp); err != nil {
		return nil, fmt.Errorf("decode the plan: %w", err)
	}
	if sp.Format != planFormat {
		return nil, fmt.Errorf("decode the plan: format %d, not %d", sp.Format, planFormat)
	}
	p := &plan{args: opArgs(sp.Args),
		matched: sp.Matched, changes: make([]change, len(sp.Changes)), unchanged: sp.Unchanged, byDataset: sp.ByDataset,
		alreadyHadTarget: sp.AlreadyHadTarget, notes: sp.Notes}
	if p.byDataset == nil {
		p.byDataset = map[string]int{}
	}
	for i, c := range sp.Changes {
		p.changes[i] = change{key: gtc.Key{DatasetName: c.DatasetName, Bucket: c.Bucket, ID: c.ID}, status: c.Status,
			question: c.Question, etag: c.ETag, before: c.Before, after: c.After, alreadyHadTarget: c.AlreadyHadTarget}
	}
	for _, s := range sp.Skipped {
		p.skipped = append(p.skipped, skip{key: gtc.Key{DatasetName: s.DatasetName, Bucket: s.Bucket, ID: s.ID}, reason: s.Reason})
	}
	return p, nil
}

// tokenBucket limits item writes per second across every execution.
// It starts empty, so n writes take at least n/rate seconds, and holds at most one second
// of writes (50 at the default rate).
type tokenBucket struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
	clock  gtc.Clock
	sleep  func(context.Context, time.Duration) error
}

func newTokenBucket(perSecond int, clock gtc.Clock, sleep func(context.Context, time.Duration) error) *tokenBucket {
	return &tokenBucket{rate: float64(perSecond), burst: float64(perSecond), clock: clock, sleep: sleep, last: clock.Now()}
}

// take takes the tokens that are due, up to n; when none is, it takes one and sleeps until
// it is due. It returns how many it took (at least one).
func (t *tokenBucket) take(ctx context.Context, n int) (int, error) {
	t.mu.Lock()
	t.refill()
	if due := min(n, int(t.tokens)); due >= 1 {
		t.tokens -= float64(due)
		t.mu.Unlock()
		return due, ctx.Err()
	}
	t.tokens--
	deficit := -t.tokens // > 0: fewer than one token was due
	t.mu.Unlock()
	return 1, t.sleep(ctx, time.Duration(deficit/t.rate*float64(time.Second)))
}

// refill adds the tokens due since the last call; t.mu is held.
func (t *tokenBucket) refill() {
	now := t.clock.Now()
	if el := now.Sub(t.last).Seconds(); el > 0 {
		t.tokens = min(t.burst, t.tokens+el*t.rate)
		t.last = now
	}
}
