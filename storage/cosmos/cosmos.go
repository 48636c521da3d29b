// Package cosmos is the Azure Cosmos DB store: items,
// curation instructions, the tag store, tag definitions and assignment records in the
// reference layout, plus a registry of dataset partitions in a meta container and the agent
// audit log in a container of its own. It implements
// gtc.Store with azcosmos v1.5.0 and turns every Azure error into a gtc store error at this
// boundary, so nothing above storage/ sees an Azure type.
//
// Queries keep to what the SDK's gateway can serve: plain filters and projections
// across partitions, ORDER BY and TOP within one partition. Ordered pages with exact totals
// come from a k-way merge of per-partition streams (strategy S1, see Query in list.go).
package cosmos

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/internal/aztrace"
)

// Backend is what Store.Backend reports.
const Backend = "cosmos"

// EmulatorKey is the published key of the Cosmos DB emulators (not a secret); test servers
// accept any base64 key.
const EmulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

// Defaults of Options, and the store's fixed limits.
const (
	DefaultDatabase        = "gt-curator"
	DefaultMaxConns        = 200
	DefaultRequestTimeout  = 30 * time.Second
	DefaultRetryAttempts   = 5
	DefaultRetryDelay      = time.Second
	DefaultMaxRetryDelay   = 30 * time.Second
	DefaultPageSize        = 1000
	DefaultSlowQueryRU     = 10
	StartupTimeout         = 30 * time.Second
	conditionalAttempts    = 5
	tagStoreAttempts       = 16
	partitionQueryParallel = 8
	hydrateParallel        = 16
)

// Containers names the store's containers.
type Containers struct {
	GroundTruth     string
	Assignments     string
	Tags            string
	TagDefinitions  string
	Meta            string
	AgentOperations string
}

// DefaultContainers are the default container names.
func DefaultContainers() Containers {
	return Containers{
		GroundTruth:     "ground_truth",
		Assignments:     "assignments",
		Tags:            "tags",
		TagDefinitions:  "tag_definitions",
		Meta:            "meta",
		AgentOperations: "agent-operations",
	}
}

func (c Containers) withDefaults() Containers {
	d := DefaultContainers()
	set := func(v *string, def string) {
		if *v == "" {
			*v = def
		}
	}
	set(&c.GroundTruth, d.GroundTruth)
	set(&c.Assignments, d.Assignments)
	set(&c.Tags, d.Tags)
	set(&c.TagDefinitions, d.TagDefinitions)
	set(&c.Meta, d.Meta)
	set(&c.AgentOperations, d.AgentOperations)
	return c
}

// Registry rebuild modes (GTC_COSMOS_REBUILD_REGISTRY).
const (
	RebuildAuto   = "auto"
	RebuildAlways = "always"
	RebuildNever  = "never"
)

