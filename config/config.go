// Package config loads and validates the settings of every gtc command: GTC_* environment
// variables read by envconfig into one struct.
package config

import (
	"bufio"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"

	"github.com/gtc-dev/gtc"
)

// Prefix is the prefix of every setting.
const Prefix = "GTC"

// Config holds every setting. Field names become variable names through envconfig's
// split_words rule (DevUserID → GTC_DEV_USER_ID); the envconfig name tag is never used,
// because it would also read the unprefixed name (PORT, ENV…) that other software sets.
type Config struct {
	// Process, HTTP server, logging.
	Env                   string   `split_words:"true" default:"dev" desc:"dev, test or prod; prod turns on the safety rules"`
	EnvFile               CSV      `split_words:"true" desc:"dotenv files to load first (comma-separated; real variables win)"`
	Addr                  string   `split_words:"true" desc:"listen host, or host:port; unset: all interfaces"`
	Port                  int      `split_words:"true" default:"8000" desc:"listen port when GTC_ADDR has none"`
	APIPrefix             string   `split_words:"true" default:"/v1" desc:"route prefix of the API"`
	MaxBodyBytes          int64    `split_words:"true" default:"10485760" desc:"request body limit in bytes (413 above it)"`
	RequestTimeout        Duration `split_words:"true" default:"60s" desc:"deadline of ordinary requests"`
	HTTPReadHeaderTimeout Duration `split_words:"true" default:"10s" desc:"http.Server ReadHeaderTimeout"`
	HTTPIdleTimeout       Duration `split_words:"true" default:"120s" desc:"http.Server IdleTimeout"`
	ShutdownTimeout       Duration `split_words:"true" default:"30s" desc:"graceful drain on SIGINT/SIGTERM"`
	LogLevel              string   `split_words:"true" default:"info" desc:"debug, info, warn or error"`
	LogFormat             string   `split_words:"true" default:"auto" desc:"json, text, or auto (text on a terminal)"`
	ServiceName           string   `split_words:"true" default:"gtc-backend" desc:"service attribute of every log line, and the traces' service.name unless OTEL_SERVICE_NAME is set"`
	MetricsEnabled        Bool     `split_words:"true" default:"true" desc:"serve GET /metrics (Prometheus) and count requests, store calls, exports, jobs and agent operations"`
	DataDir               string   `split_words:"true" default:"./data" desc:"home of the SQLite database and local files"`

	// Identity.
	AuthMode                  string `split_words:"true" default:"dev" desc:"dev or easyauth"`
	EzauthEnabled             Bool   `split_words:"true" default:"false" desc:"true forces easyauth"`
	DevUserID                 string `split_words:"true" default:"anonymous" desc:"dev mode user when X-User-Id is absent"`
	DevUserRoles              CSV    `split_words:"true" default:"admin" desc:"dev mode role claims when X-User-Roles is absent (comma-separated)"`
	EzauthAllowAnonymousPaths CSV    `split_words:"true" desc:"extra anonymous paths in easyauth mode"`
	EzauthAllowedEmailDomains CSV    `split_words:"true" desc:"e-mail domain allow-list"`
	EzauthAllowedObjectIds    CSV    `split_words:"true" desc:"object id allow-list"`
	EzauthHeaderSource        string `split_words:"true" default:"aca" desc:"only aca is supported"`
	EzauthAllowNameOnly       Bool   `split_words:"true" default:"false" desc:"accept a principal whose only identifying claim is a display name"`
	AuthAdminRoles            CSV    `split_words:"true" default:"admin,team-lead" desc:"role claim values that grant the admin role (comma-separated)"`
	AuthCuratorRoles          CSV    `split_words:"true" default:"curator" desc:"role claim values that grant the curator role (comma-separated)"`
	AuthViewerRoles           CSV    `split_words:"true" default:"viewer" desc:"role claim values that grant the viewer role (comma-separated)"`
	AuthDefaultRole           string `split_words:"true" default:"curator" desc:"role of a caller without a mapped role claim: viewer, curator, admin or none"`
	AzureClientID             string `split_words:"true" desc:"client id of a user-assigned managed identity for Azure clients"`

	// Item store.
	RepoBackend           string   `split_words:"true" default:"sqlite" desc:"item store backend: sqlite or cosmos"`
	SqlitePath            string   `split_words:"true" desc:"SQLite database file or :memory:; default $GTC_DATA_DIR/gtc.db"`
	SqliteSynchronous     string   `split_words:"true" default:"FULL" desc:"FULL or NORMAL"`
	SqliteBusyTimeout     Duration `split_words:"true" default:"5s" desc:"how long a write waits for another process's lock"`
	SqliteReadConnections int      `split_words:"true" default:"4" desc:"reader pool size (1-64)"`

	// Azure Cosmos DB item store; read only with GTC_REPO_BACKEND=cosmos.
	CosmosEndpoint                 string    `split_words:"true" desc:"Cosmos DB account endpoint; required with cosmos"`
	CosmosKey                      string    `split_words:"true" desc:"Cosmos DB account key (secret); unset: Entra ID via the default Azure credential"`
	UseCosmosEmulator              Bool      `split_words:"true" default:"false" desc:"key auth with the well-known emulator key when no key is set"`
	CosmosConnectionVerify         TLSVerify `split_words:"true" default:"true" desc:"TLS verification: true, false, or a PEM bundle path"`
	CosmosDBName                   string    `split_words:"true" default:"gt-curator" desc:"Cosmos DB database"`
	CosmosContainerGT              string    `split_words:"true" default:"ground_truth" desc:"container of items and curation instructions"`
	CosmosContainerAssignments     string    `split_words:"true" default:"assignments" desc:"container of assignment records"`
	CosmosContainerTags            string    `split_words:"true" default:"tags" desc:"container of the tag store"`
	CosmosContainerTagDefinitions  string    `split_words:"true" default:"tag_definitions" desc:"container of tag definitions"`
	CosmosContainerMeta            string    `split_words:"true" default:"meta" desc:"container of the dataset registry and the migration marker"`
	CosmosContainerAgentOperations string    `split_words:"true" default:"agent-operations" desc:"container of the agent audit log"`
	CosmosCreateContainers         Bool      `split_words:"true" default:"false" desc:"create the database and missing containers at startup"`
	CosmosRebuildRegistry          string    `split_words:"true" default:"auto" desc:"dataset registry rebuild at startup: auto, always or never"`
	CosmosAutoscaleMaxThroughput   int       `split_words:"true" default:"0" desc:"autoscale maximum RU/s of containers created at startup; 0: none"`
	CosmosPreferredRegions         CSV       `split_words:"true" desc:"region preference order (comma-separated)"`
	CosmosMaxConnectionPoolSize    int       `split_words:"true" default:"200" desc:"connections per host"`
	CosmosRequestTimeout           Duration  `split_words:"true" default:"30s" desc:"timeout of one attempt"`
	CosmosRetryTotalAttempts       int       `split_words:"true" default:"5" desc:"attempts per request on throttling and transient errors"`
	CosmosRetryFixedInterval       Duration  `split_words:"true" default:"1s" desc:"base delay between attempts"`
	CosmosPageSize                 int       `split_words:"true" default:"1000" desc:"page size hint of scans and counts (1-1000)"`
	CosmosLogQueryMetrics          Bool      `split_words:"true" default:"false" desc:"log the request charge of queries"`
	CosmosLogSlowQueriesOnly       Bool      `split_words:"true" default:"true" desc:"log only queries at or above the threshold"`
	CosmosSlowQueryRUThreshold     float64   `split_words:"true" default:"10" desc:"slow-query threshold in request units"`

	// Tags, recompute, jobs.
	AllowedManualTags    CSV      `split_words:"true" desc:"manual tag allow-list (comma-separated group:value)"`
	ManualTagsConfigPath string   `split_words:"true" desc:"tag groups file (JSON); unset: the built-in six groups"`
	TagValidators        CSV      `split_words:"true" desc:"tag validators in run order; empty: exclusive_group,dependency; none disables"`
	RecomputeBatchSize   int      `split_words:"true" default:"200" desc:"page size of recompute-tags (1-1000)"`
	MaxConcurrentJobs    int      `split_words:"true" default:"2" desc:"background jobs running at once"`
	JobRetention         Duration `split_words:"true" default:"24h" desc:"how long finished jobs stay readable"`
	JobsMaxQueued        int      `split_words:"true" default:"16" desc:"jobs waiting for a slot beyond the running ones; more are refused with 429 JOBS_BUSY"`
	JobLeaseTTL          Duration `split_words:"true" default:"30s" desc:"how long a running job's lease lasts without renewal; servers look for jobs to take over as often"`

	// Curator UI, lists, import, sampling.
	FrontendDir               string `split_words:"true" desc:"serve the built curator SPA from this directory"`
	FrontendIndex             string `split_words:"true" default:"index.html" desc:"SPA index file"`
	FrontendCacheSeconds      int    `split_words:"true" default:"3600" desc:"max-age of static files"`
	RequireReferenceVisit     Bool   `split_words:"true" default:"false" desc:"UI hint served by /v1/config"`
	RequireKeyParagraph       Bool   `split_words:"true" default:"false" desc:"UI hint served by /v1/config"`
	SelfServeLimit            int    `split_words:"true" default:"10" desc:"self-serve batch size"`
	SelfServeMax              int    `split_words:"true" default:"100" desc:"upper clamp of a self-serve request"`
	TrustedReferenceDomains   CSV    `split_words:"true" desc:"hostnames the UI opens without confirmation"`
	PaginationMinLimit        int    `split_words:"true" default:"1" desc:"smallest accepted list limit"`
	PaginationMaxLimit        int    `split_words:"true" default:"100" desc:"largest accepted list limit"`
	SamplingAllocation        string `split_words:"true" desc:"self-serve quotas by dataset prefix, prefix:weight,..."`
	PiiDetectionEnabled       Bool   `split_words:"true" default:"true" desc:"import PII warnings"`
	DuplicateDetectionEnabled Bool   `split_words:"true" default:"true" desc:"import duplicate warnings"`

	// Export.
	ExportProcessorOrder       string   `split_words:"true" desc:"default export processor chain (comma-separated); unset: none"`
	ExportStorageBackend       string   `split_words:"true" default:"local" desc:"where artifact exports go: local or blob"`
	ExportLocalDir             string   `split_words:"true" desc:"root of local artifact storage; default $GTC_DATA_DIR"`
	ExportBlobAccountURL       string   `split_words:"true" desc:"Blob endpoint, e.g. https://<account>.blob.core.windows.net"`
	ExportBlobContainer        string   `split_words:"true" desc:"Blob container of the exports; required with blob"`
	ExportBlobConnectionString string   `split_words:"true" desc:"Blob connection string (development, Azurite; secret)"`
	ExportBlobAccountKey       string   `split_words:"true" desc:"shared key used with the account URL (secret)"`
	ExportBlobAccountName      string   `split_words:"true" desc:"account name for the shared key; default: read from the URL"`
	ExportBlobCreateContainer  Bool     `split_words:"true" default:"false" desc:"create the container at startup when missing"`
	ExportPageSize             int      `split_words:"true" default:"200" desc:"items per store page during an export (1-1000)"`
	ExportWriteConcurrency     int      `split_words:"true" default:"8" desc:"parallel item-file writes of an artifact export (1-64)"`
	ExportMaxConcurrent        int      `split_words:"true" default:"2" desc:"exports running at once per process (1-32)"`
	ExportTimeout              Duration `split_words:"true" default:"30m" desc:"deadline of one export request"`
	ExportInternalFields       string   `split_words:"true" default:"_etag,docType,assignedTo,assignedAt,updatedBy,createdBy,comment,tracePayload" desc:"top-level keys strip_internal removes (comma-separated)"`
	ExportRetention            Age      `split_words:"true" default:"0" desc:"gtc serve deletes complete snapshots older than this (e.g. 30d), at startup and hourly; 0 keeps them"`
	ExportMinFreeBytes         ByteSize `split_words:"true" default:"1GiB" desc:"artifact exports to local storage are refused (507) below this much free space; 0: no check"`

	// Search.
	SearchBackend      string `split_words:"true" default:"auto" desc:"auto, azure, references or none"`
	AzSearchEndpoint   string `split_words:"true" desc:"Azure AI Search endpoint"`
	AzSearchIndex      string `split_words:"true" desc:"Azure AI Search index"`
	AzSearchKey        string `split_words:"true" desc:"Azure AI Search query key (secret); unset: default Azure credential"`
	AzSearchAPIVersion string `split_words:"true" default:"2024-07-01" desc:"Azure AI Search REST API version"`
	SearchFieldURL     string `split_words:"true" default:"url" desc:"search hit field used as url"`
	SearchFieldTitle   string `split_words:"true" default:"title" desc:"search hit field used as title"`
	SearchFieldChunk   string `split_words:"true" default:"chunk" desc:"search hit field used as chunk"`

	// Agent tools.
	AgentToolsEnabled       Bool     `split_words:"true" default:"true" desc:"serve /v1/agent/tools*"`
	AgentMcpEnabled         Bool     `split_words:"true" default:"true" desc:"serve the MCP server on /mcp"`
	AgentMaxItems           int      `split_words:"true" default:"10000" desc:"most items one agent tag operation may change"`
	AgentPreviewTTL         Duration `split_words:"true" default:"15m" desc:"how long a preview stays executable (at least 1m)"`
	AgentPreviewCacheSize   int      `split_words:"true" default:"256" desc:"previews kept in the store, of all callers"`
	AgentPreviewCacheItems  int      `split_words:"true" default:"200000" desc:"change entries kept across all previews"`
	AgentPreviewsPerUser    int      `split_words:"true" default:"16" desc:"open previews per caller"`
	AgentWritesPerSecond    int      `split_words:"true" default:"50" desc:"item writes per second, all agent executions together"`
	AgentMaxConcurrentOps   int      `split_words:"true" default:"4" desc:"agent executions at once per process"`
	AgentWriteRetries       int      `split_words:"true" default:"3" desc:"attempts per item on transient store errors"`
	AgentToolTimeout        Duration `split_words:"true" default:"30s" desc:"deadline of agent reads and previews"`
	AgentExecWait           Duration `split_words:"true" default:"60s" desc:"how long an execution call waits before answering running"`
	AgentLeaseTTL           Duration `split_words:"true" default:"30s" desc:"how long an agent execution's tag locks last without renewal; repairs run as often"`
	AgentWriteRoles         CSV      `split_words:"true" desc:"roles allowed to execute agent tag changes (comma-separated); empty: any caller"`
	AgentAuditRetentionDays int      `split_words:"true" default:"0" desc:"days agent audit entries are kept; 0 keeps them forever"`

	HistoryEnabled       Bool `split_words:"true" default:"true" desc:"record a revision with every item write (false: none are recorded, for measuring their cost)"`
	HistoryRetentionDays int  `split_words:"true" default:"0" desc:"days item revisions are kept, pruned as each item is written; the latest always stays; 0 keeps them all"`
	HistoryMaxRevisions  int  `split_words:"true" default:"0" desc:"most revisions kept per item, the oldest pruned as it is written; 0 keeps them all"`

	// portSet records whether GTC_PORT was set explicitly: only then does a
	// different port in GTC_ADDR conflict.
	portSet bool
	// authModeSet records whether GTC_AUTH_MODE was set explicitly.
	authModeSet bool
	// cosmosSet lists the Cosmos DB settings that were set, for the warning while the
	// backend is sqlite.
	cosmosSet []string
	// Ignored lists the accepted-but-ignored names that were set.
	Ignored []string `ignored:"true"`
}

