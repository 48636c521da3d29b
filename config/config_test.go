package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
)

// The settings this build reads, exactly as the Settings section of README.md names them.
// Names() derives them from the struct the way envconfig does, so a field whose words split
// unexpectedly (ObjectIDs → OBJECT_I_DS) fails here.
var specNames = []string{
	"GTC_ENV", "GTC_ENV_FILE", "GTC_ADDR", "GTC_PORT", "GTC_API_PREFIX", "GTC_MAX_BODY_BYTES",
	"GTC_REQUEST_TIMEOUT", "GTC_HTTP_READ_HEADER_TIMEOUT", "GTC_HTTP_IDLE_TIMEOUT", "GTC_SHUTDOWN_TIMEOUT",
	"GTC_LOG_LEVEL", "GTC_LOG_FORMAT", "GTC_SERVICE_NAME", "GTC_METRICS_ENABLED", "GTC_DATA_DIR",
	"GTC_AUTH_MODE", "GTC_EZAUTH_ENABLED", "GTC_DEV_USER_ID", "GTC_DEV_USER_ROLES",
	"GTC_EZAUTH_ALLOW_ANONYMOUS_PATHS", "GTC_EZAUTH_ALLOWED_EMAIL_DOMAINS", "GTC_EZAUTH_ALLOWED_OBJECT_IDS",
	"GTC_EZAUTH_HEADER_SOURCE", "GTC_EZAUTH_ALLOW_NAME_ONLY", "GTC_AUTH_ADMIN_ROLES", "GTC_AUTH_CURATOR_ROLES",
	"GTC_AUTH_VIEWER_ROLES", "GTC_AUTH_DEFAULT_ROLE", "GTC_AZURE_CLIENT_ID",
	"GTC_REPO_BACKEND", "GTC_SQLITE_PATH", "GTC_SQLITE_SYNCHRONOUS", "GTC_SQLITE_BUSY_TIMEOUT", "GTC_SQLITE_READ_CONNECTIONS",
	"GTC_COSMOS_ENDPOINT", "GTC_COSMOS_KEY", "GTC_USE_COSMOS_EMULATOR", "GTC_COSMOS_CONNECTION_VERIFY", "GTC_COSMOS_DB_NAME",
	"GTC_COSMOS_CONTAINER_GT", "GTC_COSMOS_CONTAINER_ASSIGNMENTS", "GTC_COSMOS_CONTAINER_TAGS", "GTC_COSMOS_CONTAINER_TAG_DEFINITIONS",
	"GTC_COSMOS_CONTAINER_META", "GTC_COSMOS_CONTAINER_AGENT_OPERATIONS", "GTC_COSMOS_CREATE_CONTAINERS", "GTC_COSMOS_REBUILD_REGISTRY",
	"GTC_COSMOS_AUTOSCALE_MAX_THROUGHPUT", "GTC_COSMOS_PREFERRED_REGIONS", "GTC_COSMOS_MAX_CONNECTION_POOL_SIZE",
	"GTC_COSMOS_REQUEST_TIMEOUT", "GTC_COSMOS_RETRY_TOTAL_ATTEMPTS", "GTC_COSMOS_RETRY_FIXED_INTERVAL", "GTC_COSMOS_PAGE_SIZE",
	"GTC_COSMOS_LOG_QUERY_METRICS", "GTC_COSMOS_LOG_SLOW_QUERIES_ONLY", "GTC_COSMOS_SLOW_QUERY_RU_THRESHOLD",
	"GTC_ALLOWED_MANUAL_TAGS", "GTC_MANUAL_TAGS_CONFIG_PATH", "GTC_TAG_VALIDATORS", "GTC_RECOMPUTE_BATCH_SIZE",
	"GTC_MAX_CONCURRENT_JOBS", "GTC_JOB_RETENTION", "GTC_JOBS_MAX_QUEUED", "GTC_JOB_LEASE_TTL",
	"GTC_FRONTEND_DIR", "GTC_FRONTEND_INDEX", "GTC_FRONTEND_CACHE_SECONDS",
	"GTC_REQUIRE_REFERENCE_VISIT", "GTC_REQUIRE_KEY_PARAGRAPH", "GTC_SELF_SERVE_LIMIT", "GTC_SELF_SERVE_MAX", "GTC_TRUSTED_REFERENCE_DOMAINS",
	"GTC_PAGINATION_MIN_LIMIT", "GTC_PAGINATION_MAX_LIMIT", "GTC_SAMPLING_ALLOCATION", "GTC_PII_DETECTION_ENABLED",
	"GTC_DUPLICATE_DETECTION_ENABLED",
	"GTC_EXPORT_PROCESSOR_ORDER", "GTC_EXPORT_STORAGE_BACKEND", "GTC_EXPORT_LOCAL_DIR", "GTC_EXPORT_BLOB_ACCOUNT_URL",
	"GTC_EXPORT_BLOB_CONTAINER", "GTC_EXPORT_BLOB_CONNECTION_STRING", "GTC_EXPORT_BLOB_ACCOUNT_KEY", "GTC_EXPORT_BLOB_ACCOUNT_NAME",
	"GTC_EXPORT_BLOB_CREATE_CONTAINER", "GTC_EXPORT_PAGE_SIZE", "GTC_EXPORT_WRITE_CONCURRENCY", "GTC_EXPORT_MAX_CONCURRENT",
	"GTC_EXPORT_TIMEOUT", "GTC_EXPORT_INTERNAL_FIELDS", "GTC_EXPORT_RETENTION", "GTC_EXPORT_MIN_FREE_BYTES",
	"GTC_SEARCH_BACKEND", "GTC_AZ_SEARCH_ENDPOINT", "GTC_AZ_SEARCH_INDEX", "GTC_AZ_SEARCH_KEY", "GTC_AZ_SEARCH_API_VERSION",
	"GTC_SEARCH_FIELD_URL", "GTC_SEARCH_FIELD_TITLE", "GTC_SEARCH_FIELD_CHUNK",
	"GTC_AGENT_TOOLS_ENABLED", "GTC_AGENT_MCP_ENABLED", "GTC_AGENT_MAX_ITEMS", "GTC_AGENT_PREVIEW_TTL",
	"GTC_AGENT_PREVIEW_CACHE_SIZE", "GTC_AGENT_PREVIEW_CACHE_ITEMS", "GTC_AGENT_PREVIEWS_PER_USER",
	"GTC_AGENT_WRITES_PER_SECOND", "GTC_AGENT_MAX_CONCURRENT_OPS", "GTC_AGENT_WRITE_RETRIES",
	"GTC_AGENT_TOOL_TIMEOUT", "GTC_AGENT_EXEC_WAIT", "GTC_AGENT_LEASE_TTL", "GTC_AGENT_WRITE_ROLES", "GTC_AGENT_AUDIT_RETENTION_DAYS",
	"GTC_HISTORY_ENABLED", "GTC_HISTORY_RETENTION_DAYS", "GTC_HISTORY_MAX_REVISIONS",
}