// Options configures Open.
type Options struct {
	// Endpoint is the account endpoint, e.g. https://acct.documents.azure.com:443/.
	Endpoint string
	// Key is the base64 account key. Empty: Credential (Entra ID) is used.
	Key string
	// Credential is the process's shared DefaultAzureCredential. Bearer tokens need https.
	Credential azcore.TokenCredential
	// Database and Containers name the data (defaults: DefaultDatabase, DefaultContainers).
	Database   string
	Containers Containers
	// CreateContainers creates the database and missing containers at startup.
	CreateContainers bool
	// AutoscaleMaxThroughput > 0 gives containers created at startup autoscale throughput.
	AutoscaleMaxThroughput int32
	// PreferredRegions is the region preference order.
	PreferredRegions []string
	// HTTPClient replaces the transport; nil builds one from MaxConnsPerHost and VerifyTLS.
	HTTPClient *http.Client
	// MaxConnsPerHost bounds connections per host (default 200).
	MaxConnsPerHost int
	// VerifyTLS is "true" (default), "false" (self-signed emulator) or a PEM bundle path.
	VerifyTLS string
	// RequestTimeout bounds one attempt (default 30 s).
	RequestTimeout time.Duration
	// RetryAttempts is the number of attempts per request on 408/429/449/503 (default 5);
	// RetryDelay the base delay (default 1 s); MaxRetryDelay the cap (default 30 s).
	RetryAttempts int
	RetryDelay    time.Duration
	MaxRetryDelay time.Duration
	// PageSize is the page size hint of scans and counts (default 1000).
	PageSize int
	// RebuildRegistry is auto (default), always or never (GTC_COSMOS_REBUILD_REGISTRY).
	RebuildRegistry string
	// LogQueryMetrics logs request charges of queries; SlowQueriesOnly restricts that to
	// queries at or above SlowQueryRU.
	LogQueryMetrics bool
	SlowQueriesOnly bool
	SlowQueryRU     float64
	// History configures the item revisions: whether they are recorded, and how many and how
	// old ones are kept (the zero value records and keeps them all). Retention runs inside
	// the item writes: each write's batch deletes at most 16 of the item's revisions that the
	// settings no longer keep, after one query for the item's oldest revisions.
	History gtc.HistoryOptions
	// Clock stamps registry and marker documents (default the system clock).
	Clock gtc.Clock
	// Random feeds write ids (default crypto/rand).
	Random io.Reader
	// Logger receives startup progress and problems (default: discarded).
	Logger *slog.Logger
	// Version is written into the migration marker by a new deployment ("gtc <version>").
	Version string
	// OnRetry, when set, is called before every retry of an HTTP request to Cosmos DB (the
	// SDK's and the store's own), with the reason: the status code of the try that is
	// retried ("429", "503") or "transport" when it got no answer. cmd/gtc counts them as
	// gtc_store_retries_total{backend="cosmos"}. It must be safe for concurrent use.
	OnRetry func(reason string)
}

// Store is the Cosmos DB implementation of gtc.Store.
type Store struct {
	opts   Options
	log    *slog.Logger
	clock  gtc.Clock
	client *azcosmos.Client
	db     *azcosmos.DatabaseClient

	gt, assignments, tags, definitions, meta *azcosmos.ContainerClient
	agentOps                                 *azcosmos.ContainerClient

	items    *itemStore
	curation *curationStore
	tagStore *tagStore
	defs     *tagDefinitionStore
	registry *registry

	randMu sync.Mutex
	random io.Reader

	closed    atomic.Bool
	closeOnce sync.Once
	stopBG    context.CancelFunc
	bgDone    chan struct{}
}

var _ gtc.Store = (*Store)(nil)

