package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/config"
	"github.com/gtc-dev/gtc/export"
	"github.com/gtc-dev/gtc/history"
	"github.com/gtc-dev/gtc/screen"
	"github.com/gtc-dev/gtc/storage/azsearch"
	"github.com/gtc-dev/gtc/storage/blob"
	"github.com/gtc-dev/gtc/storage/cosmos"
	"github.com/gtc-dev/gtc/storage/localfs"
	"github.com/gtc-dev/gtc/storage/observed"
	"github.com/gtc-dev/gtc/storage/sqlite"
	"github.com/gtc-dev/gtc/tagging"
)

// app is everything a command needs, built once from the settings.
type app struct {
	cfg      *config.Config
	log      *slog.Logger
	store    gtc.Store
	tagger   *tagging.Pipeline
	curator  *gtc.Curator
	clock    gtc.Clock
	closers  []func() error
	credOnce sync.Once
	cred     azcore.TokenCredential
	credErr  error

	// curatorDeps built curator; gtc import builds the curator of its run from them (with
	// --dry-run, a twin that does not write).
	curatorDeps gtc.CuratorDeps
	// importScreen is curator's import screen (nil with both checks off); gtc import screens
	// its run with a Run of it.
	importScreen *screen.Screen
	// artifacts is the export storage, once exporter has opened it.
	artifacts gtc.ArtifactStore
	// metrics counts what the server does (GTC_METRICS_ENABLED); nil in the other commands
	// and when turned off.
	metrics *metrics
	// stopTracing flushes and stops the trace exporter (nil when tracing is off); tracing
	// tells whether it runs.
	stopTracing func(context.Context) error
	tracing     bool
}

func (a *app) Close() error {
	var errs []error
	for i := len(a.closers) - 1; i >= 0; i-- {
		errs = append(errs, a.closers[i]())
	}
	if a.store != nil {
		errs = append(errs, a.store.Close())
	}
	if a.stopTracing != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := a.stopTracing(ctx); err != nil {
			a.log.Warn("could not send the last traces", "err", err)
		}
	}
	return errors.Join(errs...)
}

// credential is the one DefaultAzureCredential of the process, shared by every Azure client
// so that they share one token cache. GTC_AZURE_CLIENT_ID selects a user-assigned identity.
func (a *app) credential() (azcore.TokenCredential, error) {
	a.credOnce.Do(func() { a.cred, a.credErr = azsearch.NewDefaultCredential(a.cfg.AzureClientID) })
	return a.cred, a.credErr
}

// artifactStore opens the export storage of GTC_EXPORT_STORAGE_BACKEND and runs its startup
// check. An unreachable Blob service is a warning: the server starts and the export routes
// answer 503 until storage answers.
func (a *app) artifactStore(ctx context.Context) (gtc.ArtifactStore, error) {
	cfg := a.cfg
	if cfg.ExportStorageBackend != "blob" {
		st, err := localfs.Open(cfg.ExportLocalRoot())
		if err != nil {
			return nil, fatal(err)
		}
		a.closers = append(a.closers, st.Close)
		return st, nil
	}
	opts := blob.Options{
		Container: cfg.ExportBlobContainer, ConnectionString: cfg.ExportBlobConnectionString,
		AccountURL: cfg.ExportBlobAccountURL, AccountKey: cfg.ExportBlobAccountKey, AccountName: cfg.ExportBlobAccountName,
		Logger: a.log, OnRetry: a.metrics.azureRetry("blob"),
	}
	if opts.ConnectionString == "" && opts.AccountKey == "" {
		cred, err := a.credential()
		if err != nil {
			return nil, fatal(fmt.Errorf("azure credential for export storage: %w", err))
		}
		opts.Credential = cred
	}
	st, err := blob.New(opts)
	if err != nil {
		return nil, fatal(err)
	}
	a.log.Info("export storage is Azure Blob Storage", "account", st.Account(), "container", st.Container())
	if err := st.Check(ctx, bool(cfg.ExportBlobCreateContainer)); err != nil {
		if !errors.Is(err, gtc.ErrStorageUnavailable) {
			return nil, fatal(err)
		}
		a.log.Warn("export storage is not reachable; exports answer 503 until it is", "err", err)
	}
	return st, nil
}

