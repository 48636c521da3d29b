package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gtc-dev/gtc/api"
	"github.com/gtc-dev/gtc/config"
	"github.com/gtc-dev/gtc/export"
	"github.com/gtc-dev/gtc/jobs"
)

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	printConfig := fs.Bool("print-config", false, "print the effective settings (secrets masked) and exit")
	if err := fs.Parse(args); err != nil {
		return usageError("serve: %v", err)
	}
	if fs.NArg() > 0 {
		return usageError("serve: unexpected argument %q", fs.Arg(0))
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	if *printConfig {
		return cfg.Print(stdout)
	}
	log := newLogger(cfg, stderr)
	a, err := newApp(ctx, cfg, log, false)
	if err != nil {
		return err
	}
	jo := jobs.Options{Store: a.store.Jobs(), Leases: a.store.Leases(), Max: cfg.MaxConcurrentJobs, MaxQueued: &cfg.JobsMaxQueued,
		Retention: cfg.JobRetention.D(), LeaseTTL: cfg.JobLeaseTTL.D(), Log: log}
	opts := serverOptions(cfg)
	var observer api.RequestObserver
	if a.metrics != nil {
		jo.OnFinish = a.metrics.jobFinished
		observer, opts.Metrics = a.metrics, a.metrics.handler()
	}
	runner := jobs.New(jo)
	if a.metrics != nil {
		a.metrics.jobsInFlight(runner)
	}
	defer func() {
		if err := a.Close(); err != nil {
			log.Error("closing the store", "err", err)
		} else {
			log.Info("store closed")
		}
	}()
	search, backend, err := a.searchProvider()
	if err != nil {
		return fatal(err)
	}
	exp, err := a.exporter(ctx)
	if err != nil {
		return err
	}

	tools, bulk, err := a.agentTools(ctx, exp)
	if err != nil {
		return err
	}
	rctx, stopRetention := context.WithCancel(ctx)
	defer stopRetention()
	go a.retainAgentOperations(rctx, bulk)
	go a.repairAgentOperations(rctx, bulk)
	go a.retainSnapshots(rctx, exp)

	srv := api.New(api.Deps{Curator: a.curator, Jobs: runner, Search: search, Exporter: exp, Agent: tools, Observer: observer, Log: log}, opts)
	runner.Start() // after api.New, which registers the job types it takes over
	defer runner.Close()
	if err := srv.EnableStatic(api.StaticOptions{Dir: cfg.FrontendDir, Index: cfg.FrontendIndex, CacheSeconds: cfg.FrontendCacheSeconds}); err != nil {
		return fatal(err)
	}
	ln, err := net.Listen("tcp", cfg.ListenAddr())
	if err != nil {
		return fatal(fmt.Errorf("listen on %s: %w", cfg.ListenAddr(), err))
	}
	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: cfg.HTTPReadHeaderTimeout.D(),
		IdleTimeout:       cfg.HTTPIdleTimeout.D(),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	log.Info("gtc is serving", "url", displayURL(ln.Addr()), "api", displayURL(ln.Addr())+cfg.APIPrefix,
		"store", a.store.Backend(), "database", storeLocation(cfg), "search", backend,
		"exports", cfg.ExportStorageBackend, "metrics", a.metrics != nil, "tracing", a.tracing, "version", version)

	select {
	case err := <-serveErr:
		return fatal(fmt.Errorf("server stopped: %w", err))
	case <-ctx.Done():
	}
	// Drain: /readyz answers 503, in-flight requests finish, then the store is closed.
	log.Info("shutting down", "timeout", cfg.ShutdownTimeout.String())
	srv.SetDraining()
	// Running jobs go back to the store at once (queued, with their checkpoints), so another
	// server resumes them while this one drains; from now on this one takes no new job.
	runner.Close()
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout.D())
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		log.Error("graceful shutdown did not finish in time", "err", err)
		_ = hs.Close()
	}
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("server error", "err", err)
	}
	// Agent executions get their grace to finish; what is left is logged as not attempted.
	bulk.Close(sctx)
	return nil
}

// retainSnapshots prunes stored export snapshots at startup and then hourly, until ctx
// ends: complete snapshots older than GTC_EXPORT_RETENTION (none when it is 0), and
// incomplete ones (an export that failed or was stopped) older than 24 h, or than
// GTC_EXPORT_TIMEOUT when that is longer, so no running export loses its snapshot. Each
// deleted snapshot is logged.
func (a *app) retainSnapshots(ctx context.Context, x *export.Exporter) {
	opts := export.RetainOptions{Complete: a.cfg.ExportRetention.D(), Incomplete: max(24*time.Hour, a.cfg.ExportTimeout.D())}
	hourly(ctx, func() {
		pruned, err := x.Retain(ctx, opts)
		for _, p := range pruned {
			a.log.Info("export snapshot pruned", "snapshot_id", p.SnapshotID, "complete", p.Complete,
				"last_written", p.Modified.UTC().Format(time.RFC3339), "objects", p.Objects)
		}
		if err != nil && ctx.Err() == nil {
			a.log.Warn("export snapshot retention failed; it runs again in an hour", "err", describeError(err), "pruned", len(pruned))
		}
	})
}

func serverOptions(cfg *config.Config) api.Options {
	return api.Options{
		Prefix:         cfg.APIPrefix,
		MaxBodyBytes:   cfg.MaxBodyBytes,
		RequestTimeout: cfg.RequestTimeout.D(),
		Auth: api.AuthOptions{
			EasyAuth:            cfg.EasyAuth(),
			DevUserID:           cfg.DevUserID,
			DevUserRoles:        lower(cfg.DevUserRoles),
			AnonymousPaths:      cfg.EzauthAllowAnonymousPaths,
			AllowedEmailDomains: cfg.EzauthAllowedEmailDomains,
			AllowedObjectIDs:    cfg.EzauthAllowedObjectIds,
			RoleClaims:          cfg.RoleClaims(),
			DefaultRole:         strings.ToLower(strings.TrimSpace(cfg.AuthDefaultRole)),
			AllowNameOnly:       bool(cfg.EzauthAllowNameOnly),
		},
		Frontend: api.FrontendConfig{
			RequireReferenceVisit:   bool(cfg.RequireReferenceVisit),
			RequireKeyParagraph:     bool(cfg.RequireKeyParagraph),
			SelfServeLimit:          cfg.SelfServeLimit,
			TrustedReferenceDomains: lower(cfg.TrustedReferenceDomains),
		},
		PaginationMinLimit: cfg.PaginationMinLimit,
		PaginationMaxLimit: cfg.PaginationMaxLimit,
		Version:            version,
		ExportTimeout:      cfg.ExportTimeout.D(),
		AgentToolsEnabled:  bool(cfg.AgentToolsEnabled),
		AgentMCPEnabled:    bool(cfg.AgentMcpEnabled),
	}
}

func lower(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		out = append(out, strings.ToLower(s))
	}
	return out
}

// displayURL is the address a person can open: a wildcard host is shown as localhost.
func displayURL(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return "http://" + a.String()
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}