// Open connects, checks (or creates) the containers, reads the migration marker
// and rebuilds the dataset registry when RebuildRegistry asks for it.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.Endpoint == "" {
		return nil, fmt.Errorf("cosmos: open: %w: an endpoint is required", gtc.ErrInvalidArgument)
	}
	u, err := url.Parse(opts.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("cosmos: open: %w: endpoint %q is not an http(s) URL", gtc.ErrInvalidArgument, opts.Endpoint)
	}
	if opts.Database == "" {
		opts.Database = DefaultDatabase
	}
	opts.Containers = opts.Containers.withDefaults()
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.RetryAttempts <= 0 {
		opts.RetryAttempts = DefaultRetryAttempts
	}
	if opts.RetryDelay <= 0 {
		opts.RetryDelay = DefaultRetryDelay
	}
	if opts.MaxRetryDelay <= 0 {
		opts.MaxRetryDelay = DefaultMaxRetryDelay
	}
	if opts.PageSize <= 0 || opts.PageSize > 1000 {
		opts.PageSize = DefaultPageSize
	}
	switch opts.RebuildRegistry {
	case "":
		opts.RebuildRegistry = RebuildAuto
	case RebuildAuto, RebuildAlways, RebuildNever:
	default:
		return nil, fmt.Errorf("cosmos: open: %w: registry rebuild mode %q is not auto, always or never", gtc.ErrInvalidArgument, opts.RebuildRegistry)
	}
	if opts.SlowQueryRU <= 0 {
		opts.SlowQueryRU = DefaultSlowQueryRU
	}
	if opts.Clock == nil {
		opts.Clock = gtc.SystemClock{}
	}
	if opts.Random == nil {
		opts.Random = rand.Reader
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	httpClient := opts.HTTPClient
	if httpClient == nil {
		httpClient, err = newHTTPClient(opts.MaxConnsPerHost, opts.VerifyTLS, log)
		if err != nil {
			return nil, err
		}
	}
	copts := &azcosmos.ClientOptions{
		ClientOptions: azcore.ClientOptions{
			Transport: httpClient,
			Retry: policy.RetryOptions{
				MaxRetries:    int32(opts.RetryAttempts - 1),
				RetryDelay:    opts.RetryDelay,
				MaxRetryDelay: opts.MaxRetryDelay,
				TryTimeout:    opts.RequestTimeout,
				StatusCodes:   retryStatusCodes,
			},
			// aztrace comes after unavailableRetry so that each of its tries is a span (and a
			// retry counted) too; every try carries the caller's W3C trace headers.
			PerRetryPolicies: []policy.Policy{
				unavailableRetry{attempts: opts.RetryAttempts, delay: opts.RetryDelay, maxDelay: opts.MaxRetryDelay},
				aztrace.New("cosmos", opts.OnRetry),
			},
		},
		EnableContentResponseOnWrite: false,
		PreferredRegions:             opts.PreferredRegions,
	}
	var client *azcosmos.Client
	switch {
	case opts.Key != "":
		if _, err := base64.StdEncoding.DecodeString(opts.Key); err != nil {
			return nil, fmt.Errorf("cosmos: open: %w: the account key is not base64", gtc.ErrInvalidArgument)
		}
		cred, err := azcosmos.NewKeyCredential(opts.Key)
		if err != nil {
			return nil, fmt.Errorf("cosmos: open: %w: the account key is not usable: %w", gtc.ErrInvalidArgument, err)
		}
		client, err = azcosmos.NewClientWithKey(opts.Endpoint, cred, copts)
		if err != nil {
			return nil, fmt.Errorf("cosmos: open: %w: %w", gtc.ErrUnavailable, err)
		}
	case opts.Credential != nil:
		if u.Scheme != "https" {
			return nil, fmt.Errorf("cosmos: open: %w: endpoint %s is plain http, which needs key authentication (a bearer token is never sent in clear)", gtc.ErrInvalidArgument, opts.Endpoint)
		}
		client, err = azcosmos.NewClient(opts.Endpoint, opts.Credential, copts)
		if err != nil {
			return nil, fmt.Errorf("cosmos: open: %w: %w", gtc.ErrUnavailable, err)
		}
	default:
		return nil, fmt.Errorf("cosmos: open: %w: neither a key nor a credential", gtc.ErrInvalidArgument)
	}
	s := &Store{opts: opts, log: log, clock: opts.Clock, client: client, random: opts.Random, bgDone: make(chan struct{})}
	if s.db, err = client.NewDatabase(opts.Database); err != nil {
		return nil, fmt.Errorf("cosmos: open: %w: %w", gtc.ErrInvalidArgument, err)
	}
	c := opts.Containers
	for _, x := range []struct {
		dst  **azcosmos.ContainerClient
		name string
	}{{&s.gt, c.GroundTruth}, {&s.assignments, c.Assignments}, {&s.tags, c.Tags}, {&s.definitions, c.TagDefinitions}, {&s.meta, c.Meta},
		{&s.agentOps, c.AgentOperations}} {
		if *x.dst, err = s.db.NewContainer(x.name); err != nil {
			return nil, fmt.Errorf("cosmos: open: %w: %w", gtc.ErrInvalidArgument, err)
		}
	}
	s.items = &itemStore{s: s}
	s.curation = &curationStore{s: s}
	s.tagStore = &tagStore{s: s}
	s.defs = &tagDefinitionStore{s: s}
	s.registry = newRegistry(s)

	setupCtx, cancel := context.WithTimeout(ctx, StartupTimeout)
	err = s.setup(setupCtx)
	cancel()
	if err != nil {
		client.Close()
		return nil, err
	}
	migrated, err := s.startupRegistry(ctx)
	if err != nil {
		client.Close()
		return nil, err
	}
	if !migrated {
		bg, stop := context.WithCancel(context.Background())
		s.stopBG = stop
		go s.background(bg)
	}
	return s, nil
}

