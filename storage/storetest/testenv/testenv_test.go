package testenv

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const azurite = "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"

func TestDecideBlob(t *testing.T) {
	const missing = `integration test skipped: GTC_TEST_BLOB_CONNECTION_STRING is not set. Run "make test" (it starts Azurite and the Cosmos DB test server), or set the GTC_TEST_* variables as scripts/test.sh does.`
	remote := "DefaultEndpointsProtocol=https;AccountName=prodacct;AccountKey=a2V5;EndpointSuffix=core.windows.net"
	tests := []struct {
		name  string
		env   map[string]string
		short bool
		want  verdict
	}{
		{name: "unset skips", want: verdict{skip: missing}},
		{name: "unset fails when servers are required", env: map[string]string{EnvRequireServers: "1"}, want: verdict{fail: missing}},
		{name: "short skips even when set", env: map[string]string{EnvBlobConnectionString: azurite}, short: true, want: verdict{skip: ShortSkipMessage}},
		{name: "azurite", env: map[string]string{EnvBlobConnectionString: azurite}, want: verdict{value: azurite}},
		{name: "localhost", env: map[string]string{EnvBlobConnectionString: "AccountName=a;AccountKey=a2V5;BlobEndpoint=http://localhost:10010/a"}, want: verdict{value: "AccountName=a;AccountKey=a2V5;BlobEndpoint=http://localhost:10010/a"}},
		{name: "ipv6 loopback", env: map[string]string{EnvBlobConnectionString: "AccountName=a;AccountKey=a2V5;BlobEndpoint=http://[::1]:10010/a"}, want: verdict{value: "AccountName=a;AccountKey=a2V5;BlobEndpoint=http://[::1]:10010/a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := decideBlob(func(k string) string { return tc.env[k] }, tc.short)
			assert.Equal(t, tc.want, got)
		})
	}

	t.Run("remote account is refused", func(t *testing.T) {
		got := decideBlob(func(k string) string { return map[string]string{EnvBlobConnectionString: remote}[k] }, false)
		assert.Empty(t, got.value)
		assert.Contains(t, got.fail, "prodacct.blob.core.windows.net")
		assert.Contains(t, got.fail, EnvAllowRemote+"=1")
	})
	t.Run("remote endpoint is refused", func(t *testing.T) {
		cs := "AccountName=a;AccountKey=a2V5;BlobEndpoint=http://10.0.0.5:10000/a"
		got := decideBlob(func(k string) string { return map[string]string{EnvBlobConnectionString: cs}[k] }, false)
		assert.Contains(t, got.fail, "10.0.0.5")
	})
	t.Run("remote account allowed on request", func(t *testing.T) {
		env := map[string]string{EnvBlobConnectionString: remote, EnvAllowRemote: "1"}
		got := decideBlob(func(k string) string { return env[k] }, false)
		assert.Equal(t, verdict{value: remote}, got)
	})
	t.Run("unparsable string fails", func(t *testing.T) {
		got := decideBlob(func(k string) string { return map[string]string{EnvBlobConnectionString: "nonsense"}[k] }, false)
		assert.Contains(t, got.fail, "neither BlobEndpoint nor AccountName")
	})
}

