// Package testenv tells integration tests where their servers are. The project's test command
// (scripts/test.sh) starts Azurite and the Cosmos DB test server and sets the GTC_TEST_*
// variables; without them an integration test skips with a message that says how to run it, or
// fails when GTC_TEST_REQUIRE_SERVERS=1, so CI can never pass by skipping. Endpoints that are
// not on this machine are refused unless GTC_TEST_ALLOW_REMOTE=1, because the tests create and
// delete containers and databases.
package testenv

import (
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

// Variables read by this package.
const (
	EnvBlobConnectionString = "GTC_TEST_BLOB_CONNECTION_STRING"
	EnvCosmosEndpoint       = "GTC_TEST_COSMOS_ENDPOINT"
	EnvCosmosKey            = "GTC_TEST_COSMOS_KEY"
	EnvCosmosFlavor         = "GTC_TEST_COSMOS_FLAVOR"
	EnvRequireServers       = "GTC_TEST_REQUIRE_SERVERS"
	EnvAllowRemote          = "GTC_TEST_ALLOW_REMOTE"
)

// Values of GTC_TEST_COSMOS_FLAVOR: which server GTC_TEST_COSMOS_ENDPOINT is, and so which
// of its known gaps (storetest.Gaps) the tests must skip.
const (
	FlavorFixed = "fixed" // @vercel/cosmosdb-server through tools/test-servers/cosmos-launcher.js (default)
	FlavorStock = "stock" // the package's own cosmosdb-server command
	FlavorAzure = "azure" // a real Azure Cosmos DB account
)

// EmulatorKey is the published key of the Cosmos DB emulator, not a secret. The test server
// accepts any key, but the SDK signs every request with it, so it must be valid base64; it
// is the default of GTC_TEST_COSMOS_KEY.
const EmulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

// ShortSkipMessage is the skip message of every integration test under -short.
const ShortSkipMessage = "integration test skipped in -short mode"

// missingMessage is the skip (or failure) message for an unset server variable.
func missingMessage(name string) string {
	return "integration test skipped: " + name + ` is not set. Run "make test" (it starts Azurite and the Cosmos DB test server), or set the GTC_TEST_* variables as scripts/test.sh does.`
}

// BlobConnectionString returns the connection string of the Blob server the integration
// tests use (Azurite under "make test"). It skips the test under -short and when the
// variable is unset (failing instead under GTC_TEST_REQUIRE_SERVERS=1), and fails before any
// call when the blob endpoint is not loopback and GTC_TEST_ALLOW_REMOTE is not 1.
// It takes a testing.TB so benchmarks can use it too.
func BlobConnectionString(t testing.TB) string {
	t.Helper()
	v := decideBlob(os.Getenv, testing.Short())
	v.apply(t)
	return v.value
}

// CosmosEnv is the Cosmos DB server the integration tests use.
type CosmosEnv struct {
	Endpoint string // e.g. http://127.0.0.1:8081/
	Key      string // GTC_TEST_COSMOS_KEY, else EmulatorKey
	Flavor   string // FlavorFixed, FlavorStock or FlavorAzure
	// HTTP is the client to give the SDK (azcore.ClientOptions.Transport): a plain client
	// with its own transport, which for an HTTPS emulator on this machine skips certificate
	// verification (the emulators serve a self-signed certificate). Against Azure the
	// certificate is always verified.
	HTTP *http.Client
}

// Cosmos returns the Cosmos DB server of the integration tests (the fixed launcher under
// "make test"). It skips the test under -short and when GTC_TEST_COSMOS_ENDPOINT is unset
// (failing instead under GTC_TEST_REQUIRE_SERVERS=1), and fails before any call when the
// endpoint is not loopback and GTC_TEST_ALLOW_REMOTE is not 1, or when the flavor or the key
// is invalid. It takes a testing.TB so benchmarks can use it too. Idle connections of the
// returned client are closed when the test ends.
func Cosmos(t testing.TB) CosmosEnv {
	t.Helper()
	env, v := decideCosmos(os.Getenv, testing.Short())
	v.apply(t)
	env.HTTP = cosmosHTTPClient(env.Endpoint, env.Flavor)
	t.Cleanup(env.HTTP.CloseIdleConnections)
	return env
}

func decideCosmos(getenv func(string) string, short bool) (CosmosEnv, verdict) {
	v := need(getenv, short, EnvCosmosEndpoint)
	if v.value == "" {
		return CosmosEnv{}, v
	}
	endpoint := v.value
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return CosmosEnv{}, verdict{fail: fmt.Sprintf("%s=%q is not an http:// or https:// URL", EnvCosmosEndpoint, endpoint)}
	}
	if host := u.Hostname(); !isLoopback(host) && getenv(EnvAllowRemote) != "1" {
		return CosmosEnv{}, verdict{fail: fmt.Sprintf("%s points at %s, which is not this machine; the tests create and delete databases and containers there. Set %s=1 to allow it.", EnvCosmosEndpoint, host, EnvAllowRemote)}
	}
	flavor := getenv(EnvCosmosFlavor)
	if flavor == "" {
		flavor = FlavorFixed
	}
	switch flavor {
	case FlavorFixed, FlavorStock, FlavorAzure:
	default:
		return CosmosEnv{}, verdict{fail: fmt.Sprintf("%s=%q: it must be %s, %s or %s", EnvCosmosFlavor, flavor, FlavorFixed, FlavorStock, FlavorAzure)}
	}
	key := getenv(EnvCosmosKey)
	if key == "" {
		key = EmulatorKey
	} else if _, err := base64.StdEncoding.DecodeString(key); err != nil {
		// The value itself stays out of the message: it may be a real account key.
		return CosmosEnv{}, verdict{fail: fmt.Sprintf("%s is not valid base64 (%d characters); the SDK signs requests with it", EnvCosmosKey, len(key))}
	}
	return CosmosEnv{Endpoint: endpoint, Key: key, Flavor: flavor}, v
}