// ignoredNames are reference-backend settings accepted with a warning and no effect.
var ignoredNames = map[string]string{
	"GTC_COSMOS_DISABLE_UNICODE_ESCAPE":    "the lossy text rewriting for an old emulator is not carried over",
	"GTC_COSMOS_ENABLE_ENDPOINT_DISCOVERY": "the Go SDK manages endpoint discovery",
	"GTC_COSMOS_TEST_MODE":                 "startup no longer needs a test switch",
	"GTC_PAGINATION_TAG_FETCH_MAX":         "the 500-candidate cap is gone; list totals are exact",
	"GTC_IMPORT_BUCKETS_DEFAULT":           "the bucket count is a constant of the storage format",
	"GTC_AZ_MONITOR_ENABLED":               "use OpenTelemetry: traces go to OTEL_EXPORTER_OTLP_ENDPOINT (the Container Apps OpenTelemetry agent forwards them to Application Insights); metrics are on GET /metrics",
	"GTC_AZ_MONITOR_CONNECTION_STRING":     "use OpenTelemetry: traces go to OTEL_EXPORTER_OTLP_ENDPOINT (the Container Apps OpenTelemetry agent forwards them to Application Insights); metrics are on GET /metrics",
	"GTC_HARNESS_JSONL_ENABLED":            "the request-mirroring middleware is not carried over",
	"GTC_ENTRA_TENANT_ID":                  "only dev and easyauth identity modes exist",
	"GTC_ENTRA_AUDIENCE":                   "only dev and easyauth identity modes exist",
	"GTC_ENTRA_ISSUER":                     "only dev and easyauth identity modes exist",
	"GTC_DEMO_MODE":                        "demo data is loaded with gtc seed",
	"GTC_DEMO_USER_ID":                     "demo data is loaded with gtc seed",
}

