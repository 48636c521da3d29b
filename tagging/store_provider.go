package tagging

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	gtc "github.com/gtc-dev/gtc"
)

// TagStoreProvider serves the tag store as a manual-tag provider.
// The store may hold entries written by other tools or by the reference GTC backend, so
// every entry is normalized on the way out; one that cannot be is skipped and logged.
type TagStoreProvider struct {
	store  gtc.TagStore
	logger *slog.Logger
}

var _ ManualTagProvider = (*TagStoreProvider)(nil)

// NewTagStoreProvider serves the tags of store; a nil logger discards the warnings about
// skipped entries.
func NewTagStoreProvider(store gtc.TagStore, logger *slog.Logger) *TagStoreProvider {
	if logger == nil {
		logger = discardLogger()
	}
	return &TagStoreProvider{store: store, logger: logger}
}

// Name returns "tag-store".
func (*TagStoreProvider) Name() string { return "tag-store" }

// AllowedTags lists the store and returns its entries normalized, unique and sorted.
func (p *TagStoreProvider) AllowedTags(ctx context.Context) ([]string, error) {
	stored, err := p.store.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list tag store: %w", err)
	}
	out := make([]string, 0, len(stored))
	var skipped []string
	for _, s := range stored {
		t, err := Normalize(s)
		if err != nil {
			skipped = append(skipped, err.Error())
			continue
		}
		out = append(out, t)
	}
	if len(skipped) > 0 {
		p.logger.LogAttrs(ctx, slog.LevelWarn, "tag store: entries that are not valid tags were skipped",
			slog.Int("count", len(skipped)), slog.String("problems", strings.Join(skipped, "; ")))
	}
	return sortedUnique(out), nil
}