// The history settings become the stores' history options; negative limits are refused.
func TestHistorySettings(t *testing.T) {
	cleanEnv(t)
	c, err := Load()
	require.NoError(t, err)
	assert.Equal(t, gtc.HistoryOptions{}, c.History(), "by default every revision is recorded and kept")

	t.Setenv("GTC_HISTORY_ENABLED", "false")
	t.Setenv("GTC_HISTORY_RETENTION_DAYS", "30")
	t.Setenv("GTC_HISTORY_MAX_REVISIONS", "50")
	c, err = Load()
	require.NoError(t, err)
	assert.Equal(t, gtc.HistoryOptions{Disabled: true, MaxRevisions: 50, MaxAge: 30 * 24 * time.Hour}, c.History())

	t.Setenv("GTC_HISTORY_MAX_REVISIONS", "-1")
	_, err = Load()
	require.ErrorContains(t, err, "GTC_HISTORY_MAX_REVISIONS=-1")
}

func TestNamesMatchTheSpec(t *testing.T) {
	assert.Equal(t, specNames, Names())
}

// cleanEnv clears every GTC_ variable for the test and points the data directory at a
// temporary one.
func cleanEnv(t *testing.T) string {
	t.Helper()
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "GTC_") {
			t.Setenv(name, "")
			require.NoError(t, os.Unsetenv(name))
		}
	}
	dir := t.TempDir()
	t.Setenv("GTC_DATA_DIR", dir)
	return dir
}

func TestDefaults(t *testing.T) {
	dir := cleanEnv(t)
	c, err := Load()
	require.NoError(t, err)
	assert.Equal(t, "dev", c.Env)
	assert.Equal(t, 8000, c.Port)
	assert.Equal(t, ":8000", c.ListenAddr())
	assert.Equal(t, "/v1", c.APIPrefix)
	assert.EqualValues(t, 10485760, c.MaxBodyBytes)
	assert.Equal(t, 30*time.Second, c.ShutdownTimeout.D())
	assert.Equal(t, "anonymous", c.DevUserID)
	assert.Equal(t, filepath.Join(dir, "gtc.db"), c.SQLitePath())
	assert.Equal(t, "FULL", c.SqliteSynchronous)
	assert.Equal(t, 10, c.SelfServeLimit)
	assert.False(t, c.EasyAuth())
	d := Default()
	assert.Equal(t, "./data", d.DataDir, "Default ignores the environment")
	assert.Equal(t, c.Port, d.Port)
	assert.Equal(t, c.ShutdownTimeout, d.ShutdownTimeout)
}

func TestValuesAndCustomTypes(t *testing.T) {
	cleanEnv(t)
	t.Setenv("GTC_ADDR", "127.0.0.1:9000")
	t.Setenv("GTC_SHUTDOWN_TIMEOUT", "1.5")
	t.Setenv("GTC_REQUEST_TIMEOUT", "2m")
	t.Setenv("GTC_EZAUTH_ENABLED", "TRUE")
	t.Setenv("GTC_TRUSTED_REFERENCE_DOMAINS", " docs.example.com , ,kb.example.com ")
	t.Setenv("GTC_PORT", "")
	c, err := Load()
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:9000", c.ListenAddr(), "GTC_ADDR with a port binds exactly that")
	assert.Equal(t, 1500*time.Millisecond, c.ShutdownTimeout.D(), "a plain number is seconds")
	assert.Equal(t, 2*time.Minute, c.RequestTimeout.D())
	assert.True(t, c.EasyAuth(), "GTC_EZAUTH_ENABLED forces easyauth")
	assert.Equal(t, CSV{"docs.example.com", "kb.example.com"}, c.TrustedReferenceDomains)
	assert.Equal(t, 8000, c.Port, "an empty value counts as unset")

	t.Setenv("GTC_ADDR", "127.0.0.1")
	t.Setenv("GTC_PORT", "9100")
	c, err = Load()
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:9100", c.ListenAddr())
}

