// Package screen screens the entries of a bulk import for what a curator should look at
// before trusting them: e-mail addresses and US phone numbers in any text of an item
// (PIIWarnings), and drafts that repeat an approved item of their dataset
// (DuplicateWarnings). Its Screen implements gtc.ImportScreen; the curator runs it after the
// writes of every import request. Screen reads the approved items a dataset's drafts are
// compared with on every request; Run, the screen of one import run (gtc import), reads them
// once per run and adds the approved items the run creates. Warnings never change an
// import's outcome.
package screen

import (
	"context"
	"log/slog"

	"github.com/gtc-dev/gtc"
)

// Options choose the checks of a Screen.
type Options struct {
	// PII reports e-mail addresses and phone numbers (GTC_PII_DETECTION_ENABLED).
	PII bool
	// Duplicates reports drafts that repeat an approved item (GTC_DUPLICATE_DETECTION_ENABLED).
	Duplicates bool
	// Items is where the approved candidates of the duplicate check are read; required
	// with Duplicates.
	Items gtc.ItemStore
	// Log receives a failed candidate read, after which that dataset gives no duplicate
	// warnings; nil discards.
	Log *slog.Logger
}

// Screen runs the checks its Options chose. It is safe for concurrent use.
type Screen struct {
	opts Options
	log  *slog.Logger
}

// New returns a Screen with the checks of o, or nil when o chooses none; a nil Screen
// screens nothing.
func New(o Options) *Screen {
	if !o.PII && !o.Duplicates {
		return nil
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Screen{opts: o, log: log}
}

// Screen appends the PII warnings of every entry, then the duplicate warnings of the drafts
// among them, to res. The candidates of the duplicate check are read from the store on every
// call; ForRun gives a screen that reads them once per run.
func (s *Screen) Screen(ctx context.Context, entries []*gtc.ImportEntry, res *gtc.ImportResult) {
	if s == nil {
		return
	}
	s.pii(entries, res)
	if s.opts.Duplicates {
		// Candidates are read after the writes, so approved items of this request can match.
		res.DuplicateWarnings = DuplicateWarnings(entryItems(entries), func(dataset string) []*gtc.Item {
			items, _ := s.candidates(ctx, dataset)
			return items
		})
	}
}

// pii appends the PII warnings of every entry to res, when the check is on.
func (s *Screen) pii(entries []*gtc.ImportEntry, res *gtc.ImportResult) {
	if s.opts.PII {
		for _, e := range entries {
			res.PIIWarnings = append(res.PIIWarnings, PIIWarnings(e.Item)...)
		}
	}
}

// candidates reads the approved items of dataset that its drafts are compared with: the
// DuplicateCandidateLimit most recently updated, in that order. A failed read is logged and
// reported as not ok.
func (s *Screen) candidates(ctx context.Context, dataset string) ([]*gtc.Item, bool) {
	page, err := s.opts.Items.Query(ctx, gtc.Query{
		Filter: gtc.Filter{DatasetNames: []string{dataset}, Statuses: []gtc.Status{gtc.StatusApproved}},
		Sort:   gtc.SortUpdatedAt, Desc: true, Limit: DuplicateCandidateLimit,
	})
	if err != nil {
		s.log.WarnContext(ctx, "import: duplicate check skipped", "dataset", dataset, "err", err)
		return nil, false
	}
	return page.Items, true
}

func entryItems(entries []*gtc.ImportEntry) []*gtc.Item {
	items := make([]*gtc.Item, len(entries))
	for i, e := range entries {
		items[i] = e.Item
	}
	return items
}

// Interface check.
var _ gtc.ImportScreen = (*Screen)(nil)
