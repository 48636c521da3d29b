// Package testenv tells integration tests where their servers are
// (testing-with-real-servers.md §5). The project's test command (scripts/test.sh) starts
// Azurite and sets the GTC_TEST_* variables; without them an integration test skips with a
// message that says how to run it, or fails when GTC_TEST_REQUIRE_SERVERS=1, so CI can never
// pass by skipping. Endpoints that are not on this machine are refused unless
// GTC_TEST_ALLOW_REMOTE=1, because the tests create and delete containers and databases.
package testenv

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
)

// Variables read by this package (testing-with-real-servers.md §5.1).
const (
	EnvBlobConnectionString = "GTC_TEST_BLOB_CONNECTION_STRING"
	EnvRequireServers       = "GTC_TEST_REQUIRE_SERVERS"
	EnvAllowRemote          = "GTC_TEST_ALLOW_REMOTE"
	// The Cosmos DB variables (GTC_TEST_COSMOS_ENDPOINT, _KEY, _FLAVOR) and func Cosmos
	// join here with the Cosmos store.
)

// ShortSkipMessage is the skip message of every integration test under -short.
const ShortSkipMessage = "integration test skipped in -short mode"

// missingMessage is the exact text of §5.2 for an unset server variable.
func missingMessage(name string) string {
	return "integration test skipped: " + name + ` is not set. Run "make test" (it starts Azurite and the Cosmos DB test server), or set the GTC_TEST_* variables described in spec/testing-with-real-servers.md.`
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
