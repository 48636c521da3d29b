// Package blob is the Azure Blob Storage artifact store:
// exported snapshots as block blobs in one container, a blob's name being the artifact key
// verbatim. It implements gtc.ArtifactStore with the azblob SDK and turns every Azure error
// into a gtc artifact error at this boundary, so nothing above storage/ sees an Azure type.
package blob

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/internal/aztrace"
)

// CheckTimeout is the budget of Check, the startup check.
const CheckTimeout = 10 * time.Second

// Backend is what Store.Backend reports.
const Backend = "blob"

// Options configures a Store. Exactly one authentication mode is allowed: ConnectionString;
// AccountURL with AccountKey; or AccountURL with Credential.
type Options struct {
	// Container holds the blobs (GTC_EXPORT_BLOB_CONTAINER).
	Container string
	// ConnectionString is for development and Azurite.
	ConnectionString string
	// AccountURL is the blob service URL, e.g. https://acct.blob.core.windows.net or
	// http://127.0.0.1:10000/devstoreaccount1.
	AccountURL string
	// AccountKey makes AccountURL use shared-key authentication.
	AccountKey string
	// AccountName goes with AccountKey; when empty it is derived from AccountURL (the first
	// host label of *.blob.core.windows.net, the first path segment of a path-style URL).
	AccountName string
	// Credential is the process's shared DefaultAzureCredential, used with AccountURL alone.
	// Bearer tokens need https.
	Credential azcore.TokenCredential
	// HTTPClient replaces the transport. Nil uses a client shared by every Store that keeps
	// enough idle connections for 64 concurrent uploads.
	HTTPClient *http.Client
	// Retry replaces DefaultRetry (3 retries, backoff 1 s to 30 s, 60 s per try);
	// tests against dead endpoints use it to fail fast.
	Retry *policy.RetryOptions
	// Logger receives the line Check writes when it creates the container (slog.Default
	// when nil).
	Logger *slog.Logger
	// OnRetry, when set, is called before every retry of an HTTP request to Blob Storage,
	// with the reason: the status code of the try that is retried ("503", "500") or
	// "transport" when it got no answer. cmd/gtc counts them as
	// gtc_store_retries_total{backend="blob"}. It must be safe for concurrent use.
	OnRetry func(reason string)
}

// DefaultRetry is the SDK retry policy a Store uses unless Options.Retry replaces it.
func DefaultRetry() policy.RetryOptions {
	return policy.RetryOptions{
		MaxRetries:    3,
		RetryDelay:    time.Second,
		MaxRetryDelay: 30 * time.Second,
		TryTimeout:    60 * time.Second,
	}
}

type authMode int

const (
	authConnectionString authMode = iota
	authSharedKey
	authToken
)

// Store is the Blob artifact store. It is safe for concurrent use.
type Store struct {
	c       *container.Client
	name    string
	account string
	auth    authMode
	log     *slog.Logger
}

var _ gtc.ArtifactStore = (*Store)(nil)