// exporter builds the export pipeline: registries, the default chain (checked against the
// registry), the artifact store, and the removal of temporary files a crash left.
func (a *app) exporter(ctx context.Context) (*export.Exporter, error) {
	cfg := a.cfg
	fields, err := export.ParseInternalFields(cfg.ExportInternalFields)
	if err != nil {
		return nil, fatal(err)
	}
	chain, err := export.ParseProcessorOrder(cfg.ExportProcessorOrder)
	if err != nil {
		return nil, fatal(err)
	}
	procs, formats := export.Builtins(fields)
	if err := export.CheckProcessorOrder(procs, chain); err != nil {
		return nil, fatal(err)
	}
	arts, err := a.artifactStore(ctx)
	if err != nil {
		return nil, err
	}
	a.artifacts = arts
	if n, err := export.CleanTemp(cfg.TempDir()); err != nil {
		a.log.Warn("could not remove old temporary export files", "dir", cfg.TempDir(), "err", err)
	} else if n > 0 {
		a.log.Info("removed temporary export files left by an earlier run", "dir", cfg.TempDir(), "files", n)
	}
	var items gtc.ItemStore
	if a.store != nil {
		items = a.store.Items()
	}
	xc := export.Config{
		Items: items, Artifacts: arts, Clock: a.clock, Processors: procs, Formatters: formats,
		DefaultChain: chain, PageSize: cfg.ExportPageSize, WriteConcurrency: cfg.ExportWriteConcurrency,
		MaxConcurrent: cfg.ExportMaxConcurrent, TempDir: cfg.TempDir(), Log: a.log,
		MinFreeBytes: uint64(cfg.ExportMinFreeBytes),
	}
	if a.curator != nil {
		vocab := a.curator.Vocabulary()
		xc.TagGroups = func(ctx context.Context) ([]string, error) {
			g, err := vocab.Glossary(ctx)
			if err != nil {
				return nil, err
			}
			return g.TagGroups(), nil
		}
		cur := a.curator
		xc.RevisionDiff = func(ctx context.Context, k gtc.Key, from, to int64) ([]gtc.PatchOp, error) {
			_, _, ops, err := history.Diff(ctx, cur, k, from, to)
			return ops, err
		}
	}
	if a.metrics != nil {
		xc.Observer = a.metrics
	}
	x, err := export.New(xc)
	if err != nil {
		return nil, fatal(err)
	}
	return x, nil
}

// loadConfig reads and validates the settings; problems are fatal (exit 3).
func loadConfig() (*config.Config, error) {
	cfg, err := config.Load()
	if err != nil {
		return nil, fatal(err)
	}
	return cfg, nil
}