// secretNames are never printed or logged.
var secretNames = map[string]bool{
	"GTC_COSMOS_KEY": true, "GTC_AZ_SEARCH_KEY": true, "GTC_EXPORT_BLOB_CONNECTION_STRING": true, "GTC_EXPORT_BLOB_ACCOUNT_KEY": true,
}

// isCosmosName reports a setting of the Cosmos DB store (read only with GTC_REPO_BACKEND=cosmos).
func isCosmosName(name string) bool {
	return strings.HasPrefix(name, "GTC_COSMOS_") || name == "GTC_USE_COSMOS_EMULATOR"
}

// Problems collects every invalid setting; Error prints one per line.
type Problems []string

func (p Problems) Error() string { return "invalid configuration:\n  " + strings.Join(p, "\n  ") }

// Names returns every setting name, in struct order.
func Names() []string {
	var c Config
	var b strings.Builder
	if err := envconfig.Usagef(Prefix, &c, &b, "{{range .}}{{usage_key .}}\n{{end}}"); err != nil {
		panic(err)
	}
	return strings.Fields(b.String())
}

// Load reads the process environment: dotenv files first, empty values as unset, then
// envconfig, then the unknown-name check and validation. Every problem is reported at once.
func Load() (*Config, error) {
	var probs Problems
	if files := strings.TrimSpace(os.Getenv("GTC_ENV_FILE")); files != "" {
		for _, f := range strings.Split(files, ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			if err := loadDotenv(f); err != nil {
				probs = append(probs, fmt.Sprintf("GTC_ENV_FILE=%s: %v", files, err))
			}
		}
	}
	known := map[string]bool{}
	for _, n := range Names() {
		known[n] = true
	}
	var ignored, unknown []string
	for _, kv := range os.Environ() {
		name, val, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, Prefix+"_") {
			continue
		}
		if val == "" {
			// Empty means unset, so envconfig applies the default instead of failing to parse "".
			_ = os.Unsetenv(name)
			continue
		}
		switch {
		// GTC_TEST_* and GTC_BENCH_* configure the test and benchmark harnesses, not gtc.
		case known[name], strings.HasPrefix(name, "GTC_TEST_"), strings.HasPrefix(name, "GTC_BENCH_"):
		case ignoredNames[name] != "":
			ignored = append(ignored, name)
		default:
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	sort.Strings(ignored)
	for _, u := range unknown {
		msg := "unknown setting " + u
		if s := closest(u, Names()); s != "" {
			msg += " (did you mean " + s + "?)"
		}
		probs = append(probs, msg)
	}
	var c Config
	if err := envconfig.Process(Prefix, &c); err != nil {
		probs = append(probs, envconfigProblem(err))
		return nil, probs
	}
	_, c.portSet = os.LookupEnv("GTC_PORT")
	if c.AzureClientID != "" && os.Getenv("AZURE_CLIENT_ID") == "" {
		// The Azure credential chain looks for a user-assigned identity there.
		_ = os.Setenv("AZURE_CLIENT_ID", c.AzureClientID)
	}
	_, c.authModeSet = os.LookupEnv("GTC_AUTH_MODE")
	for _, n := range Names() {
		if _, set := os.LookupEnv(n); set && isCosmosName(n) {
			c.cosmosSet = append(c.cosmosSet, n)
		}
	}
	c.Ignored = ignored
	probs = append(probs, c.Validate()...)
	if len(probs) > 0 {
		return nil, probs
	}
	return &c, nil
}

// Default returns the settings with every default applied, as if no variable were set.
func Default() *Config {
	var c Config
	// Defaults come from the struct tags; an empty environment cannot fail.
	if err := envconfig.Process("GTC_UNSET_DEFAULTS_ONLY", &c); err != nil {
		panic(err)
	}
	return &c
}

func envconfigProblem(err error) string {
	if pe, ok := err.(*envconfig.ParseError); ok {
		return fmt.Sprintf("%s=%q: %v", pe.KeyName, pe.Value, pe.Err)
	}
	return err.Error()
}

var prefixRE = regexp.MustCompile(`^/[A-Za-z0-9._~-]+(/[A-Za-z0-9._~-]+)*$`)

// Validate checks values and combinations and returns every problem.
func (c *Config) Validate() Problems {
	var p Problems
	enum := func(name, val string, allowed ...string) {
		for _, a := range allowed {
			if val == a {
				return
			}
		}
		p = append(p, fmt.Sprintf("%s=%q: must be one of %s", name, val, strings.Join(allowed, ", ")))
	}
	enum("GTC_ENV", c.Env, "dev", "test", "prod")
	switch c.RepoBackend {
	case "sqlite":
	case "cosmos":
		p = append(p, c.validateCosmos()...)
	case "memory":
		p = append(p, "GTC_REPO_BACKEND=memory is not supported; use sqlite (GTC_SQLITE_PATH=:memory: gives a throw-away database)")
	default:
		p = append(p, fmt.Sprintf("GTC_REPO_BACKEND=%q: must be one of sqlite, cosmos", c.RepoBackend))
	}
	enum("GTC_AUTH_MODE", c.AuthMode, "dev", "easyauth")
	enum("GTC_LOG_LEVEL", c.LogLevel, "debug", "info", "warn", "error")
	enum("GTC_LOG_FORMAT", c.LogFormat, "json", "text", "auto")
	enum("GTC_SQLITE_SYNCHRONOUS", c.SqliteSynchronous, "FULL", "NORMAL")
	enum("GTC_EZAUTH_HEADER_SOURCE", c.EzauthHeaderSource, "aca")
	enum("GTC_AUTH_DEFAULT_ROLE", strings.ToLower(strings.TrimSpace(c.AuthDefaultRole)), "viewer", "curator", "admin", "none")
	p = append(p, c.roleClaimProblems()...)
	for _, d := range c.EzauthAllowedEmailDomains {
		if !isASCII(d) {
			p = append(p, fmt.Sprintf("GTC_EZAUTH_ALLOWED_EMAIL_DOMAINS=%q: write an internationalized domain in its ASCII (punycode, xn--) form", d))
		}
	}

	if c.Port < 0 || c.Port > 65535 {
		p = append(p, fmt.Sprintf("GTC_PORT=%d: must be between 0 and 65535", c.Port))
	}
	if c.MaxBodyBytes < 1024 {
		p = append(p, fmt.Sprintf("GTC_MAX_BODY_BYTES=%d: must be at least 1024", c.MaxBodyBytes))
	}
	positive := func(name string, d Duration) {
		if d <= 0 {
			p = append(p, fmt.Sprintf("%s=%s: must be a positive duration", name, time.Duration(d)))
		}
	}
	positive("GTC_REQUEST_TIMEOUT", c.RequestTimeout)
	positive("GTC_HTTP_READ_HEADER_TIMEOUT", c.HTTPReadHeaderTimeout)
	positive("GTC_HTTP_IDLE_TIMEOUT", c.HTTPIdleTimeout)
	positive("GTC_SHUTDOWN_TIMEOUT", c.ShutdownTimeout)
	positive("GTC_SQLITE_BUSY_TIMEOUT", c.SqliteBusyTimeout)
	if c.SqliteReadConnections < 1 || c.SqliteReadConnections > 64 {
		p = append(p, fmt.Sprintf("GTC_SQLITE_READ_CONNECTIONS=%d: must be between 1 and 64", c.SqliteReadConnections))
	}
	if c.RecomputeBatchSize < 1 || c.RecomputeBatchSize > 1000 {
		p = append(p, fmt.Sprintf("GTC_RECOMPUTE_BATCH_SIZE=%d: must be between 1 and 1000", c.RecomputeBatchSize))
	}
	if c.MaxConcurrentJobs < 1 {
		p = append(p, fmt.Sprintf("GTC_MAX_CONCURRENT_JOBS=%d: must be at least 1", c.MaxConcurrentJobs))
	}
	positive("GTC_JOB_RETENTION", c.JobRetention)
	if c.JobLeaseTTL < Duration(time.Second) {
		p = append(p, fmt.Sprintf("GTC_JOB_LEASE_TTL=%s: must be at least 1s", time.Duration(c.JobLeaseTTL)))
	}
	if c.JobsMaxQueued < 0 {
		p = append(p, fmt.Sprintf("GTC_JOBS_MAX_QUEUED=%d: must be 0 (no job waits) or more", c.JobsMaxQueued))
	}
	if c.ManualTagsConfigPath != "" {
		if _, err := os.Stat(c.ManualTagsConfigPath); err != nil {
			p = append(p, fmt.Sprintf("GTC_MANUAL_TAGS_CONFIG_PATH=%q: %v", c.ManualTagsConfigPath, err))
		}
	}
	if c.SelfServeMax < 1 {
		p = append(p, fmt.Sprintf("GTC_SELF_SERVE_MAX=%d: must be at least 1", c.SelfServeMax))
	}
	if c.FrontendCacheSeconds < 0 {
		p = append(p, fmt.Sprintf("GTC_FRONTEND_CACHE_SECONDS=%d: must be at least 0", c.FrontendCacheSeconds))
	}
	if c.FrontendDir != "" {
		if _, err := os.Stat(filepath.Join(c.FrontendDir, c.FrontendIndex)); err != nil {
			p = append(p, fmt.Sprintf("GTC_FRONTEND_DIR=%q: the index file %s is missing (%v)", c.FrontendDir, c.FrontendIndex, err))
		}
	}
	enum("GTC_SEARCH_BACKEND", c.SearchBackend, "auto", "azure", "references", "none")
	switch {
	case c.SearchBackend == "azure" && (c.AzSearchEndpoint == "" || c.AzSearchIndex == ""):
		p = append(p, "GTC_SEARCH_BACKEND=azure needs GTC_AZ_SEARCH_ENDPOINT and GTC_AZ_SEARCH_INDEX")
	case c.SearchBackend == "auto" && (c.AzSearchEndpoint == "") != (c.AzSearchIndex == ""):
		p = append(p, "GTC_AZ_SEARCH_ENDPOINT and GTC_AZ_SEARCH_INDEX must be set together")
	}
	if c.SelfServeLimit < 1 {
		p = append(p, fmt.Sprintf("GTC_SELF_SERVE_LIMIT=%d: must be at least 1", c.SelfServeLimit))
	}
	if !(1 <= c.PaginationMinLimit && c.PaginationMinLimit <= c.PaginationMaxLimit && c.PaginationMaxLimit <= 1000) {
		p = append(p, fmt.Sprintf("GTC_PAGINATION_MIN_LIMIT=%d, GTC_PAGINATION_MAX_LIMIT=%d: need 1 <= min <= max <= 1000",
			c.PaginationMinLimit, c.PaginationMaxLimit))
	}
	if !prefixRE.MatchString(c.APIPrefix) {
		p = append(p, fmt.Sprintf("GTC_API_PREFIX=%q: must start with / and not end with / (e.g. /v1)", c.APIPrefix))
	}
	if c.Addr != "" {
		if host, port, err := net.SplitHostPort(c.Addr); err == nil {
			n, perr := strconv.Atoi(port)
			switch {
			case perr != nil || n < 0 || n > 65535:
				p = append(p, fmt.Sprintf("GTC_ADDR=%q: invalid port", c.Addr))
			case c.portSet && n != c.Port:
				p = append(p, fmt.Sprintf("GTC_ADDR=%q and GTC_PORT=%d name different ports", c.Addr, c.Port))
			}
			_ = host
		} else if strings.Count(c.Addr, ":") == 1 && !strings.HasPrefix(c.Addr, "[") {
			p = append(p, fmt.Sprintf("GTC_ADDR=%q: %v", c.Addr, err))
		}
	}
	if c.Env == "prod" {
		if !c.EasyAuth() {
			p = append(p, "GTC_ENV=prod requires Easy Auth: set GTC_AUTH_MODE=easyauth (or GTC_EZAUTH_ENABLED=true)")
		}
		if c.SqlitePath == ":memory:" {
			p = append(p, "GTC_ENV=prod forbids GTC_SQLITE_PATH=:memory: (every item would be lost at exit)")
		}
		if c.CosmosConnectionVerify.Off() {
			p = append(p, "GTC_ENV=prod forbids GTC_COSMOS_CONNECTION_VERIFY=false (TLS certificates must be verified; a PEM bundle path adds a private CA)")
		}
	}
	if err := checkWritableDir(c.DataDir); err != nil {
		p = append(p, fmt.Sprintf("GTC_DATA_DIR=%q: %v", c.DataDir, err))
	}
	p = append(p, c.validateExport()...)
	p = append(p, c.validateAgent()...)
	return p
}

// validateAgent checks the agent-tool limits: limits and durations are positive, the preview
// TTL is at least a minute, and retention is not negative.
func (c *Config) validateAgent() Problems {
	var p Problems
	for _, x := range []struct {
		name string
		v    int
	}{
		{"GTC_AGENT_MAX_ITEMS", c.AgentMaxItems}, {"GTC_AGENT_PREVIEW_CACHE_SIZE", c.AgentPreviewCacheSize},
		{"GTC_AGENT_PREVIEW_CACHE_ITEMS", c.AgentPreviewCacheItems}, {"GTC_AGENT_PREVIEWS_PER_USER", c.AgentPreviewsPerUser},
		{"GTC_AGENT_WRITES_PER_SECOND", c.AgentWritesPerSecond}, {"GTC_AGENT_MAX_CONCURRENT_OPS", c.AgentMaxConcurrentOps},
		{"GTC_AGENT_WRITE_RETRIES", c.AgentWriteRetries},
	} {
		if x.v < 1 {
			p = append(p, fmt.Sprintf("%s=%d: must be at least 1", x.name, x.v))
		}
	}
	for _, x := range []struct {
		name string
		d    Duration
	}{{"GTC_AGENT_TOOL_TIMEOUT", c.AgentToolTimeout}, {"GTC_AGENT_EXEC_WAIT", c.AgentExecWait}} {
		if x.d <= 0 {
			p = append(p, fmt.Sprintf("%s=%s: must be a positive duration", x.name, time.Duration(x.d)))
		}
	}
	if c.AgentLeaseTTL < Duration(time.Second) {
		p = append(p, fmt.Sprintf("GTC_AGENT_LEASE_TTL=%s: must be at least 1s", time.Duration(c.AgentLeaseTTL)))
	}
	if c.AgentPreviewTTL < Duration(time.Minute) {
		p = append(p, fmt.Sprintf("GTC_AGENT_PREVIEW_TTL=%s: must be at least 1m", time.Duration(c.AgentPreviewTTL)))
	}
	if c.AgentAuditRetentionDays < 0 {
		p = append(p, fmt.Sprintf("GTC_AGENT_AUDIT_RETENTION_DAYS=%d: must be 0 (keep forever) or more", c.AgentAuditRetentionDays))
	}
	if c.HistoryRetentionDays < 0 {
		p = append(p, fmt.Sprintf("GTC_HISTORY_RETENTION_DAYS=%d: must be 0 (keep all) or more", c.HistoryRetentionDays))
	}
	if c.HistoryMaxRevisions < 0 {
		p = append(p, fmt.Sprintf("GTC_HISTORY_MAX_REVISIONS=%d: must be 0 (no limit) or more", c.HistoryMaxRevisions))
	}
	return p
}

// validateCosmos checks the Cosmos DB settings: values and ranges, the endpoint URL and its
// credentials. It runs only with GTC_REPO_BACKEND=cosmos: with sqlite these settings have no
// effect and are warned about instead, like the Blob settings while exports are local.
func (c *Config) validateCosmos() Problems {
	var p Problems
	endpoint := c.CosmosEndpoint
	u, err := url.Parse(endpoint)
	switch {
	case endpoint == "":
		p = append(p, "GTC_REPO_BACKEND=cosmos needs GTC_COSMOS_ENDPOINT (e.g. https://<account>.documents.azure.com:443/)")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		p = append(p, fmt.Sprintf("GTC_COSMOS_ENDPOINT=%q: must be an absolute http(s) URL, e.g. https://<account>.documents.azure.com:443/", endpoint))
	case u.Scheme == "http" && c.CosmosKey == "" && !bool(c.UseCosmosEmulator):
		p = append(p, fmt.Sprintf("GTC_COSMOS_ENDPOINT=%q uses http://: Entra ID tokens are only sent over https, so set GTC_COSMOS_KEY (or GTC_USE_COSMOS_EMULATOR=true) or use https", endpoint))
	}
	if c.CosmosKey != "" {
		if _, err := base64.StdEncoding.DecodeString(c.CosmosKey); err != nil {
			// The key itself never appears in a message.
			p = append(p, fmt.Sprintf("GTC_COSMOS_KEY=***: must be valid base64 (%d characters given; the SDK signs requests with the decoded key)", len(c.CosmosKey)))
		}
	}
	if path := c.CosmosConnectionVerify.Path(); path != "" {
		if err := checkPEMBundle(path); err != nil {
			p = append(p, fmt.Sprintf("GTC_COSMOS_CONNECTION_VERIFY=%q: must be true, false or a readable PEM bundle: %v", path, err))
		}
	}
	names := [][2]string{
		{"GTC_COSMOS_DB_NAME", c.CosmosDBName},
		{"GTC_COSMOS_CONTAINER_GT", c.CosmosContainerGT}, {"GTC_COSMOS_CONTAINER_ASSIGNMENTS", c.CosmosContainerAssignments},
		{"GTC_COSMOS_CONTAINER_TAGS", c.CosmosContainerTags}, {"GTC_COSMOS_CONTAINER_TAG_DEFINITIONS", c.CosmosContainerTagDefinitions},
		{"GTC_COSMOS_CONTAINER_META", c.CosmosContainerMeta}, {"GTC_COSMOS_CONTAINER_AGENT_OPERATIONS", c.CosmosContainerAgentOperations},
	}
	usedBy := map[string]string{} // container name → the first setting naming it
	for i, x := range names {
		name, v := x[0], x[1]
		if strings.ContainsAny(v, `/\#?`) || len(v) > 255 || strings.TrimSpace(v) != v {
			p = append(p, fmt.Sprintf(`%s=%q: a Cosmos DB resource name has at most 255 characters, none of / \ # ?, and no surrounding spaces`, name, v))
		}
		if i == 0 {
			continue // the database is not a container
		}
		if first, dup := usedBy[v]; dup {
			// Two kinds of documents in one container would mix (assignments and tags share /pk).
			p = append(p, fmt.Sprintf("%s and %s both name the container %q: every container of the store must be a different one", first, name, v))
		} else {
			usedBy[v] = name
		}
	}
	switch c.CosmosRebuildRegistry {
	case "auto", "always", "never":
	default:
		p = append(p, fmt.Sprintf("GTC_COSMOS_REBUILD_REGISTRY=%q: must be one of auto, always, never", c.CosmosRebuildRegistry))
	}
	if t := c.CosmosAutoscaleMaxThroughput; t != 0 && (t < 1000 || t%1000 != 0 || t > math.MaxInt32) {
		p = append(p, fmt.Sprintf("GTC_COSMOS_AUTOSCALE_MAX_THROUGHPUT=%d: must be 0 (no throughput set) or a multiple of 1000 RU/s, at least 1000", t))
	}
	atLeast := func(name string, v, lo int) {
		if v < lo {
			p = append(p, fmt.Sprintf("%s=%d: must be at least %d", name, v, lo))
		}
	}
	atLeast("GTC_COSMOS_MAX_CONNECTION_POOL_SIZE", c.CosmosMaxConnectionPoolSize, 1)
	atLeast("GTC_COSMOS_RETRY_TOTAL_ATTEMPTS", c.CosmosRetryTotalAttempts, 1)
	if c.CosmosPageSize < 1 || c.CosmosPageSize > 1000 {
		p = append(p, fmt.Sprintf("GTC_COSMOS_PAGE_SIZE=%d: must be between 1 and 1000", c.CosmosPageSize))
	}
	for _, x := range []struct {
		name string
		d    Duration
	}{{"GTC_COSMOS_REQUEST_TIMEOUT", c.CosmosRequestTimeout}, {"GTC_COSMOS_RETRY_FIXED_INTERVAL", c.CosmosRetryFixedInterval}} {
		if x.d <= 0 {
			p = append(p, fmt.Sprintf("%s=%s: must be a positive duration", x.name, x.d))
		}
	}
	if v := c.CosmosSlowQueryRUThreshold; v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		p = append(p, fmt.Sprintf("GTC_COSMOS_SLOW_QUERY_RU_THRESHOLD=%v: must be a number of request units, at least 0", v))
	}
	return p
}