func TestInvalidSettingsAreAllReported(t *testing.T) {
	cleanEnv(t)
	t.Setenv("GTC_REPO_BAKEND", "sqlite")
	t.Setenv("GTC_ENV", "staging")
	t.Setenv("GTC_AUTH_MODE", "oauth")
	t.Setenv("GTC_API_PREFIX", "/v1/")
	t.Setenv("GTC_PAGINATION_MIN_LIMIT", "50")
	t.Setenv("GTC_PAGINATION_MAX_LIMIT", "10")
	t.Setenv("GTC_MAX_BODY_BYTES", "100")
	t.Setenv("GTC_ADDR", "127.0.0.1:9000")
	t.Setenv("GTC_PORT", "8000")
	_, err := Load()
	require.Error(t, err)
	msg := err.Error()
	for _, want := range []string{
		"unknown setting GTC_REPO_BAKEND (did you mean GTC_REPO_BACKEND?)",
		`GTC_ENV="staging": must be one of dev, test, prod`,
		`GTC_AUTH_MODE="oauth": must be one of dev, easyauth`,
		`GTC_API_PREFIX="/v1/"`,
		"GTC_PAGINATION_MIN_LIMIT=50, GTC_PAGINATION_MAX_LIMIT=10",
		"GTC_MAX_BODY_BYTES=100: must be at least 1024",
		`GTC_ADDR="127.0.0.1:9000" and GTC_PORT=8000 name different ports`,
	} {
		assert.Contains(t, msg, want)
	}
}

func TestParseErrorsNameTheVariable(t *testing.T) {
	cleanEnv(t)
	t.Setenv("GTC_PORT", "eighty")
	_, err := Load()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `GTC_PORT="eighty"`)
}

func TestMemoryBackendHintAndProdRules(t *testing.T) {
	cleanEnv(t)
	t.Setenv("GTC_REPO_BACKEND", "memory")
	_, err := Load()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "GTC_REPO_BACKEND=memory is not supported; use sqlite (GTC_SQLITE_PATH=:memory: gives a throw-away database)")

	cleanEnv(t)
	t.Setenv("GTC_ENV", "prod")
	t.Setenv("GTC_SQLITE_PATH", ":memory:")
	_, err = Load()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "GTC_ENV=prod requires Easy Auth")
	assert.Contains(t, err.Error(), "GTC_ENV=prod forbids GTC_SQLITE_PATH=:memory:")
}

func TestIgnoredAndTestNames(t *testing.T) {
	cleanEnv(t)
	t.Setenv("GTC_DEMO_MODE", "true")
	t.Setenv("GTC_TEST_ANYTHING", "1")
	t.Setenv("GTC_BENCH_MIGRATE_N", "1000")
	c, err := Load()
	require.NoError(t, err)
	assert.Equal(t, []string{"GTC_DEMO_MODE"}, c.Ignored)
	assert.Equal(t, []string{"GTC_DEMO_MODE has no effect: demo data is loaded with gtc seed"}, c.Warnings())

	cleanEnv(t)
	t.Setenv("GTC_AUTH_MODE", "dev")
	t.Setenv("GTC_EZAUTH_ENABLED", "true")
	c, err = Load()
	require.NoError(t, err)
	assert.True(t, c.EasyAuth())
	assert.Contains(t, c.Warnings(), "GTC_EZAUTH_ENABLED=true overrides GTC_AUTH_MODE=dev: identity comes from Easy Auth headers")

	cleanEnv(t)
	t.Setenv("GTC_EZAUTH_ALLOWED_EMAIL_DOMAINS", "example.com")
	c, err = Load()
	require.NoError(t, err)
	assert.Contains(t, c.Warnings(), "Easy Auth allow-lists are set but the server runs in dev mode, where they have no effect")
}

func TestDotenvFiles(t *testing.T) {
	dir := cleanEnv(t)
	a := filepath.Join(dir, "a.env")
	b := filepath.Join(dir, "b.env")
	require.NoError(t, os.WriteFile(a, []byte("# comment\nGTC_SERVICE_NAME=from-a\nGTC_DEV_USER_ID='quoted user'\nGTC_PORT=9001\n"), 0o600))
	require.NoError(t, os.WriteFile(b, []byte("export GTC_SERVICE_NAME=\"from-b\"\nGTC_LOG_LEVEL=debug # trailing\n"), 0o600))
	t.Setenv("GTC_ENV_FILE", a+","+b)
	t.Setenv("GTC_PORT", "9002")
	c, err := Load()
	require.NoError(t, err)
	assert.Equal(t, "from-a", c.ServiceName, "the first file to set a name wins, since later files do not override")
	assert.Equal(t, "quoted user", c.DevUserID)
	assert.Equal(t, "debug", c.LogLevel)
	assert.Equal(t, 9002, c.Port, "real environment variables win over files")

	cleanEnv(t)
	t.Setenv("GTC_ENV_FILE", filepath.Join(dir, "missing.env"))
	_, err = Load()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing.env")
}

func TestPrintMasksNothingItDoesNotHave(t *testing.T) {
	cleanEnv(t)
	t.Setenv("GTC_PORT", "8123")
	c, err := Load()
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, c.Print(&b))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	assert.Len(t, lines, len(specNames))
	assert.Contains(t, lines, "GTC_PORT=8123")
	assert.Contains(t, lines, "GTC_API_PREFIX=/v1")
}

func TestDataDirMustBeWritable(t *testing.T) {
	dir := cleanEnv(t)
	file := filepath.Join(dir, "a-file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	t.Setenv("GTC_DATA_DIR", filepath.Join(file, "sub"))
	_, err := Load()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "GTC_DATA_DIR=")
}