func TestDecideCosmos(t *testing.T) {
	const missing = `integration test skipped: GTC_TEST_COSMOS_ENDPOINT is not set. Run "make test" (it starts Azurite and the Cosmos DB test server), or set the GTC_TEST_* variables as scripts/test.sh does.`
	const local = "http://127.0.0.1:8081/"
	tests := []struct {
		name     string
		env      map[string]string
		short    bool
		want     CosmosEnv
		wantSkip string
		wantFail string // substring of the failure message
	}{
		{name: "unset skips", wantSkip: missing},
		{name: "unset fails when servers are required", env: map[string]string{EnvRequireServers: "1"}, wantFail: missing},
		{name: "short skips even when set", env: map[string]string{EnvCosmosEndpoint: local}, short: true, wantSkip: ShortSkipMessage},
		{name: "short skips even when required", env: map[string]string{EnvRequireServers: "1"}, short: true, wantSkip: ShortSkipMessage},
		{name: "defaults: fixed flavor, emulator key", env: map[string]string{EnvCosmosEndpoint: local},
			want: CosmosEnv{Endpoint: local, Key: EmulatorKey, Flavor: FlavorFixed}},
		{name: "stock flavor, own key", env: map[string]string{EnvCosmosEndpoint: local, EnvCosmosFlavor: "stock", EnvCosmosKey: "a2V5"},
			want: CosmosEnv{Endpoint: local, Key: "a2V5", Flavor: FlavorStock}},
		{name: "localhost over https", env: map[string]string{EnvCosmosEndpoint: "https://localhost:8081/"},
			want: CosmosEnv{Endpoint: "https://localhost:8081/", Key: EmulatorKey, Flavor: FlavorFixed}},
		{name: "ipv6 loopback", env: map[string]string{EnvCosmosEndpoint: "http://[::1]:8081/"},
			want: CosmosEnv{Endpoint: "http://[::1]:8081/", Key: EmulatorKey, Flavor: FlavorFixed}},
		{name: "unknown flavor fails", env: map[string]string{EnvCosmosEndpoint: local, EnvCosmosFlavor: "emulator"}, wantFail: `GTC_TEST_COSMOS_FLAVOR="emulator": it must be fixed, stock or azure`},
		{name: "flavor is case-sensitive", env: map[string]string{EnvCosmosEndpoint: local, EnvCosmosFlavor: "Fixed"}, wantFail: "it must be fixed, stock or azure"},
		{name: "remote account is refused", env: map[string]string{EnvCosmosEndpoint: "https://prodacct.documents.azure.com:443/", EnvCosmosFlavor: "azure"},
			wantFail: "prodacct.documents.azure.com, which is not this machine"},
		{name: "remote address is refused", env: map[string]string{EnvCosmosEndpoint: "http://10.0.0.5:8081/"}, wantFail: "10.0.0.5"},
		{name: "remote account allowed on request",
			env:  map[string]string{EnvCosmosEndpoint: "https://prodacct.documents.azure.com:443/", EnvCosmosFlavor: "azure", EnvCosmosKey: "c2VjcmV0", EnvAllowRemote: "1"},
			want: CosmosEnv{Endpoint: "https://prodacct.documents.azure.com:443/", Key: "c2VjcmV0", Flavor: FlavorAzure}},
		{name: "not a URL fails", env: map[string]string{EnvCosmosEndpoint: "127.0.0.1:8081"}, wantFail: "is not an http:// or https:// URL"},
		{name: "other scheme fails", env: map[string]string{EnvCosmosEndpoint: "tcp://127.0.0.1:8081/"}, wantFail: "is not an http:// or https:// URL"},
		{name: "key that is not base64 fails without showing it", env: map[string]string{EnvCosmosEndpoint: local, EnvCosmosKey: "not base64!"}, wantFail: "GTC_TEST_COSMOS_KEY is not valid base64"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, v := decideCosmos(func(k string) string { return tc.env[k] }, tc.short)
			switch {
			case tc.wantSkip != "":
				assert.Equal(t, verdict{skip: tc.wantSkip}, v)
				assert.Equal(t, CosmosEnv{}, got)
			case tc.wantFail != "":
				assert.Empty(t, v.skip)
				assert.Contains(t, v.fail, tc.wantFail)
				assert.Equal(t, CosmosEnv{}, got)
				if k := tc.env[EnvCosmosKey]; k != "" {
					assert.NotContains(t, v.fail, k)
				}
			default:
				assert.Empty(t, v.skip)
				assert.Empty(t, v.fail)
				assert.Equal(t, tc.want, got)
			}
		})
	}
}

func TestCosmosHTTPClient(t *testing.T) {
	transport := func(t *testing.T, endpoint, flavor string) *http.Transport {
		t.Helper()
		c := cosmosHTTPClient(endpoint, flavor)
		require.NotNil(t, c)
		tr, ok := c.Transport.(*http.Transport)
		require.True(t, ok, "own *http.Transport, got %T", c.Transport)
		require.NotSame(t, http.DefaultTransport, tr)
		assert.Equal(t, 64, tr.MaxConnsPerHost)
		assert.Equal(t, 64, tr.MaxIdleConnsPerHost)
		assert.Equal(t, 90*time.Second, tr.IdleConnTimeout)
		return tr
	}
	skipsVerify := func(tr *http.Transport) bool {
		return tr.TLSClientConfig != nil && tr.TLSClientConfig.InsecureSkipVerify
	}

	assert.False(t, skipsVerify(transport(t, "http://127.0.0.1:8081/", FlavorFixed)), "plain HTTP")
	assert.True(t, skipsVerify(transport(t, "https://127.0.0.1:8081/", FlavorFixed)), "HTTPS launcher on loopback")
	assert.True(t, skipsVerify(transport(t, "https://localhost:8081/", FlavorStock)), "HTTPS stock server on loopback")
	assert.False(t, skipsVerify(transport(t, "https://127.0.0.1:8081/", FlavorAzure)), "azure flavor always verifies")
	assert.False(t, skipsVerify(transport(t, "https://prodacct.documents.azure.com:443/", FlavorAzure)), "real account")
	assert.False(t, skipsVerify(transport(t, "https://10.0.0.5:8081/", FlavorFixed)), "remote emulator verifies")
	assert.NotSame(t, cosmosHTTPClient("http://127.0.0.1:8081/", FlavorFixed), cosmosHTTPClient("http://127.0.0.1:8081/", FlavorFixed))
}

// TestCosmos checks the exported helper's wiring (the decisions are TestDecideCosmos's).
func TestCosmos(t *testing.T) {
	if testing.Short() {
		t.Skip("Cosmos skips under -short by design; TestDecideCosmos covers the decisions")
	}
	t.Setenv(EnvCosmosEndpoint, "https://127.0.0.1:18081/")
	t.Setenv(EnvCosmosFlavor, "")
	t.Setenv(EnvCosmosKey, "")
	env := Cosmos(t)
	assert.Equal(t, CosmosEnv{Endpoint: "https://127.0.0.1:18081/", Key: EmulatorKey, Flavor: FlavorFixed, HTTP: env.HTTP}, env)
	require.NotNil(t, env.HTTP)
	tr, ok := env.HTTP.Transport.(*http.Transport)
	require.True(t, ok)
	require.NotNil(t, tr.TLSClientConfig)
	assert.True(t, tr.TLSClientConfig.InsecureSkipVerify)
}