// retryStatusCodes are retried by the azcore policy, which honours x-ms-retry-after-ms. 503
// and 408 are not among them: azcosmos's own policy, which runs inside the azcore one, turns
// them into errors that are never retried, so unavailableRetry (below both) handles them.
var retryStatusCodes = []int{http.StatusTooManyRequests, 449}

// newHTTPClient builds the store's transport (connection pool, TLS verification).
func newHTTPClient(maxConns int, verify string, log *slog.Logger) (*http.Client, error) {
	if maxConns <= 0 {
		maxConns = DefaultMaxConns
	}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          maxConns,
		MaxConnsPerHost:       maxConns,
		MaxIdleConnsPerHost:   maxConns,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
	}
	switch strings.ToLower(verify) {
	case "", "true":
	case "false":
		log.Warn("cosmos: TLS certificate verification is off (GTC_COSMOS_CONNECTION_VERIFY=false); use this only with an emulator")
		tr.TLSClientConfig.InsecureSkipVerify = true //nolint:gosec // asked for explicitly, for emulators
	default:
		pem, err := os.ReadFile(verify)
		if err != nil {
			return nil, fmt.Errorf("cosmos: open: %w: CA bundle %s: %w", gtc.ErrInvalidArgument, verify, err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("cosmos: open: %w: CA bundle %s holds no PEM certificate", gtc.ErrInvalidArgument, verify)
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	return &http.Client{Transport: tr}, nil
}

// Items returns the item store.
func (s *Store) Items() gtc.ItemStore { return s.items }

// Curation returns the curation-instructions store.
func (s *Store) Curation() gtc.CurationStore { return s.curation }

// TagStore returns the tag store.
func (s *Store) TagStore() gtc.TagStore { return s.tagStore }

// TagDefinitions returns the tag-definition store.
func (s *Store) TagDefinitions() gtc.TagDefinitionStore { return s.defs }

// Backend returns "cosmos".
func (s *Store) Backend() string { return Backend }

// Database names the database in use.
func (s *Store) Database() string { return s.opts.Database }

// Containers names the containers in use.
func (s *Store) Containers() Containers { return s.opts.Containers }

// Ping reads the database properties.
func (s *Store) Ping(ctx context.Context) error {
	if s.closed.Load() {
		return errClosed("ping")
	}
	if _, err := s.db.Read(ctx, nil); err != nil {
		return wrapErr("ping", err)
	}
	return nil
}

// Close stops the background task and releases the client. Safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		if s.stopBG != nil {
			s.stopBG()
			<-s.bgDone
		}
		s.client.Close()
	})
	return nil
}

// DropDatabase deletes the whole database (tests). A missing database is not an error.
func (s *Store) DropDatabase(ctx context.Context) error {
	_, err := s.db.Delete(ctx, nil)
	if err != nil && statusOf(err) != http.StatusNotFound {
		return wrapErr("drop database", err)
	}
	return nil
}

// newWID returns a 16-hex-digit write id.
func (s *Store) newWID() string {
	var b [8]byte
	s.randMu.Lock()
	_, err := io.ReadFull(s.random, b[:])
	s.randMu.Unlock()
	if err != nil {
		_, _ = rand.Read(b[:])
	}
	return hex.EncodeToString(b[:])
}

