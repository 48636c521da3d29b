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

// newApp builds the store, the tag pipeline and the curation service.
func newApp(ctx context.Context, cfg *config.Config, log *slog.Logger) (*app, error) {
	for _, w := range cfg.Warnings() {
		log.Warn(w)
	}
	reg, err := tagging.NewDefaultRegistry()
	if err != nil {
		return nil, fatal(fmt.Errorf("computed-tag registry: %w", err))
	}
	reg = reg.WithLogger(log)
	groups, err := tagging.LoadGroups("", tagging.WithGroupsLogger(log))
	if err != nil {
		return nil, fatal(err)
	}
	validators, err := tagging.NewValidators(nil, groups.Schema())
	if err != nil {
		return nil, fatal(err)
	}
	pipeline := tagging.NewPipeline(reg, validators, log)
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
	cur := gtc.NewCurator(st, pipeline, gtc.SystemClock{}, gtc.NewIDGenerator(rand.Reader), log)
	return &app{cfg: cfg, log: log, store: st, tagger: pipeline, curator: cur}, nil
}
