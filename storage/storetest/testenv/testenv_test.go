package testenv

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

const azurite = "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"

func TestDecideBlob(t *testing.T) {
	const missing = `integration test skipped: GTC_TEST_BLOB_CONNECTION_STRING is not set. Run "make test" (it starts Azurite and the Cosmos DB test server), or set the GTC_TEST_* variables described in spec/testing-with-real-servers.md.`
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
