package screen

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gtc-dev/gtc"
)

// flakyItems serves the approved items of items, most recently updated first, and fails the
// queries while fail is set; it counts the queries.
type flakyItems struct {
	gtc.ItemStore
	items   []*gtc.Item
	fail    bool
	queries int
}

func (f *flakyItems) Query(_ context.Context, q gtc.Query) (gtc.QueryPage, error) {
	f.queries++
	if f.fail {
		return gtc.QueryPage{}, errors.New("store unreachable")
	}
	return gtc.QueryPage{Items: f.items, Total: len(f.items)}, nil
}

func entriesOf(items ...*gtc.Item) []*gtc.ImportEntry {
	out := make([]*gtc.ImportEntry, len(items))
	for i, it := range items {
		out[i] = &gtc.ImportEntry{Item: it}
	}
	return out
}

// A failed read of the candidates gives no duplicate warnings for that batch, and the next
// batch with a draft of the dataset reads them again.
func TestRunReadsAgainAfterAFailedRead(t *testing.T) {
	ctx := context.Background()
	store := &flakyItems{items: []*gtc.Item{dupItem("ds", "c", gtc.StatusApproved, "", U("How do I reset?"))}, fail: true}
	run := New(Options{Duplicates: true, Items: store}).ForRun()
	screen := func(id string) []string {
		res := &gtc.ImportResult{DuplicateWarnings: []gtc.DuplicateWarning{}}
		run.Screen(ctx, entriesOf(dupItem("ds", id, gtc.StatusDraft, "", U("how do I reset?"))), res)
		return reasons(res.DuplicateWarnings)
	}
	assert.Empty(t, screen("d1"))
	assert.Equal(t, 1, store.queries)
	store.fail = false
	assert.Equal(t, []string{"d2>c: exact question match"}, screen("d2"))
	assert.Equal(t, 2, store.queries)
	assert.Equal(t, []string{"d3>c: exact question match"}, screen("d3"))
	assert.Equal(t, 2, store.queries, "read once it succeeded")
}

// A Run gives the PII warnings of every batch too, and a nil Run screens nothing.
func TestRunPIIAndNil(t *testing.T) {
	ctx := context.Background()
	run := New(Options{PII: true}).ForRun()
	it := commentItem("write to someone@example.com")
	res := &gtc.ImportResult{}
	run.Screen(ctx, entriesOf(it), res)
	run.Screen(ctx, entriesOf(it), res)
	assert.Len(t, res.PIIWarnings, 2)

	var none *Screen
	run = none.ForRun()
	assert.Nil(t, run)
	res = &gtc.ImportResult{}
	run.Screen(ctx, entriesOf(it), res)
	assert.Empty(t, res.PIIWarnings)
}
