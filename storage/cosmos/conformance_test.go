package cosmos_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/cosmos"
	"github.com/gtc-dev/gtc/storage/cosmos/cosmostest"
	"github.com/gtc-dev/gtc/storage/storetest"
	"github.com/gtc-dev/gtc/storage/storetest/testenv"
)

// TestConformance runs the store conformance suite (storetest.Run)
// against the Cosmos DB test server, each subtest on a fresh database (cosmostest.Open).
//
// The large fixtures have 500 items, not the suite's 1,500, and the store reads pages of at
// most conformancePageSize documents: scans, counts and QueryAll still cross page boundaries
// (five pages where 1,500 items made two of the default 1,000), and the test server, which
// answers one request at a time, is spared two thirds of the writes that were most of the
// suite's time.
//
// Its Queries area runs in TestConformanceQueries, which skips under the race detector: the
// norace phase of scripts/test.sh runs it without it (storetest.AreaQueries says why).
func TestConformance(t *testing.T) { storetest.Run(t, conformanceHarness(t, storetest.ExceptQueries)) }

func TestConformanceQueries(t *testing.T) {
	if testenv.RaceEnabled {
		t.Skip("sequential fixtures: run without the race detector (scripts/test.sh, norace phase)")
	}
	storetest.Run(t, conformanceHarness(t, storetest.OnlyQueries))
}

func conformanceHarness(t *testing.T, areas func(string) bool) storetest.Harness {
	env := testenv.Cosmos(t)
	clock := gtc.NewFakeClock(time.Date(2025, 3, 14, 9, 26, 53, 589793000, time.UTC))
	var transports sync.Map // gtc.Store → *cosmostest.Transport, for Break
	return storetest.Harness{
		Name:  "cosmos-" + env.Flavor,
		Clock: clock,
		Gaps:  cosmostest.Gaps(env),
		Areas: areas,
		Scale: 500,
		New: func(t *testing.T) gtc.Store {
			s, tr := cosmostest.Open(t, env, func(o *cosmos.Options) { o.Clock, o.PageSize = clock, conformancePageSize })
			transports.Store(gtc.Store(s), tr)
			return s
		},
		NewHistory: func(t *testing.T, o gtc.HistoryOptions, c gtc.Clock) gtc.Store {
			s, _ := cosmostest.Open(t, env, func(opts *cosmos.Options) {
				opts.Clock, opts.History, opts.PageSize = c, o, conformancePageSize
			})
			return s
		},
		Raw: func(t *testing.T, s gtc.Store, doc map[string]any) {
			cosmostest.InsertRaw(t, env, s.(*cosmos.Store), doc)
		},
		Break: func(t *testing.T, s gtc.Store) {
			tr, ok := transports.Load(s)
			require.True(t, ok, "Break: the store was not opened by this harness")
			tr.(*cosmostest.Transport).Break()
		},
	}
}

// conformancePageSize is the page size of the conformance suite's stores (the default is
// 1,000).
const conformancePageSize = 100
