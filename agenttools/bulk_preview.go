package agenttools

import (
	"context"
	"sync"
	"time"

	"github.com/gtc-dev/gtc"
)

// Preview states.
const (
	previewOpen     = "open"
	previewConsumed = "consumed"
)

// preview is a kept dry run: what an execution may apply.
type preview struct {
	id        string
	caller    string
	hash      string
	plan      *plan
	createdAt time.Time
	expiresAt time.Time
	state     string
	opID      string // the operation that consumed it
}

func (p *preview) key() string { return p.caller + "\x00" + p.hash }

// previewCache keeps previews in process memory within three bounds: how many in all, how
// many change entries across them, and how many per caller. The oldest go first. Callers
// hold Bulk.mu.
type previewCache struct {
	size, items, perUser int
	order                []*preview // oldest first
	byKey                map[string]*preview
	total                int // change entries held
}

func newPreviewCache(size, items, perUser int) *previewCache {
	return &previewCache{size: size, items: items, perUser: perUser, byKey: map[string]*preview{}}
}

// get returns the preview of (caller, hash), or nil.
func (c *previewCache) get(caller, hash string) *preview { return c.byKey[caller+"\x00"+hash] }

// put keeps p, replacing the caller's preview of the same arguments, and evicts the oldest
// previews past the bounds.
func (c *previewCache) put(p *preview) {
	if old := c.byKey[p.key()]; old != nil {
		c.remove(old)
	}
	c.order = append(c.order, p)
	c.byKey[p.key()] = p
	c.total += len(p.plan.changes)
	mine := 0
	for _, q := range c.order {
		if q.caller == p.caller {
			mine++
		}
	}
	for i := 0; mine > c.perUser && i < len(c.order); {
		if q := c.order[i]; q.caller == p.caller && q != p {
			c.remove(q)
			mine--
			continue
		}
		i++
	}
	for (len(c.order) > c.size || c.total > c.items) && len(c.order) > 1 {
		c.remove(c.order[0])
	}
}

func (c *previewCache) remove(p *preview) {
	for i, q := range c.order {
		if q == p {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
	if c.byKey[p.key()] == p {
		delete(c.byKey, p.key())
	}
	c.total -= len(p.plan.changes)
}

// len returns how many previews are kept.
func (c *previewCache) len() int { return len(c.order) }

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

// wait takes one token, sleeping until it is due.
func (t *tokenBucket) wait(ctx context.Context) error {
	t.mu.Lock()
	now := t.clock.Now()
	if el := now.Sub(t.last).Seconds(); el > 0 {
		t.tokens = min(t.burst, t.tokens+el*t.rate)
		t.last = now
	}
	t.tokens--
	deficit := -t.tokens
	t.mu.Unlock()
	if deficit <= 0 {
		return ctx.Err()
	}
	return t.sleep(ctx, time.Duration(deficit/t.rate*float64(time.Second)))
}
