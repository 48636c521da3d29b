package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/config"
	"github.com/gtc-dev/gtc/storage/azsearch"
	"github.com/gtc-dev/gtc/storage/sqlite"
	"github.com/gtc-dev/gtc/tagging"
)

// app is everything a command needs, built once from the settings.
type app struct {
	cfg     *config.Config
	log     *slog.Logger
	store   gtc.Store
	tagger  *tagging.Pipeline
	curator *gtc.Curator
}

func (a *app) Close() error {
	if a.store != nil {
		return a.store.Close()
	}
	return nil
}

// loadConfig reads and validates the settings; problems are fatal (exit 3).
func loadConfig() (*config.Config, error) {
	cfg, err := config.Load()
	if err != nil {
		return nil, fatal(err)
	}
	return cfg, nil
}

// newLogger builds the slog logger of GTC_LOG_FORMAT and GTC_LOG_LEVEL.
func newLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	format := cfg.LogFormat
	if format == "auto" {
		format = "json"
		if f, ok := w.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
				format = "text"
			}
		}
	}
	var h slog.Handler
	if format == "text" {
		h = slog.NewTextHandler(w, opts)
	} else {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(h).With("service", cfg.ServiceName)
}

// newApp runs the startup checks in the order of domain-and-tags.md §3.5 and builds the
// store, the tag pipeline, the vocabulary and the curation service. maintenance marks the
// long-running commands, for which a tag store that overlaps the computed keys is a warning
// (their remedy is gtc migrate) instead of a fatal error (export-storage-migration.md §5.1).
func newApp(ctx context.Context, cfg *config.Config, log *slog.Logger, maintenance bool) (*app, error) {
	for _, w := range cfg.Warnings() {
		log.Warn(w)
	}
	// 1. The computed-tag registry.
	reg, err := tagging.NewDefaultRegistry()
	if err != nil {
		return nil, fatal(fmt.Errorf("computed-tag registry: %w", err))
	}
	reg = reg.WithLogger(log)
	// 2. The allow-list.
	allow, err := tagging.ParseAllowList(cfg.AllowedManualTags)
	if err != nil {
		return nil, fatal(err)
	}
	// 3. The groups file.
	groups, err := tagging.LoadGroups(cfg.ManualTagsConfigPath, tagging.WithGroupsLogger(log))
	if err != nil {
		return nil, fatal(err)
	}
	// 4. The validators.
	validators, err := tagging.NewValidators(cfg.TagValidators, groups.Schema())
	if err != nil {
		return nil, fatal(err)
	}
	// 5. Disjointness of the providers and the computed keys.
	if err := tagging.CheckDisjoint(reg, allow, groups); err != nil {
		return nil, fatal(err)
	}
	for _, w := range tagging.ComputedGroupWarnings(reg, groups) {
		log.Warn(w)
	}
	st, err := sqlite.Open(ctx, sqlite.Options{
		Path:            cfg.SQLitePath(),
		Synchronous:     cfg.SqliteSynchronous,
		BusyTimeout:     cfg.SqliteBusyTimeout.D(),
		ReadConnections: cfg.SqliteReadConnections,
		Random:          rand.Reader,
		Logger:          log,
	})
	if err != nil {
		return nil, fatal(fmt.Errorf("open the SQLite store at %s: %w", cfg.SQLitePath(), err))
	}
	if err, warning := tagging.CheckStoreOverlap(ctx, reg, st.TagStore()); err != nil {
		if !maintenance {
			_ = st.Close()
			return nil, fatal(fmt.Errorf("%w (run gtc migrate to clean the tag store)", err))
		}
		log.Warn(err.Error())
	} else if warning != "" {
		log.Warn(warning)
	}
	pipeline := tagging.NewPipeline(reg, validators, log)
	clock := gtc.SystemClock{}
	vocab := tagging.NewVocabulary(reg, allow, groups, st.TagStore(), st.TagDefinitions(), clock, log)
	alloc, _ := gtc.ParseAllocation(cfg.SamplingAllocation) // ignored entries were warned about above
	cur := gtc.NewCurator(gtc.CuratorDeps{
		Store: st, Tagger: pipeline, Vocabulary: vocab, Clock: clock, IDs: gtc.NewIDGenerator(rand.Reader), Log: log,
		RecomputeBatch: cfg.RecomputeBatchSize,
		SelfServe:      gtc.SelfServeOptions{DefaultLimit: cfg.SelfServeLimit, MaxLimit: cfg.SelfServeMax, Allocation: alloc},
		Import:         gtc.ImportChecks{PII: bool(cfg.PiiDetectionEnabled), Duplicates: bool(cfg.DuplicateDetectionEnabled)},
	})
	return &app{cfg: cfg, log: log, store: st, tagger: pipeline, curator: cur}, nil
}

// searchProvider builds the reference search of GTC_SEARCH_BACKEND (api.md §3.9): auto is
// Azure AI Search when its endpoint and index are set, else the built-in reference search.
func searchProvider(cfg *config.Config, st gtc.Store) (gtc.SearchProvider, string, error) {
	backend := cfg.SearchBackend
	if backend == "auto" {
		backend = "references"
		if cfg.AzSearchEndpoint != "" && cfg.AzSearchIndex != "" {
			backend = "azure"
		}
	}
	switch backend {
	case "none":
		return gtc.NoSearch{}, backend, nil
	case "azure":
		opts := azsearch.Options{
			Endpoint: cfg.AzSearchEndpoint, Index: cfg.AzSearchIndex, APIVersion: cfg.AzSearchAPIVersion, Key: cfg.AzSearchKey,
			FieldURL: cfg.SearchFieldURL, FieldTitle: cfg.SearchFieldTitle, FieldChunk: cfg.SearchFieldChunk,
		}
		if opts.Key == "" {
			cred, err := azsearch.NewDefaultCredential(cfg.AzureClientID)
			if err != nil {
				return nil, backend, fmt.Errorf("azure credential for the search service: %w", err)
			}
			opts.Credential = cred
		}
		c, err := azsearch.New(opts)
		if err != nil {
			return nil, backend, fmt.Errorf("search: %w", err)
		}
		return c, backend, nil
	default:
		return gtc.NewReferenceSearch(st.Items(), 200), backend, nil
	}
}