func TestExportSettings(t *testing.T) {
	dir := cleanEnv(t)
	c, err := Load()
	require.NoError(t, err)
	assert.Equal(t, "local", c.ExportStorageBackend)
	assert.Equal(t, dir, c.ExportLocalRoot(), "local exports default to the data directory")
	assert.Equal(t, filepath.Join(dir, "tmp"), c.TempDir())
	assert.Equal(t, 200, c.ExportPageSize)
	assert.Equal(t, 8, c.ExportWriteConcurrency)
	assert.Equal(t, 2, c.ExportMaxConcurrent)
	assert.Equal(t, 30*time.Minute, c.ExportTimeout.D())
	assert.Equal(t, "_etag,docType,assignedTo,assignedAt,updatedBy,createdBy,comment,tracePayload", c.ExportInternalFields)

	const cs = "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string // "" = valid
	}{
		{"connection string", map[string]string{"GTC_EXPORT_STORAGE_BACKEND": "blob", "GTC_EXPORT_BLOB_CONTAINER": "gtc-exports", "GTC_EXPORT_BLOB_CONNECTION_STRING": cs}, ""},
		{"managed identity", map[string]string{"GTC_EXPORT_STORAGE_BACKEND": "blob", "GTC_EXPORT_BLOB_CONTAINER": "gtc-exports", "GTC_EXPORT_BLOB_ACCOUNT_URL": "https://acct.blob.core.windows.net"}, ""},
		{"shared key over http", map[string]string{"GTC_EXPORT_STORAGE_BACKEND": "blob", "GTC_EXPORT_BLOB_CONTAINER": "gtc-exports", "GTC_EXPORT_BLOB_ACCOUNT_URL": "http://127.0.0.1:10000/devstoreaccount1", "GTC_EXPORT_BLOB_ACCOUNT_KEY": "a2V5"}, ""},
		{"unknown backend", map[string]string{"GTC_EXPORT_STORAGE_BACKEND": "s3"}, `GTC_EXPORT_STORAGE_BACKEND="s3": must be one of local, blob`},
		{"no container", map[string]string{"GTC_EXPORT_STORAGE_BACKEND": "blob", "GTC_EXPORT_BLOB_CONNECTION_STRING": cs}, "needs GTC_EXPORT_BLOB_CONTAINER"},
		{"bad container", map[string]string{"GTC_EXPORT_STORAGE_BACKEND": "blob", "GTC_EXPORT_BLOB_CONTAINER": "Exports--x", "GTC_EXPORT_BLOB_CONNECTION_STRING": cs}, "GTC_EXPORT_BLOB_CONTAINER=\"Exports--x\""},
		{"no credential", map[string]string{"GTC_EXPORT_STORAGE_BACKEND": "blob", "GTC_EXPORT_BLOB_CONTAINER": "gtc-exports"}, "needs GTC_EXPORT_BLOB_ACCOUNT_URL"},
		{"ambiguous", map[string]string{"GTC_EXPORT_STORAGE_BACKEND": "blob", "GTC_EXPORT_BLOB_CONTAINER": "gtc-exports", "GTC_EXPORT_BLOB_CONNECTION_STRING": cs, "GTC_EXPORT_BLOB_ACCOUNT_URL": "https://a.blob.core.windows.net"}, "cannot be combined"},
		{"token over http", map[string]string{"GTC_EXPORT_STORAGE_BACKEND": "blob", "GTC_EXPORT_BLOB_CONTAINER": "gtc-exports", "GTC_EXPORT_BLOB_ACCOUNT_URL": "http://a.example"}, "only sent over https"},
		{"key without url", map[string]string{"GTC_EXPORT_STORAGE_BACKEND": "blob", "GTC_EXPORT_BLOB_CONTAINER": "gtc-exports", "GTC_EXPORT_BLOB_ACCOUNT_KEY": "a2V5"}, "needs GTC_EXPORT_BLOB_ACCOUNT_URL"},
		{"page size", map[string]string{"GTC_EXPORT_PAGE_SIZE": "1001"}, "GTC_EXPORT_PAGE_SIZE=1001: must be between 1 and 1000"},
		{"write concurrency", map[string]string{"GTC_EXPORT_WRITE_CONCURRENCY": "0"}, "GTC_EXPORT_WRITE_CONCURRENCY=0: must be between 1 and 64"},
		{"max concurrent", map[string]string{"GTC_EXPORT_MAX_CONCURRENT": "33"}, "GTC_EXPORT_MAX_CONCURRENT=33: must be between 1 and 32"},
		{"timeout", map[string]string{"GTC_EXPORT_TIMEOUT": "-1s"}, "GTC_EXPORT_TIMEOUT=-1s: must be a positive duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cleanEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, err := Load()
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}

	cleanEnv(t)
	t.Setenv("GTC_EXPORT_BLOB_CONTAINER", "gtc-exports")
	t.Setenv("GTC_EXPORT_BLOB_CONNECTION_STRING", cs)
	c, err = Load()
	require.NoError(t, err)
	require.Len(t, c.Warnings(), 1)
	assert.Contains(t, c.Warnings()[0], "GTC_EXPORT_STORAGE_BACKEND=local")
	var b strings.Builder
	require.NoError(t, c.Print(&b))
	assert.Contains(t, b.String(), "GTC_EXPORT_BLOB_CONNECTION_STRING=***\n")
	assert.NotContains(t, b.String(), "a2V5")
}

// testKey is valid base64, as an account key must be; the test server accepts any such key.
const testKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

