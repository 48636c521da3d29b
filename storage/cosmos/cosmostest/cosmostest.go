// Package cosmostest opens Cosmos DB stores for tests against the Cosmos DB test server:
// each store lives in a fresh database t_<16 hex>, created through the store's own
// container-creation path and dropped when the test ends, and talks through a Transport
// that a test can break to make the backend unreachable.
// The store conformance test of storage/cosmos and the API tests (GTC_TEST_API_STORE=cosmos)
// use it; it is test support and is not linked into gtc.
package cosmostest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/gtc-dev/gtc/storage/cosmos"
	"github.com/gtc-dev/gtc/storage/storetest"
	"github.com/gtc-dev/gtc/storage/storetest/testenv"
)

// ErrBroken is what every request through a broken Transport fails with.
var ErrBroken = errors.New("test transport: backend unreachable")

// Transport is the store's HTTP transport: it passes requests on until Break is called,
// then fails every later request with ErrBroken.
type Transport struct {
	next   http.RoundTripper
	broken atomic.Bool
}

// RoundTrip implements http.RoundTripper.
func (tr *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if tr.broken.Load() {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return nil, ErrBroken
	}
	return tr.next.RoundTrip(r)
}

// Break makes every later request fail, as if the server were gone (conformance
// behaviour 39: Ping must then fail).
func (tr *Transport) Break() { tr.broken.Store(true) }

// Open opens a store on a fresh database "t_"+16 hex digits of env's server, created with
// CreateContainers, with short retry delays (20 ms, at most 200 ms) so that retries do not
// slow the tests down. tweak, when not nil, may change the options before Open (a clock,
// other container names...). The store is closed and its database dropped when the test
// ends; the drop uses a client of its own, so a test may close the store itself.
func Open(t testing.TB, env testenv.CosmosEnv, tweak func(*cosmos.Options)) (*cosmos.Store, *Transport) {
	t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	tr := &Transport{next: env.HTTP.Transport}
	opts := cosmos.Options{
		Endpoint:         env.Endpoint,
		Key:              env.Key,
		Database:         "t_" + hex.EncodeToString(b[:]),
		CreateContainers: true,
		HTTPClient:       &http.Client{Transport: tr},
		RetryDelay:       20 * time.Millisecond,
		MaxRetryDelay:    200 * time.Millisecond,
		RequestTimeout:   30 * time.Second,
		Version:          "test",
	}
	if tweak != nil {
		tweak(&opts)
	}
	database := opts.Database
	// Registered before Open, so it runs after the store is closed (cleanups run last
	// first). It uses a client of its own with the unbroken transport, because a closed
	// store's client is done and a broken one cannot reach the server.
	t.Cleanup(func() {
		if err := dropDatabase(env, database); err != nil {
			t.Errorf("drop test database %s: %v", database, err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := cosmos.Open(ctx, opts)
	if err != nil {
		t.Fatalf("open Cosmos store at %s (database %s): %v", env.Endpoint, database, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, tr
}

// newClient is an SDK client of env's server of its own, apart from any store's, sending
// through tr (env.HTTP when nil).
func newClient(env testenv.CosmosEnv, tr policy.Transporter) (*azcosmos.Client, error) {
	if tr == nil {
		tr = env.HTTP
	}
	cred, err := azcosmos.NewKeyCredential(env.Key)
	if err != nil {
		return nil, err
	}
	return azcosmos.NewClientWithKey(env.Endpoint, cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: tr}})
}

// Container returns the container name of s's database on a client of its own, closed
// when the test ends, for reading and writing documents behind the store's back.
func Container(t testing.TB, env testenv.CosmosEnv, s *cosmos.Store, name string) *azcosmos.ContainerClient {
	t.Helper()
	return container(t, env, nil, s, name)
}

func container(t testing.TB, env testenv.CosmosEnv, tr policy.Transporter, s *cosmos.Store, name string) *azcosmos.ContainerClient {
	t.Helper()
	c, err := newClient(env, tr)
	if err != nil {
		t.Fatalf("Cosmos client for %s: %v", env.Endpoint, err)
	}
	t.Cleanup(c.Close)
	ctr, err := c.NewContainer(s.Database(), name)
	if err != nil {
		t.Fatalf("container %s of %s: %v", name, s.Database(), err)
	}
	return ctr
}

// keyHeader carries a request's partition key, a JSON array of the key values.
const keyHeader = "x-ms-documentdb-partitionkey"

// keyRewrite sends every request that names a partition key with another one: the SDK
// cannot name an absent key value, which Cosmos DB and the test servers take as {}.
type keyRewrite struct {
	next  policy.Transporter
	value string
}

func (k keyRewrite) Do(r *http.Request) (*http.Response, error) {
	if r.Header.Get(keyHeader) != "" {
		r.Header.Set(keyHeader, k.value)
	}
	return k.next.Do(r)
}

// InsertRaw writes doc exactly as given into s's items container, as another tool would:
// through the SDK, not the store, so nothing is registered and no index field is added. The
// partition key is doc's datasetName and bucket values as they are: strings, numbers (any
// Go number type or json.Number), booleans, null, or absent.
func InsertRaw(t testing.TB, env testenv.CosmosEnv, s *cosmos.Store, doc map[string]any) {
	t.Helper()
	pk := azcosmos.NewPartitionKey()
	var header []string
	absent := false
	for _, path := range []string{"datasetName", "bucket"} {
		v, ok := doc[path]
		switch x := v.(type) {
		case nil:
			pk = pk.AppendNull() // when absent, a placeholder: keyRewrite sends {} instead
		case string:
			pk = pk.AppendString(x)
		case bool:
			pk = pk.AppendBool(x)
		default:
			f, err := strconv.ParseFloat(fmt.Sprint(x), 64)
			if err != nil {
				t.Fatalf("InsertRaw: %s %v (%T) is not a partition key value", path, v, v)
			}
			pk = pk.AppendNumber(f)
		}
		switch x, isString := v.(string); {
		case !ok:
			header = append(header, "{}")
			absent = true
		case isString:
			header = append(header, strconv.QuoteToASCII(x)) // headers are ASCII, as the SDK writes them
		default:
			enc, _ := json.Marshal(v)
			header = append(header, string(enc))
		}
	}
	var tr policy.Transporter
	if absent {
		tr = keyRewrite{next: env.HTTP, value: "[" + strings.Join(header, ",") + "]"}
	}
	body, err := json.Marshal(doc)
	if err != nil {
		t.Fatalf("InsertRaw: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := container(t, env, tr, s, s.Containers().GroundTruth).CreateItem(ctx, pk, body, nil); err != nil {
		t.Fatalf("InsertRaw %v/%v/%v: %v", doc["datasetName"], doc["bucket"], doc["id"], err)
	}
}

// dropDatabase deletes a database; a missing one (404) is not an error.
func dropDatabase(env testenv.CosmosEnv, database string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := newClient(env, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	db, err := c.NewDatabase(database)
	if err != nil {
		return err
	}
	_, err = db.Delete(ctx, nil)
	var re *azcore.ResponseError
	if errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
		return nil
	}
	return err
}

// Gaps are the known defects of env's server that the conformance suite skips: the stock
// @vercel/cosmosdb-server answers 500 for a point read of a missing item, and identifies an
// item by the first component of its hierarchical key only.
func Gaps(env testenv.CosmosEnv) storetest.Gaps {
	stock := env.Flavor == testenv.FlavorStock
	return storetest.Gaps{MissingReadIsServerError: stock, IdentityByFirstKeyPath: stock}
}