// containerNameRE is most of Azure's container naming rule (3–63 characters of lower-case
// letters, digits and single hyphens, starting and ending with a letter or digit), so a typo
// in the setting is reported at startup instead of as a 400 on the first export.
var containerNameRE = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$`)

func validContainerName(name string) bool {
	return len(name) >= 3 && len(name) <= 63 && containerNameRE.MatchString(name) && !strings.Contains(name, "--")
}

// New builds the client; it does no I/O, so a store can be built while storage is down and
// Check decides what that means.
func New(o Options) (*Store, error) {
	if !validContainerName(o.Container) {
		return nil, fmt.Errorf("blob: container name %q is not valid (3–63 lower-case letters, digits and single hyphens)", o.Container)
	}
	copts := &azblob.ClientOptions{ClientOptions: azcore.ClientOptions{
		Retry:     DefaultRetry(),
		Transport: o.HTTPClient,
		// A span per try, the caller's W3C trace headers on every request, retries counted.
		PerRetryPolicies: []policy.Policy{aztrace.New("blob", o.OnRetry)},
	}}
	if o.Retry != nil {
		copts.Retry = *o.Retry
	}
	if o.HTTPClient == nil {
		copts.Transport = sharedHTTPClient()
	}

	var (
		client  *azblob.Client
		account string
		mode    authMode
		err     error
	)
	switch {
	case o.ConnectionString != "":
		if o.AccountURL != "" || o.AccountKey != "" || o.Credential != nil {
			return nil, errors.New("blob: a connection string excludes an account URL, key and credential")
		}
		mode = authConnectionString
		client, err = azblob.NewClientFromConnectionString(o.ConnectionString, copts)
		if err != nil {
			// The SDK's message may quote the string, key included; say only what is wrong.
			return nil, errors.New("blob: the connection string cannot be parsed (it needs AccountName and AccountKey, or BlobEndpoint and SharedAccessSignature)")
		}
		account = connectionStringField(o.ConnectionString, "AccountName")
		if account == "" {
			account = accountOrHost(client.URL())
		}
	case o.AccountURL != "" && o.AccountKey != "":
		if o.Credential != nil {
			return nil, errors.New("blob: an account key excludes a token credential")
		}
		mode = authSharedKey
		account = o.AccountName
		if account == "" {
			if account, err = accountFromURL(o.AccountURL); err != nil {
				return nil, err
			}
		}
		cred, kerr := azblob.NewSharedKeyCredential(account, o.AccountKey)
		if kerr != nil {
			return nil, errors.New("blob: the account key is not valid base64")
		}
		if client, err = azblob.NewClientWithSharedKeyCredential(o.AccountURL, cred, copts); err != nil {
			return nil, fmt.Errorf("blob: %w", err)
		}
	case o.AccountURL != "":
		if o.Credential == nil {
			return nil, errors.New("blob: an account URL without a key needs a token credential")
		}
		if u, err := url.Parse(o.AccountURL); err != nil || u.Scheme != "https" {
			return nil, fmt.Errorf("blob: account URL %q must be https to carry bearer tokens (use a key or a connection string for http)", o.AccountURL)
		}
		mode = authToken
		account = o.AccountName
		if account == "" {
			account = accountOrHost(o.AccountURL)
		}
		if client, err = azblob.NewClient(o.AccountURL, o.Credential, copts); err != nil {
			return nil, fmt.Errorf("blob: %w", err)
		}
	case o.AccountKey != "":
		return nil, errors.New("blob: an account key needs an account URL")
	default:
		return nil, errors.New("blob: set a connection string, or an account URL (with a key, or with a token credential)")
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Store{
		c:       client.ServiceClient().NewContainerClient(o.Container),
		name:    o.Container,
		account: account,
		auth:    mode,
		log:     log,
	}, nil
}

// Backend reports "blob".
func (s *Store) Backend() string { return Backend }

// Container is the container the store writes to.
func (s *Store) Container() string { return s.name }

// Account is the storage account name, for the startup log line that tells who runs
// against which account.
func (s *Store) Account() string { return s.account }

// Check is the startup check: it asks for the container's properties within
// CheckTimeout and, when the container is missing and create is set, creates it with private
// access. A missing container (without create) and a refused identity are configuration
// errors that should stop startup; an unreachable service is an error wrapping
// gtc.ErrStorageUnavailable, on which the caller only warns, because export storage may come
// back while the server runs.
func (s *Store) Check(ctx context.Context, create bool) error {
	cctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	_, err := s.c.GetProperties(cctx, nil)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("blob: check container %q: %w", s.name, ctx.Err())
	}
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		if cctx.Err() != nil {
			return fmt.Errorf("%w: export container '%s' on account %s did not answer within %s", gtc.ErrStorageUnavailable, s.name, s.account, CheckTimeout)
		}
		return fmt.Errorf("%w: export container '%s' on account %s: %w", gtc.ErrStorageUnavailable, s.name, s.account, err)
	}
	switch {
	case re.StatusCode == http.StatusNotFound && create:
		_, err := s.c.Create(cctx, nil) // no access level: private
		if err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
			return fmt.Errorf("export container '%s' could not be created: %w", s.name, s.mapErr(cctx, "create container", "", err))
		}
		s.log.Info("created export container", "account", s.account, "container", s.name)
		return nil
	case re.StatusCode == http.StatusNotFound:
		return fmt.Errorf("export container '%s' does not exist (create it, or set GTC_EXPORT_BLOB_CREATE_CONTAINER=true)", s.name)
	case re.StatusCode == http.StatusUnauthorized || re.StatusCode == http.StatusForbidden:
		return fmt.Errorf("export container '%s' on account %s: HTTP %d %s: %s", s.name, s.account, re.StatusCode, re.ErrorCode, s.accessHint())
	}
	return fmt.Errorf("%w: export container '%s' on account %s: HTTP %d %s", gtc.ErrStorageUnavailable, s.name, s.account, re.StatusCode, re.ErrorCode)
}

func (s *Store) accessHint() string {
	if s.auth == authToken {
		return fmt.Sprintf("the identity needs the Storage Blob Data Contributor role on container '%s' or its account", s.name)
	}
	return "the account key, connection string or SAS was refused (a SAS needs read, add, create, write, delete and list permissions)"
}

// mapErr turns an SDK error of operation op on key into a gtc artifact error. The caller's
// cancellation stays a context error; Azure response errors are reduced to status and code,
// so no Azure type (and no response body) travels up.
func (s *Store) mapErr(ctx context.Context, op, key string, err error) error {
	where := fmt.Sprintf("blob: %s %q", op, key)
	if key == "" {
		where = "blob: " + op
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", where, ctx.Err())
	}
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return fmt.Errorf("%w: %s: %w", gtc.ErrStorageUnavailable, where, err)
	}
	switch code := bloberror.Code(re.ErrorCode); {
	case code == bloberror.BlobNotFound:
		return fmt.Errorf("%s: %w", where, gtc.ErrArtifactNotFound)
	case code == bloberror.BlobAlreadyExists:
		return fmt.Errorf("%s: %w", where, gtc.ErrArtifactExists)
	case code == bloberror.ContainerNotFound:
		return fmt.Errorf("%w: %s: container '%s' does not exist in account %s", gtc.ErrStorageUnavailable, where, s.name, s.account)
	case re.StatusCode == http.StatusUnauthorized || re.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%w: %s: HTTP %d %s: %s", gtc.ErrStorageUnavailable, where, re.StatusCode, re.ErrorCode, s.accessHint())
	}
	return fmt.Errorf("%w: %s: HTTP %d %s", gtc.ErrStorageUnavailable, where, re.StatusCode, re.ErrorCode)
}

// sharedHTTPClient is the default transport. azcore's default keeps 10 idle connections
// per host; an export writes up to 64 objects at once, each with up to 2 blocks in flight,
// so with that default most uploads would open (and TLS-handshake) a new connection.
var sharedHTTPClient = sync.OnceValue(func() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   160,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}}
})

// accountFromURL derives the account name from a blob service URL: the first host label of
// <account>.blob.<suffix>, or the first path segment of a path-style URL (an IP address,
// localhost or a single-label host, as the emulator uses).
func accountFromURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("blob: account URL %q is not a URL", raw)
	}
	host := u.Hostname()
	if label, rest, ok := strings.Cut(host, "."); ok && strings.HasPrefix(rest, "blob.") && net.ParseIP(host) == nil {
		return label, nil
	}
	if seg, _, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/"); seg != "" {
		return seg, nil
	}
	return "", fmt.Errorf("blob: cannot derive the account name from %q; set GTC_EXPORT_BLOB_ACCOUNT_NAME", raw)
}

// accountOrHost is the account name for the log line, or the URL's host when a custom
// domain hides it (only the shared-key mode needs the real name).
func accountOrHost(raw string) string {
	if a, err := accountFromURL(raw); err == nil {
		return a
	}
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Host
	}
	return raw
}

// connectionStringField reads one field of a connection string without keeping the rest.
func connectionStringField(cs, name string) string {
	for part := range strings.SplitSeq(cs, ";") {
		if k, v, ok := strings.Cut(strings.TrimSpace(part), "="); ok && strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}