// checkPEMBundle reports a file that cannot be read or holds no PEM certificate.
func checkPEMBundle(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !x509.NewCertPool().AppendCertsFromPEM(b) {
		return fmt.Errorf("%s holds no PEM certificate", path)
	}
	return nil
}

var containerRE = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$`)

// validateExport checks the export settings: values and ranges, the Blob container and
// credential source, and a writable local directory. The processor names and internal
// fields are checked against the registry when it is built.
func (c *Config) validateExport() Problems {
	var p Problems
	between := func(name string, v, lo, hi int) {
		if v < lo || v > hi {
			p = append(p, fmt.Sprintf("%s=%d: must be between %d and %d", name, v, lo, hi))
		}
	}
	between("GTC_EXPORT_PAGE_SIZE", c.ExportPageSize, 1, 1000)
	between("GTC_EXPORT_WRITE_CONCURRENCY", c.ExportWriteConcurrency, 1, 64)
	between("GTC_EXPORT_MAX_CONCURRENT", c.ExportMaxConcurrent, 1, 32)
	if c.ExportTimeout <= 0 {
		p = append(p, fmt.Sprintf("GTC_EXPORT_TIMEOUT=%s: must be a positive duration", c.ExportTimeout))
	}
	if r := c.ExportRetention.D(); r != 0 && r < time.Hour {
		p = append(p, fmt.Sprintf("GTC_EXPORT_RETENTION=%s: must be 0 (keep snapshots) or at least 1h", c.ExportRetention))
	}
	switch c.ExportStorageBackend {
	case "local":
		if c.ExportLocalDir != "" {
			if err := checkWritableDir(c.ExportLocalDir); err != nil {
				p = append(p, fmt.Sprintf("GTC_EXPORT_LOCAL_DIR=%q: %v", c.ExportLocalDir, err))
			}
		}
	case "blob":
		name := c.ExportBlobContainer
		if name == "" {
			p = append(p, "GTC_EXPORT_STORAGE_BACKEND=blob needs GTC_EXPORT_BLOB_CONTAINER")
		} else if len(name) < 3 || len(name) > 63 || !containerRE.MatchString(name) || strings.Contains(name, "--") {
			p = append(p, fmt.Sprintf("GTC_EXPORT_BLOB_CONTAINER=%q: must be 3-63 lower-case letters, digits and single hyphens, starting and ending with a letter or digit", name))
		}
		cs, url, key, acct := c.ExportBlobConnectionString, c.ExportBlobAccountURL, c.ExportBlobAccountKey, c.ExportBlobAccountName
		switch {
		case cs != "" && (url != "" || key != "" || acct != ""):
			p = append(p, "GTC_EXPORT_BLOB_CONNECTION_STRING cannot be combined with GTC_EXPORT_BLOB_ACCOUNT_URL, _ACCOUNT_KEY or _ACCOUNT_NAME: set one credential source")
		case cs == "" && url == "":
			p = append(p, "GTC_EXPORT_STORAGE_BACKEND=blob needs GTC_EXPORT_BLOB_ACCOUNT_URL (managed identity or a key) or GTC_EXPORT_BLOB_CONNECTION_STRING")
		case cs == "" && strings.HasPrefix(strings.ToLower(url), "http://") && key == "":
			p = append(p, "GTC_EXPORT_BLOB_ACCOUNT_URL uses http://: Azure credentials are only sent over https, so set GTC_EXPORT_BLOB_ACCOUNT_KEY or use https")
		case cs == "" && !strings.HasPrefix(strings.ToLower(url), "http://") && !strings.HasPrefix(strings.ToLower(url), "https://"):
			p = append(p, fmt.Sprintf("GTC_EXPORT_BLOB_ACCOUNT_URL=%q: must be an http(s) URL", url))
		}
	default:
		p = append(p, fmt.Sprintf("GTC_EXPORT_STORAGE_BACKEND=%q: must be one of local, blob", c.ExportStorageBackend))
	}
	if c.ExportStorageBackend == "blob" && c.ExportBlobConnectionString == "" && c.ExportBlobURLless() {
		p = append(p, "GTC_EXPORT_BLOB_ACCOUNT_KEY and GTC_EXPORT_BLOB_ACCOUNT_NAME need GTC_EXPORT_BLOB_ACCOUNT_URL")
	}
	return p
}

// ExportBlobURLless reports a key or account name set without the account URL.
func (c *Config) ExportBlobURLless() bool {
	return c.ExportBlobAccountURL == "" && (c.ExportBlobAccountKey != "" || c.ExportBlobAccountName != "")
}

// ExportLocalRoot is the root of local artifact storage: GTC_EXPORT_LOCAL_DIR, else
// GTC_DATA_DIR.
func (c *Config) ExportLocalRoot() string {
	if c.ExportLocalDir != "" {
		return c.ExportLocalDir
	}
	return c.DataDir
}

// TempDir is where exports keep their temporary files: $GTC_DATA_DIR/tmp.
func (c *Config) TempDir() string { return filepath.Join(c.DataDir, "tmp") }

// Warnings lists settings that are valid but probably not what was meant: they are logged
// once at startup.
func (c *Config) Warnings() []string {
	var w []string
	for _, name := range c.Ignored {
		w = append(w, name+" has no effect: "+ignoredNames[name])
	}
	if bool(c.EzauthEnabled) && c.authModeSet && c.AuthMode == "dev" {
		w = append(w, "GTC_EZAUTH_ENABLED=true overrides GTC_AUTH_MODE=dev: identity comes from Easy Auth headers")
	}
	if _, ignored := gtc.ParseAllocation(c.SamplingAllocation); len(ignored) > 0 {
		w = append(w, "GTC_SAMPLING_ALLOCATION: ignored entries (want prefix:weight with a positive weight): "+strings.Join(ignored, ", "))
	}
	if c.ExportStorageBackend == "local" {
		var set []string
		for name, v := range map[string]string{
			"GTC_EXPORT_BLOB_ACCOUNT_URL": c.ExportBlobAccountURL, "GTC_EXPORT_BLOB_CONTAINER": c.ExportBlobContainer,
			"GTC_EXPORT_BLOB_CONNECTION_STRING": c.ExportBlobConnectionString, "GTC_EXPORT_BLOB_ACCOUNT_KEY": c.ExportBlobAccountKey,
			"GTC_EXPORT_BLOB_ACCOUNT_NAME": c.ExportBlobAccountName,
		} {
			if v != "" {
				set = append(set, name)
			}
		}
		if len(set) > 0 {
			sort.Strings(set)
			w = append(w, strings.Join(set, ", ")+" set, but GTC_EXPORT_STORAGE_BACKEND=local: exports go to "+c.ExportLocalRoot()+", not to Blob Storage")
		}
	}
	if c.RepoBackend == "sqlite" && len(c.cosmosSet) > 0 {
		w = append(w, strings.Join(c.cosmosSet, ", ")+" set, but GTC_REPO_BACKEND=sqlite: items are stored in "+c.SQLitePath()+", not in Cosmos DB")
	}
	if len(c.AgentWriteRoles) > 0 {
		w = append(w, "GTC_AGENT_WRITE_ROLES="+c.AgentWriteRoles.String()+": agent tag executions need the curator role of the permission table and, "+
			"in addition, one of these role claims or roles; unset it to let every curator execute")
	}
	if !c.EasyAuth() && (len(c.EzauthAllowedEmailDomains) > 0 || len(c.EzauthAllowedObjectIds) > 0 || len(c.EzauthAllowAnonymousPaths) > 0) {
		w = append(w, "Easy Auth allow-lists are set but the server runs in dev mode, where they have no effect")
	}
	return w
}

// RoleClaims maps each lower-case role claim value of GTC_AUTH_ADMIN_ROLES,
// GTC_AUTH_CURATOR_ROLES and GTC_AUTH_VIEWER_ROLES to the role it grants.
func (c *Config) RoleClaims() map[string]gtc.Role {
	m := map[string]gtc.Role{}
	for _, x := range []struct {
		values CSV
		role   gtc.Role
	}{{c.AuthViewerRoles, gtc.RoleViewer}, {c.AuthCuratorRoles, gtc.RoleCurator}, {c.AuthAdminRoles, gtc.RoleAdmin}} {
		for _, v := range x.values {
			m[strings.ToLower(v)] = x.role
		}
	}
	return m
}

// roleClaimProblems reports a claim value that two role settings name: which role it
// grants would depend on an order nobody wrote down.
func (c *Config) roleClaimProblems() []string {
	var p []string
	seen := map[string]string{}
	for _, x := range []struct {
		name   string
		values CSV
	}{{"GTC_AUTH_ADMIN_ROLES", c.AuthAdminRoles}, {"GTC_AUTH_CURATOR_ROLES", c.AuthCuratorRoles}, {"GTC_AUTH_VIEWER_ROLES", c.AuthViewerRoles}} {
		for _, v := range x.values {
			l := strings.ToLower(v)
			if first, ok := seen[l]; ok && first != x.name {
				p = append(p, fmt.Sprintf("%s and %s both name the role claim %q: each claim value grants one role", first, x.name, v))
				continue
			}
			seen[l] = x.name
		}
	}
	return p
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// EasyAuth reports whether identity comes from Easy Auth headers.
func (c *Config) EasyAuth() bool { return bool(c.EzauthEnabled) || c.AuthMode == "easyauth" }

// ListenAddr is the address gtc serve binds: GTC_ADDR when it has a port, else
// GTC_ADDR (host, possibly empty) with GTC_PORT.
func (c *Config) ListenAddr() string {
	if c.Addr != "" {
		if _, _, err := net.SplitHostPort(c.Addr); err == nil {
			return c.Addr
		}
		return net.JoinHostPort(strings.Trim(c.Addr, "[]"), strconv.Itoa(c.Port))
	}
	return ":" + strconv.Itoa(c.Port)
}

// History is the history options of the item stores.
func (c *Config) History() gtc.HistoryOptions {
	return gtc.HistoryOptions{
		Disabled:     !bool(c.HistoryEnabled),
		MaxRevisions: c.HistoryMaxRevisions,
		MaxAge:       time.Duration(c.HistoryRetentionDays) * 24 * time.Hour,
	}
}

// SQLitePath is the database file: GTC_SQLITE_PATH, else $GTC_DATA_DIR/gtc.db.
func (c *Config) SQLitePath() string {
	if c.SqlitePath != "" {
		return c.SqlitePath
	}
	return filepath.Join(c.DataDir, "gtc.db")
}

// Print writes the effective settings as NAME=value lines, secrets masked.
func (c *Config) Print(w io.Writer) error {
	var b strings.Builder
	tmpl := "{{range .}}{{usage_key .}}\n{{end}}"
	if err := envconfig.Usagef(Prefix, c, &b, tmpl); err != nil {
		return err
	}
	vals := c.values()
	for _, name := range strings.Fields(b.String()) {
		v := vals[name]
		if secretNames[name] && v != "" {
			v = "***"
		}
		if _, err := io.WriteString(w, name+"="+v+"\n"); err != nil {
			return err
		}
	}
	return nil
}

func checkWritableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cannot be created: %w", err)
	}
	f, err := os.CreateTemp(dir, ".gtc-write-check-*")
	if err != nil {
		return fmt.Errorf("is not writable: %w", err)
	}
	name := f.Name()
	_ = f.Close()
	return os.Remove(name)
}

// loadDotenv sets each KEY=VALUE of the file that the environment does not already have.
func loadDotenv(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		s = strings.TrimPrefix(s, "export ")
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			return fmt.Errorf("%s:%d: expected KEY=VALUE", path, line)
		}
		k = strings.TrimSpace(k)
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
			v = v[1 : len(v)-1]
		} else if i := strings.Index(v, " #"); i >= 0 {
			v = strings.TrimSpace(v[:i])
		}
		if _, set := os.LookupEnv(k); !set {
			if err := os.Setenv(k, v); err != nil {
				return err
			}
		}
	}
	return sc.Err()
}

// closest returns the known name within edit distance 3 of name, if any.
func closest(name string, known []string) string {
	best, bestD := "", 4
	for _, k := range known {
		if d := editDistance(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