// afterDeadlineGrace is how long a follow-up call of a write (the read that resolves an
// ambiguous outcome, an assignment record) may still run once the caller's deadline has
// passed.
const afterDeadlineGrace = time.Second

// followUpContext is the context of a call that must not be cut short by the caller going
// away or by its deadline (a write it follows may have been cut by them), but that must not
// hold the caller's answer a whole Cosmos try (RequestTimeout, 30 s by default) past its
// deadline either: it ends at that deadline, but runs at least afterDeadlineGrace. Without
// a deadline (maintenance commands) only cancellation is dropped, as before.
func followUpContext(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithoutCancel(ctx), func() {}
	}
	return context.WithTimeout(context.WithoutCancel(ctx), max(time.Until(dl), afterDeadlineGrace))
}

func errClosed(op string) error {
	return fmt.Errorf("cosmos: %s: %w: store is closed", op, gtc.ErrUnavailable)
}

// statusOf is the HTTP status of an Azure response error, or of the failed operation of a
// transactional batch, or 0.
func statusOf(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	var be *batchError
	if errors.As(err, &be) {
		return be.status
	}
	return 0
}

// wrapErr turns an SDK, HTTP or context error into one of the store's sentinel errors,
// keeping the cause for logs. Errors that already carry a sentinel pass through.
func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if gtc.IsStoreError(err) {
		return err
	}
	switch statusOf(err) {
	case http.StatusNotFound:
		return fmt.Errorf("cosmos: %s: %w: %w", op, gtc.ErrNotFound, err)
	case http.StatusConflict:
		return fmt.Errorf("cosmos: %s: %w: %w", op, gtc.ErrConflict, err)
	case http.StatusPreconditionFailed:
		return fmt.Errorf("cosmos: %s: %w: %w", op, gtc.ErrPreconditionFailed, err)
	case http.StatusRequestEntityTooLarge:
		return fmt.Errorf("cosmos: %s: %w: %w", op, gtc.ErrTooLarge, err)
	}
	// 400 (a request the store should never have built), 401/403 (credentials, roles),
	// throttling that outlived the retries, 5xx, timeouts, resets: nothing the caller can
	// fix by changing its request.
	return fmt.Errorf("cosmos: %s: %w: %w", op, gtc.ErrUnavailable, err)
}

// digest is the SHA-256 of s in hex: an ASCII stand-in of fixed length for a value of any
// characters and length, where an id or a partition key (limited, and sent in an HTTP
// header) cannot hold s itself.
func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// itemKey is the hierarchical partition key of an item or curation document.
func itemKey(datasetName, bucket string) azcosmos.PartitionKey {
	return azcosmos.NewPartitionKeyString(datasetName).AppendString(bucket)
}

// unavailableRetry retries 503 (service unavailable) and 408 (request timeout) answers
// itself, honouring x-ms-retry-after-ms: azcosmos retries them only when it can fail over to
// another region, so on a single-region account they would surface at once. A write that
// may have landed before such an answer is resolved by its write id (itemStore.landed).
type unavailableRetry struct {
	attempts int
	delay    time.Duration
	maxDelay time.Duration
}

func (p unavailableRetry) Do(req *policy.Request) (*http.Response, error) {
	for attempt := 1; ; attempt++ {
		resp, err := req.Next()
		if err != nil || attempt >= p.attempts || (resp.StatusCode != http.StatusServiceUnavailable && resp.StatusCode != http.StatusRequestTimeout) {
			return resp, err
		}
		wait := p.delay << (attempt - 1)
		if ms, perr := strconv.Atoi(resp.Header.Get("x-ms-retry-after-ms")); perr == nil && ms >= 0 {
			wait = time.Duration(ms) * time.Millisecond
		}
		wait = min(wait, p.maxDelay)
		if resp.Body != nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		select {
		case <-req.Raw().Context().Done():
			return nil, req.Raw().Context().Err()
		case <-time.After(wait):
		}
		if err := req.RewindBody(); err != nil {
			return nil, err
		}
	}
}