func TestCosmosDefaults(t *testing.T) {
	cleanEnv(t)
	c, err := Load()
	require.NoError(t, err)
	assert.Equal(t, "sqlite", c.RepoBackend)
	assert.Empty(t, c.CosmosEndpoint)
	assert.Empty(t, c.CosmosKey)
	assert.False(t, bool(c.UseCosmosEmulator))
	assert.Equal(t, TLSVerify("true"), c.CosmosConnectionVerify)
	assert.False(t, c.CosmosConnectionVerify.Off())
	assert.Empty(t, c.CosmosConnectionVerify.Path())
	assert.Equal(t, "gt-curator", c.CosmosDBName)
	assert.Equal(t, "ground_truth", c.CosmosContainerGT)
	assert.Equal(t, "assignments", c.CosmosContainerAssignments)
	assert.Equal(t, "tags", c.CosmosContainerTags)
	assert.Equal(t, "tag_definitions", c.CosmosContainerTagDefinitions)
	assert.Equal(t, "meta", c.CosmosContainerMeta)
	assert.Equal(t, "agent-operations", c.CosmosContainerAgentOperations)
	assert.False(t, bool(c.CosmosCreateContainers))
	assert.Equal(t, "auto", c.CosmosRebuildRegistry)
	assert.Equal(t, 0, c.CosmosAutoscaleMaxThroughput)
	assert.Empty(t, c.CosmosPreferredRegions)
	assert.Equal(t, 200, c.CosmosMaxConnectionPoolSize)
	assert.Equal(t, 30*time.Second, c.CosmosRequestTimeout.D())
	assert.Equal(t, 5, c.CosmosRetryTotalAttempts)
	assert.Equal(t, time.Second, c.CosmosRetryFixedInterval.D())
	assert.Equal(t, 1000, c.CosmosPageSize)
	assert.False(t, bool(c.CosmosLogQueryMetrics))
	assert.True(t, bool(c.CosmosLogSlowQueriesOnly))
	assert.Equal(t, 10.0, c.CosmosSlowQueryRUThreshold)
	assert.Empty(t, c.Warnings(), "unset Cosmos settings are not warned about")
	assert.Equal(t, c.CosmosRequestTimeout, Default().CosmosRequestTimeout)
}

func TestCosmosValues(t *testing.T) {
	cleanEnv(t)
	t.Setenv("GTC_REPO_BACKEND", "cosmos")
	t.Setenv("GTC_COSMOS_ENDPOINT", "https://acct.documents.azure.com:443/")
	// The reference backend's files write plain numbers of seconds.
	t.Setenv("GTC_COSMOS_REQUEST_TIMEOUT", "30")
	t.Setenv("GTC_COSMOS_RETRY_FIXED_INTERVAL", "1.5")
	t.Setenv("GTC_COSMOS_PREFERRED_REGIONS", " West Europe , ,North Europe")
	t.Setenv("GTC_COSMOS_CONNECTION_VERIFY", "FALSE")
	t.Setenv("GTC_COSMOS_AUTOSCALE_MAX_THROUGHPUT", "4000")
	t.Setenv("GTC_COSMOS_SLOW_QUERY_RU_THRESHOLD", "2.5")
	t.Setenv("GTC_COSMOS_DB_NAME", "gtc-prod")
	c, err := Load()
	require.NoError(t, err)
	assert.Equal(t, 30*time.Second, c.CosmosRequestTimeout.D(), "a plain number is seconds")
	assert.Equal(t, 1500*time.Millisecond, c.CosmosRetryFixedInterval.D())
	assert.Equal(t, CSV{"West Europe", "North Europe"}, c.CosmosPreferredRegions)
	assert.True(t, c.CosmosConnectionVerify.Off())
	assert.Equal(t, 4000, c.CosmosAutoscaleMaxThroughput)
	assert.Equal(t, 2.5, c.CosmosSlowQueryRUThreshold)
	assert.Equal(t, "gtc-prod", c.CosmosDBName)
	assert.Empty(t, c.Warnings())
}

// writePEM writes a self-signed certificate and returns its path.
func writePEM(t *testing.T, dir string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	path := filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	return path
}

