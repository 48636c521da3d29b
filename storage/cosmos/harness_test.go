package cosmos

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/require"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/storetest"
	"github.com/gtc-dev/gtc/storage/storetest/testenv"
)

// breakable is a transport that fails every request once broken (behaviour 39).
type breakable struct {
	next   http.RoundTripper
	broken atomic.Bool
}

var errBroken = errors.New("test transport: backend unreachable")

func (b *breakable) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.broken.Load() {
		return nil, errBroken
	}
	return b.next.RoundTrip(r)
}

// testStore opens a store on a fresh database t_<16 hex>, created through the store's own
// container-creation path and dropped when the test ends.
func testStore(t testing.TB, env testenv.CosmosEnv, clock gtc.Clock, tweak func(*Options)) *Store {
	t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	tr := &breakable{next: env.HTTP.Transport}
	opts := Options{
		Endpoint:         env.Endpoint,
		Key:              env.Key,
		Database:         "t_" + hex.EncodeToString(b[:]),
		CreateContainers: true,
		HTTPClient:       &http.Client{Transport: tr},
		RetryDelay:       20 * time.Millisecond,
		MaxRetryDelay:    200 * time.Millisecond,
		RequestTimeout:   30 * time.Second,
		Clock:            clock,
		Version:          "test",
	}
	if tweak != nil {
		tweak(&opts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Registered before Open, so it runs after the store is closed (cleanups run last
	// first); it uses a client of its own because a closed store's client is done.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cred, err := azcosmos.NewKeyCredential(env.Key)
		require.NoError(t, err)
		c, err := azcosmos.NewClientWithKey(env.Endpoint, cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: env.HTTP}})
		require.NoError(t, err)
		defer c.Close()
		db, err := c.NewDatabase(opts.Database)
		require.NoError(t, err)
		if _, err := db.Delete(ctx, nil); err != nil && statusOf(err) != http.StatusNotFound {
			t.Errorf("drop database %s: %v", opts.Database, err)
		}
	})
	s, err := Open(ctx, opts)
	require.NoError(t, err, "open Cosmos store at %s", env.Endpoint)
	breakers.Store(s, tr)
	return s
}

// breakers maps a store to its transport, for Break.
var breakers sync.Map

func gaps(env testenv.CosmosEnv) storetest.Gaps {
	return storetest.Gaps{MissingReadIsServerError: env.Flavor == testenv.FlavorStock}
}

// TestConformance runs the store conformance suite (export-storage-migration.md §4)
// against the Cosmos DB test server.
func TestConformance(t *testing.T) {
	env := testenv.Cosmos(t)
	clock := gtc.NewFakeClock(time.Date(2025, 3, 14, 9, 26, 53, 589793000, time.UTC))
	storetest.Run(t, storetest.Harness{
		Name:  "cosmos-" + env.Flavor,
		Clock: clock,
		Gaps:  gaps(env),
		New: func(t *testing.T) gtc.Store {
			return testStore(t, env, clock, nil)
		},
		Break: func(t *testing.T, s gtc.Store) {
			tr, ok := breakers.Load(s.(*Store))
			require.True(t, ok)
			tr.(*breakable).broken.Store(true)
		},
	})
}