// cosmosHTTPClient builds the client for an endpoint decideCosmos accepted. Certificate
// checks are skipped only for an HTTPS emulator on this machine.
func cosmosHTTPClient(endpoint, flavor string) *http.Client {
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		ForceAttemptHTTP2:   true,
		MaxConnsPerHost:     64,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	if u, err := url.Parse(endpoint); err == nil && u.Scheme == "https" && flavor != FlavorAzure && isLoopback(u.Hostname()) {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the emulators' self-signed certificate, loopback only
	}
	return &http.Client{Transport: tr}
}

// verdict is what a helper decided, kept apart from *testing.T so the decisions are
// unit-testable.
type verdict struct {
	value string
	skip  string // skip with this message
	fail  string // t.Fatal with this message
}

func (v verdict) apply(t testing.TB) {
	t.Helper()
	switch {
	case v.fail != "":
		t.Fatal(v.fail)
	case v.skip != "":
		t.Skip(v.skip)
	}
}

// need is the common decision for one required variable.
func need(getenv func(string) string, short bool, name string) verdict {
	if short {
		return verdict{skip: ShortSkipMessage}
	}
	val := getenv(name)
	if val == "" {
		if getenv(EnvRequireServers) == "1" {
			return verdict{fail: missingMessage(name)}
		}
		return verdict{skip: missingMessage(name)}
	}
	return verdict{value: val}
}

func decideBlob(getenv func(string) string, short bool) verdict {
	v := need(getenv, short, EnvBlobConnectionString)
	if v.value == "" {
		return v
	}
	host, err := blobEndpointHost(v.value)
	if err != nil {
		return verdict{fail: fmt.Sprintf("%s: %v", EnvBlobConnectionString, err)}
	}
	if !isLoopback(host) && getenv(EnvAllowRemote) != "1" {
		return verdict{fail: fmt.Sprintf("%s points at %s, which is not this machine; the tests create and delete containers there. Set %s=1 to allow it.", EnvBlobConnectionString, host, EnvAllowRemote)}
	}
	return v
}

// blobEndpointHost finds the host the SDK will talk to for a connection string: BlobEndpoint
// when given, else <account>.blob.<suffix>, as azblob derives it.
func blobEndpointHost(cs string) (string, error) {
	fields := map[string]string{}
	for part := range strings.SplitSeq(cs, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok {
			fields[strings.ToLower(k)] = v
		}
	}
	if ep := fields["blobendpoint"]; ep != "" {
		u, err := url.Parse(ep)
		if err != nil || u.Host == "" {
			return "", fmt.Errorf("BlobEndpoint %q is not a URL", ep)
		}
		return u.Hostname(), nil
	}
	account := fields["accountname"]
	if account == "" {
		return "", fmt.Errorf("neither BlobEndpoint nor AccountName is set")
	}
	suffix := fields["endpointsuffix"]
	if suffix == "" {
		suffix = "core.windows.net"
	}
	return account + ".blob." + suffix, nil
}

// isLoopback accepts localhost and loopback addresses (127.0.0.1, ::1 and the rest of
// 127.0.0.0/8, which cannot leave the machine either).
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