func TestCosmosValidation(t *testing.T) {
	dir := t.TempDir()
	caFile := writePEM(t, dir)
	notPEM := filepath.Join(dir, "not.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate"), 0o600))
	const https = "https://acct.documents.azure.com:443/"
	const local = "http://127.0.0.1:8081/"
	cosmos := func(kv ...string) map[string]string {
		m := map[string]string{"GTC_REPO_BACKEND": "cosmos"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string // "" = valid
	}{
		{"entra id over https", cosmos("GTC_COSMOS_ENDPOINT", https), ""},
		{"key over https", cosmos("GTC_COSMOS_ENDPOINT", https, "GTC_COSMOS_KEY", testKey), ""},
		{"key over http", cosmos("GTC_COSMOS_ENDPOINT", local, "GTC_COSMOS_KEY", testKey), ""},
		{"emulator over http", cosmos("GTC_COSMOS_ENDPOINT", local, "GTC_USE_COSMOS_EMULATOR", "true"), ""},
		{"verification off", cosmos("GTC_COSMOS_ENDPOINT", https, "GTC_COSMOS_CONNECTION_VERIFY", "false"), ""},
		{"PEM bundle", cosmos("GTC_COSMOS_ENDPOINT", https, "GTC_COSMOS_CONNECTION_VERIFY", caFile), ""},
		{"every bound", cosmos("GTC_COSMOS_ENDPOINT", https, "GTC_COSMOS_PAGE_SIZE", "1", "GTC_COSMOS_MAX_CONNECTION_POOL_SIZE", "1",
			"GTC_COSMOS_RETRY_TOTAL_ATTEMPTS", "1", "GTC_COSMOS_AUTOSCALE_MAX_THROUGHPUT", "1000", "GTC_COSMOS_SLOW_QUERY_RU_THRESHOLD", "0",
			"GTC_COSMOS_REBUILD_REGISTRY", "never"), ""},
		{"no endpoint", cosmos(), "GTC_REPO_BACKEND=cosmos needs GTC_COSMOS_ENDPOINT"},
		{"endpoint without scheme", cosmos("GTC_COSMOS_ENDPOINT", "acct.documents.azure.com"), `GTC_COSMOS_ENDPOINT="acct.documents.azure.com": must be an absolute http(s) URL`},
		{"endpoint of another scheme", cosmos("GTC_COSMOS_ENDPOINT", "ftp://acct.example"), `GTC_COSMOS_ENDPOINT="ftp://acct.example": must be an absolute http(s) URL`},
		{"token over http", cosmos("GTC_COSMOS_ENDPOINT", local), `GTC_COSMOS_ENDPOINT="http://127.0.0.1:8081/" uses http://: Entra ID tokens are only sent over https`},
		{"key not base64", cosmos("GTC_COSMOS_ENDPOINT", https, "GTC_COSMOS_KEY", "not base64!"), "GTC_COSMOS_KEY=***: must be valid base64 (11 characters given"},
		{"missing CA bundle", cosmos("GTC_COSMOS_ENDPOINT", https, "GTC_COSMOS_CONNECTION_VERIFY", filepath.Join(dir, "missing.pem")), "GTC_COSMOS_CONNECTION_VERIFY=\"" + filepath.Join(dir, "missing.pem") + "\": must be true, false or a readable PEM bundle"},
		{"CA bundle without a certificate", cosmos("GTC_COSMOS_ENDPOINT", https, "GTC_COSMOS_CONNECTION_VERIFY", notPEM), "holds no PEM certificate"},
		{"rebuild mode", cosmos("GTC_COSMOS_ENDPOINT", https, "GTC_COSMOS_REBUILD_REGISTRY", "sometimes"), `GTC_COSMOS_REBUILD_REGISTRY="sometimes": must be one of auto, always, never`},
		{"throughput too low", cosmos("GTC_COSMOS_ENDPOINT", https, "GTC_COSMOS_AUTOSCALE_MAX_THROUGHPUT", "400"), "GTC_COSMOS_AUTOSCALE_MAX_THROUGHPUT=400: must be 0 (no throughput set) or a multiple of 1000 RU/s, at least 1000"},
		{"throughput not a multiple", cosmos("GTC_COSMOS_ENDPOINT", https, "GTC_COSMOS_AUTOSCALE_MAX_THROUGHPUT", "1500"), "GTC_COSMOS_AUTOSCALE_MAX_THROUGHPUT=1500"},
		{"pool", cosmos("GTC_COSMOS_ENDPOINT", https, "GTC_COSMOS_MAX_CONNECTION_POOL_SIZE", "0"), "GTC_COSMOS_MAX_CONNECTION_POOL_SIZE=0: must be at least 1"},
		{"attempts", cosmos("GTC_COSMOS_ENDPOINT", https, "GTC_COSMOS_RETRY_TOTAL_ATTEMPTS", "0"), "GTC_COSMOS_RETRY_TOTAL_ATTEMPTS=0: must be at least 1"},
		{"page size zero", cosmos("GTC_COSMOS_ENDPOINT", https, "GTC_COSMOS_PAGE_SIZE", "0"), "GTC_COSMOS_PAGE_SIZE=0: must be between 1 and 1000"},
		{"page size too large", cosmos("GTC_COSMOS_ENDPOINT", https, "GTC_COSMOS_PAGE_SIZE", "1001"), "GTC_COSMOS_PAGE_SIZE=1001: must be between 1 and 1000"},
		{"request timeout", cosmos("GTC_COSMOS_ENDPOINT", https, "GTC_COSMOS_REQUEST_TIMEOUT", "0"), "GTC_COSMOS_REQUEST_TIMEOUT=0s: must be a positive duration"},
		{"retry interval", cosmos("GTC_COSMOS_ENDPOINT", https, "GTC_COSMOS_RETRY_FIXED_INTERVAL", "-1s"), "GTC_COSMOS_RETRY_FIXED_INTERVAL=-1s: must be a positive duration"},
		{"slow threshold", cosmos("GTC_COSMOS_ENDPOINT", https, "GTC_COSMOS_SLOW_QUERY_RU_THRESHOLD", "-1"), "GTC_COSMOS_SLOW_QUERY_RU_THRESHOLD=-1: must be a number of request units, at least 0"},
		{"slow threshold not a number", cosmos("GTC_COSMOS_ENDPOINT", https, "GTC_COSMOS_SLOW_QUERY_RU_THRESHOLD", "ten"), `GTC_COSMOS_SLOW_QUERY_RU_THRESHOLD="ten"`},
		{"one container twice", cosmos("GTC_COSMOS_ENDPOINT", https, "GTC_COSMOS_CONTAINER_TAGS", "assignments"), `GTC_COSMOS_CONTAINER_ASSIGNMENTS and GTC_COSMOS_CONTAINER_TAGS both name the container "assignments"`},
		{"bad resource name", cosmos("GTC_COSMOS_ENDPOINT", https, "GTC_COSMOS_DB_NAME", "a/b"), `GTC_COSMOS_DB_NAME="a/b": a Cosmos DB resource name has at most 255 characters`},
		{"unknown backend", map[string]string{"GTC_REPO_BACKEND": "mongo"}, `GTC_REPO_BACKEND="mongo": must be one of sqlite, cosmos`},
		{"prod without verification", cosmos("GTC_COSMOS_ENDPOINT", https, "GTC_ENV", "prod", "GTC_AUTH_MODE", "easyauth", "GTC_COSMOS_CONNECTION_VERIFY", "0"), "GTC_ENV=prod forbids GTC_COSMOS_CONNECTION_VERIFY=false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cleanEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, err := Load()
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}

	t.Run("every problem at once, the key never shown", func(t *testing.T) {
		cleanEnv(t)
		t.Setenv("GTC_REPO_BACKEND", "cosmos")
		t.Setenv("GTC_COSMOS_ENDPOINT", local)
		t.Setenv("GTC_COSMOS_KEY", "s3cret-not-base64")
		t.Setenv("GTC_COSMOS_PAGE_SIZE", "5000")
		t.Setenv("GTC_COSMOS_REBUILD_REGISTRY", "daily")
		_, err := Load()
		require.Error(t, err)
		var probs Problems
		require.ErrorAs(t, err, &probs)
		assert.Len(t, probs, 3, "%v", probs)
		assert.NotContains(t, err.Error(), "s3cret")
	})
}

func TestCosmosSettingsWhileSQLite(t *testing.T) {
	cleanEnv(t)
	t.Setenv("GTC_COSMOS_ENDPOINT", "http://127.0.0.1:8081/")
	t.Setenv("GTC_USE_COSMOS_EMULATOR", "true")
	t.Setenv("GTC_COSMOS_PAGE_SIZE", "5000") // not checked: it has no effect
	t.Setenv("GTC_COSMOS_TEST_MODE", "true") // a reference name: ignored, warned about on its own
	c, err := Load()
	require.NoError(t, err, "Cosmos settings have no effect with sqlite, so they are not validated")
	assert.Equal(t, []string{"GTC_COSMOS_TEST_MODE"}, c.Ignored)
	assert.Equal(t, []string{
		"GTC_COSMOS_TEST_MODE has no effect: startup no longer needs a test switch",
		"GTC_COSMOS_ENDPOINT, GTC_USE_COSMOS_EMULATOR, GTC_COSMOS_PAGE_SIZE set, but GTC_REPO_BACKEND=sqlite: items are stored in " + c.SQLitePath() + ", not in Cosmos DB",
	}, c.Warnings())
}

func TestCosmosKeyIsMasked(t *testing.T) {
	cleanEnv(t)
	t.Setenv("GTC_REPO_BACKEND", "cosmos")
	t.Setenv("GTC_COSMOS_ENDPOINT", "http://127.0.0.1:8081/")
	t.Setenv("GTC_COSMOS_KEY", testKey)
	c, err := Load()
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, c.Print(&b))
	assert.Contains(t, b.String(), "GTC_COSMOS_KEY=***\n")
	assert.Contains(t, b.String(), "GTC_COSMOS_ENDPOINT=http://127.0.0.1:8081/\n")
	assert.Contains(t, b.String(), "GTC_COSMOS_CONNECTION_VERIFY=true\n")
	assert.NotContains(t, b.String(), testKey[:20])
}