// openApp reads the settings and builds the app of a command that is not the server, with
// its log on stderr (a problem with the settings is fatal, exit 3).
func openApp(ctx context.Context, stderr io.Writer) (*app, error) {
	cfg, err := loadConfig()
	if err != nil {
		return nil, err
	}
	return newApp(ctx, cfg, newLogger(cfg, stderr), true)
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

// newApp runs the startup checks in order (newTagEngine's, then the tag-store overlap) and
// builds the store, the tag pipeline, the vocabulary and the curation service. maintenance
// marks the long-running commands, for which a tag store that overlaps the computed keys is
// a warning (their remedy is gtc migrate) instead of a fatal error.
func newApp(ctx context.Context, cfg *config.Config, log *slog.Logger, maintenance bool) (*app, error) {
	for _, w := range cfg.Warnings() {
		log.Warn(w)
	}
	te, err := newTagEngine(cfg, log)
	if err != nil {
		return nil, err
	}
	reg := te.reg
	clock := gtc.SystemClock{}
	a := &app{cfg: cfg, log: log, clock: clock}
	if !maintenance && bool(cfg.MetricsEnabled) {
		a.metrics = newMetrics()
	}
	a.stopTracing, a.tracing, err = startTracing(ctx, os.Getenv, cfg.ServiceName, log)
	if err != nil {
		return nil, err
	}
	st, err := a.openStore(ctx, !maintenance)
	if err != nil {
		_ = a.Close()
		return nil, err
	}
	if cc, ok := st.(commitCounter); ok && a.metrics != nil {
		a.metrics.storeCommits(cc)
	}
	// Every store call is timed, counted and traced when metrics or tracing are on; with
	// both off the store is used as opened.
	switch {
	case a.metrics != nil && a.tracing:
		st = observed.Wrap(st, a.metrics)
	case a.metrics != nil:
		st = observed.Wrap(st, a.metrics, observed.NoSpans())
	case a.tracing:
		st = observed.Wrap(st, nil)
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
	pipeline := te.pipeline
	vocab := tagging.NewVocabulary(reg, te.allow, te.groups, st.TagStore(), st.TagDefinitions(), clock, log)
	alloc, _ := gtc.ParseAllocation(cfg.SamplingAllocation) // ignored entries were warned about above
	scr := screen.New(screen.Options{PII: bool(cfg.PiiDetectionEnabled), Duplicates: bool(cfg.DuplicateDetectionEnabled),
		Items: st.Items(), Log: log})
	deps := gtc.CuratorDeps{
		Store: st, Tagger: pipeline, Vocabulary: vocab, Clock: clock, IDs: gtc.NewIDGenerator(rand.Reader), Log: log,
		RecomputeBatch: cfg.RecomputeBatchSize,
		SelfServe:      gtc.SelfServeOptions{DefaultLimit: cfg.SelfServeLimit, MaxLimit: cfg.SelfServeMax, Allocation: alloc},
		ImportScreen:   scr,
	}
	a.store, a.tagger, a.curator, a.curatorDeps, a.importScreen = st, pipeline, gtc.NewCurator(deps), deps, scr
	return a, nil
}

// tagEngine is the tag configuration every command shares: the computed-tag registry, the
// manual-tag providers that need no store, and the pipeline with its validators.
type tagEngine struct {
	reg      *tagging.Registry
	allow    []string
	groups   *tagging.Groups
	pipeline *tagging.Pipeline
}

// newTagEngine builds the tag engine from the settings and runs the startup checks that
// need no store, in order.
func newTagEngine(cfg *config.Config, log *slog.Logger) (*tagEngine, error) {
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
	return &tagEngine{reg: reg, allow: allow, groups: groups, pipeline: tagging.NewPipeline(reg, validators, log)}, nil
}

// openStore opens the item store of GTC_REPO_BACKEND and logs one line naming it. A store
// that cannot be opened is fatal (exit 3) with the store's own message. A server (serving)
// on SQLite claims the database and warns when another server already holds it.
func (a *app) openStore(ctx context.Context, serving bool) (gtc.Store, error) {
	cfg, log := a.cfg, a.log
	if cfg.RepoBackend != cosmos.Backend {
		st, err := sqlite.Open(ctx, sqlite.Options{
			Path:            cfg.SQLitePath(),
			Synchronous:     cfg.SqliteSynchronous,
			BusyTimeout:     cfg.SqliteBusyTimeout.D(),
			ReadConnections: cfg.SqliteReadConnections,
			Random:          rand.Reader,
			History:         cfg.History(),
			Logger:          log,
		})
		if err != nil {
			return nil, fatal(fmt.Errorf("open the SQLite store at %s: %w", cfg.SQLitePath(), err))
		}
		log.Info("item store is SQLite", "backend", st.Backend(), "database", cfg.SQLitePath())
		if serving {
			switch alone, lockFile, err := st.ClaimServe(); {
			case err != nil:
				log.Warn("could not check for another server on this database", "database", cfg.SQLitePath(), "err", err)
			case !alone:
				log.Warn("another gtc server already serves this database: SQLite serves one process (the servers share its state, but contend for its single writer); run one replica, or use Cosmos DB (GTC_REPO_BACKEND=cosmos) for several",
					"database", cfg.SQLitePath(), "lockFile", lockFile)
			}
		}
		return st, nil
	}
	opts := cosmosOptions(cfg)
	opts.Logger, opts.Clock, opts.Version = log, a.clock, version
	opts.OnRetry = a.metrics.azureRetry("cosmos")
	auth := cosmosAuth(cfg)
	switch auth {
	case "key":
		opts.Key = cfg.CosmosKey
	case "emulator key":
		opts.Key = cosmos.EmulatorKey
	default:
		cred, err := a.credential()
		if err != nil {
			return nil, fatal(fmt.Errorf("azure credential for Cosmos DB: %w", err))
		}
		opts.Credential = cred
	}
	// The key is never logged; only how the store authenticates.
	log.Info("item store is Azure Cosmos DB", "backend", cosmos.Backend, "endpoint", opts.Endpoint,
		"database", opts.Database, "auth", auth, "createContainers", opts.CreateContainers, "rebuildRegistry", opts.RebuildRegistry)
	st, err := cosmos.Open(ctx, opts)
	if err != nil {
		return nil, fatal(fmt.Errorf("open the Cosmos DB store at %s (database %s): %w", opts.Endpoint, opts.Database, err))
	}
	return st, nil
}

// cosmosAuth names how the Cosmos DB store authenticates: the account key, the emulator's
// published key, or Entra ID through the default Azure credential.
func cosmosAuth(cfg *config.Config) string {
	switch {
	case cfg.CosmosKey != "":
		return "key"
	case bool(cfg.UseCosmosEmulator):
		return "emulator key"
	default:
		return "entra id"
	}
}

// cosmosOptions maps the GTC_COSMOS_* settings to the store's options; authentication,
// logger, clock and version are the caller's.
func cosmosOptions(cfg *config.Config) cosmos.Options {
	slowRU := cfg.CosmosSlowQueryRUThreshold
	if slowRU == 0 {
		// The store reads 0 as "use the default (10 RU)"; a threshold of 0 means every query.
		slowRU = math.SmallestNonzeroFloat64
	}
	return cosmos.Options{
		Endpoint: cfg.CosmosEndpoint,
		Database: cfg.CosmosDBName,
		History:  cfg.History(),
		Containers: cosmos.Containers{
			GroundTruth:     cfg.CosmosContainerGT,
			Assignments:     cfg.CosmosContainerAssignments,
			Tags:            cfg.CosmosContainerTags,
			TagDefinitions:  cfg.CosmosContainerTagDefinitions,
			Meta:            cfg.CosmosContainerMeta,
			AgentOperations: cfg.CosmosContainerAgentOperations,
		},
		CreateContainers:       bool(cfg.CosmosCreateContainers),
		AutoscaleMaxThroughput: int32(cfg.CosmosAutoscaleMaxThroughput), // validated ≤ MaxInt32
		PreferredRegions:       cfg.CosmosPreferredRegions,
		MaxConnsPerHost:        cfg.CosmosMaxConnectionPoolSize,
		VerifyTLS:              string(cfg.CosmosConnectionVerify),
		RequestTimeout:         cfg.CosmosRequestTimeout.D(),
		RetryAttempts:          cfg.CosmosRetryTotalAttempts,
		RetryDelay:             cfg.CosmosRetryFixedInterval.D(),
		PageSize:               cfg.CosmosPageSize,
		RebuildRegistry:        cfg.CosmosRebuildRegistry,
		LogQueryMetrics:        bool(cfg.CosmosLogQueryMetrics),
		SlowQueriesOnly:        bool(cfg.CosmosLogSlowQueriesOnly),
		SlowQueryRU:            slowRU,
	}
}

// storeLocation names where the items are, for the startup line: the SQLite file, or the
// Cosmos DB endpoint and database.
func storeLocation(cfg *config.Config) string {
	if cfg.RepoBackend == cosmos.Backend {
		return cfg.CosmosEndpoint + " (database " + cfg.CosmosDBName + ")"
	}
	return cfg.SQLitePath()
}

// searchProvider builds the reference search of GTC_SEARCH_BACKEND: auto is Azure AI Search
// when its endpoint and index are set, else the built-in reference search.
func (a *app) searchProvider() (gtc.SearchProvider, string, error) {
	cfg, st := a.cfg, a.store
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
			cred, err := a.credential()
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