func TestTLSVerifyDecode(t *testing.T) {
	for in, want := range map[string]TLSVerify{"true": "true", "TRUE": "true", "1": "true", "t": "true", "False": "false", "0": "false", " f ": "false", "/etc/ssl/ca.pem": "/etc/ssl/ca.pem"} {
		var v TLSVerify
		require.NoError(t, v.Decode(in))
		assert.Equal(t, want, v, in)
	}
	assert.Equal(t, "/etc/ssl/ca.pem", TLSVerify("/etc/ssl/ca.pem").Path())
	assert.Empty(t, TLSVerify("false").Path())
}

func TestAgentLimits(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		cleanEnv(t)
		c, err := Load()
		require.NoError(t, err)
		assert.Equal(t, 10000, c.AgentMaxItems)
		assert.Equal(t, 15*time.Minute, c.AgentPreviewTTL.D())
		assert.Equal(t, 50, c.AgentWritesPerSecond)
		assert.Equal(t, 60*time.Second, c.AgentExecWait.D())
		assert.Equal(t, 30*time.Second, c.AgentLeaseTTL.D())
		assert.True(t, bool(c.AgentToolsEnabled) && bool(c.AgentMcpEnabled))
		assert.Empty(t, c.AgentWriteRoles)
	})
	for _, tc := range []struct{ name, val, want string }{
		{"GTC_AGENT_MAX_ITEMS", "0", "GTC_AGENT_MAX_ITEMS=0: must be at least 1"},
		{"GTC_AGENT_WRITES_PER_SECOND", "-5", "GTC_AGENT_WRITES_PER_SECOND=-5: must be at least 1"},
		{"GTC_AGENT_PREVIEW_TTL", "30s", "GTC_AGENT_PREVIEW_TTL=30s: must be at least 1m"},
		{"GTC_AGENT_LEASE_TTL", "500ms", "GTC_AGENT_LEASE_TTL=500ms: must be at least 1s"},
		{"GTC_AGENT_TOOL_TIMEOUT", "0s", "GTC_AGENT_TOOL_TIMEOUT=0s: must be a positive duration"},
		{"GTC_AGENT_AUDIT_RETENTION_DAYS", "-1", "GTC_AGENT_AUDIT_RETENTION_DAYS=-1: must be 0 (keep forever) or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cleanEnv(t)
			t.Setenv(tc.name, tc.val)
			_, err := Load()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestRoleSettings(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		cleanEnv(t)
		c, err := Load()
		require.NoError(t, err)
		assert.Equal(t, CSV{"admin"}, c.DevUserRoles)
		assert.Equal(t, "curator", c.AuthDefaultRole)
		assert.False(t, bool(c.EzauthAllowNameOnly))
		assert.Equal(t, map[string]gtc.Role{"admin": gtc.RoleAdmin, "team-lead": gtc.RoleAdmin,
			"curator": gtc.RoleCurator, "viewer": gtc.RoleViewer}, c.RoleClaims())
		assert.Empty(t, c.Warnings())
	})
	t.Run("app roles", func(t *testing.T) {
		cleanEnv(t)
		t.Setenv("GTC_AUTH_ADMIN_ROLES", "GTC.Admin")
		t.Setenv("GTC_AUTH_CURATOR_ROLES", "GTC.Curator, GTC.Editor")
		t.Setenv("GTC_AUTH_VIEWER_ROLES", "GTC.Viewer")
		t.Setenv("GTC_AUTH_DEFAULT_ROLE", "None")
		c, err := Load()
		require.NoError(t, err)
		assert.Equal(t, map[string]gtc.Role{"gtc.admin": gtc.RoleAdmin, "gtc.curator": gtc.RoleCurator,
			"gtc.editor": gtc.RoleCurator, "gtc.viewer": gtc.RoleViewer}, c.RoleClaims())
	})
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"GTC_AUTH_DEFAULT_ROLE": "owner"}, `GTC_AUTH_DEFAULT_ROLE="owner": must be one of viewer, curator, admin, none`},
		{map[string]string{"GTC_AUTH_CURATOR_ROLES": "lead", "GTC_AUTH_ADMIN_ROLES": "Lead"},
			`GTC_AUTH_ADMIN_ROLES and GTC_AUTH_CURATOR_ROLES both name the role claim "lead": each claim value grants one role`},
		{map[string]string{"GTC_EZAUTH_ALLOWED_EMAIL_DOMAINS": "example.com,bücher.example"},
			`GTC_EZAUTH_ALLOWED_EMAIL_DOMAINS="bücher.example": write an internationalized domain in its ASCII (punycode, xn--) form`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			cleanEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, err := Load()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	t.Run("GTC_AGENT_WRITE_ROLES is explained at startup", func(t *testing.T) {
		cleanEnv(t)
		t.Setenv("GTC_AGENT_WRITE_ROLES", "tagger")
		c, err := Load()
		require.NoError(t, err)
		require.Len(t, c.Warnings(), 1)
		assert.Contains(t, c.Warnings()[0], "GTC_AGENT_WRITE_ROLES=tagger: agent tag executions need the curator role")
	})
}

func TestJobsMaxQueued(t *testing.T) {
	cleanEnv(t)
	c, err := Load()
	require.NoError(t, err)
	assert.Equal(t, 16, c.JobsMaxQueued)
	var b strings.Builder
	require.NoError(t, c.Print(&b))
	assert.Contains(t, b.String(), "GTC_JOBS_MAX_QUEUED=16\n")

	t.Setenv("GTC_JOBS_MAX_QUEUED", "0")
	c, err = Load()
	require.NoError(t, err)
	assert.Equal(t, 0, c.JobsMaxQueued, "0: only jobs that get a slot at once are accepted")

	t.Setenv("GTC_JOBS_MAX_QUEUED", "-1")
	_, err = Load()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "GTC_JOBS_MAX_QUEUED=-1: must be 0 (no job waits) or more")
}

func TestExportRetentionAndMinFree(t *testing.T) {
	cleanEnv(t)
	c, err := Load()
	require.NoError(t, err)
	assert.Equal(t, time.Duration(0), c.ExportRetention.D(), "snapshots are kept unless a retention is set")
	assert.EqualValues(t, 1<<30, c.ExportMinFreeBytes)
	var b strings.Builder
	require.NoError(t, c.Print(&b))
	assert.Contains(t, b.String(), "GTC_EXPORT_RETENTION=0\n")
	assert.Contains(t, b.String(), "GTC_EXPORT_MIN_FREE_BYTES=1073741824\n")

	for in, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "36h": 36 * time.Hour, " 2d ": 48 * time.Hour, "0": 0} {
		t.Setenv("GTC_EXPORT_RETENTION", in)
		c, err = Load()
		require.NoError(t, err, in)
		assert.Equal(t, want, c.ExportRetention.D(), in)
	}
	t.Setenv("GTC_EXPORT_RETENTION", "30d")
	c, err = Load()
	require.NoError(t, err)
	b.Reset()
	require.NoError(t, c.Print(&b))
	assert.Contains(t, b.String(), "GTC_EXPORT_RETENTION=30d\n")

	for in, want := range map[string]uint64{"256MiB": 256 << 20, "1GiB": 1 << 30, "500MB": 500_000_000, "4096": 4096, "0": 0} {
		t.Setenv("GTC_EXPORT_MIN_FREE_BYTES", in)
		c, err = Load()
		require.NoError(t, err, in)
		assert.EqualValues(t, want, c.ExportMinFreeBytes, in)
	}

	for _, tc := range []struct{ name, val, want string }{
		{"GTC_EXPORT_RETENTION", "30", `GTC_EXPORT_RETENTION="30": expected a duration such as 30d or 720h, or 0 for no limit`},
		{"GTC_EXPORT_RETENTION", "-1d", `GTC_EXPORT_RETENTION="-1d": expected a duration such as 30d or 720h`},
		{"GTC_EXPORT_RETENTION", "10m", "GTC_EXPORT_RETENTION=10m0s: must be 0 (keep snapshots) or at least 1h"},
		{"GTC_EXPORT_MIN_FREE_BYTES", "lots", `GTC_EXPORT_MIN_FREE_BYTES="lots": expected a size such as 1GiB, 256MiB or a number of bytes`},
		{"GTC_EXPORT_MIN_FREE_BYTES", "-5", `GTC_EXPORT_MIN_FREE_BYTES="-5": expected a size`},
	} {
		cleanEnv(t)
		t.Setenv(tc.name, tc.val)
		_, err := Load()
		require.Error(t, err, tc.val)
		assert.Contains(t, err.Error(), tc.want)
	}
}
