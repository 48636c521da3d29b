// Command gtc-load drives a realistic mix of curators, editors, explorers, an exporter and
// an agent against a gtc server on loopback, then proves that no acknowledged write was
// lost, and prints throughput (overall and per 5 s, with the slowest answer of each 5 s,
// so a stall shows), latency percentiles per operation, errors by status and the
// server's memory. `make loadtest` builds bin/gtc and runs it with the defaults: 64 clients for 60 s
// on the embedded SQLite store.
//
// Setup (not timed): the program imports its own fixture over HTTP into two fresh datasets
// named after the run, lt-<run>-queue (draft items for the curators' self-serve queues) and
// lt-<run>-library (approved items the editors and the agent work on), and lists both to
// record every item's ETag as its starting state in a client-side ledger
// (cmd/internal/ledger).
//
// Load: the clients are split into roles that run at once until --duration has passed or
// --requests requests were sent:
//   - curators (most clients): self-serve a queue of 10 (the ETags of newly claimed items
//     are further starting states), read each item, save it through the assignment PUT with
//     If-Match (a unique comment, new manual tags), and approve about one in four;
//   - editors (clients/16, at least 1): read a random library item and save it through the
//     curator PUT with If-Match;
//   - explorers (clients/8, at least 1): list pages filtered by dataset, status, tags and
//     keyword;
//   - one exporter: an export of both datasets every --export-every;
//   - one agent: at a third of the run previews and executes find_and_tag on the library
//     (adding topic:performance to the items that mention "throughput"), at two thirds
//     merge_tags (topic:performance → intent:feedback), waits for each operation, and
//     reads its per-item results with list_tag_operations.
//
// Below 5 clients one curator always runs, and the agent, the exporter, the editors and
// the explorers get the rest, in that order.
//
// Every 200 write enters the ledger as an acknowledged edge from the If-Match it presented
// to the _etag it got back, with the fields it set, once the answer is checked to echo
// them (the agent's applied items likewise, from etagBefore/etagAfter and the tags after);
// a 412 is an expected conflict (counted; the next attempt reads again); a write that
// timed out, lost its connection or got a 5xx may or may not have landed and is recorded
// as unknown. So are the writes a timed-out request may have made on the server's side:
// an agent execution without an answer is found again by its preview id, and the queue of
// a curator whose self-serve got no answer is read after the load for claims it never
// saw. After the load the program reads every item and checks the ledger: each
// acknowledged write must be on the item's chain of ETags and the item must hold the
// fields of the last one. The agent's reads of its operation's results are sent even
// after the deadline, and are counted like every request.
//
// Result: exit status 0 when the run passed; 1 when any answer was a 5xx, any request
// failed in transport, any answer had a status the workload does not expect (anything but
// 2xx, 409 or 412), any answer did not echo the fields that were set, or the ledger found
// a lost or unexplained write (or no acknowledged write at all); 2 for bad flags. The p99
// targets (item reads and item writes under 100 ms) are measured and printed as met or
// missed but do not change the exit status unless --strict is given: latency on a shared
// machine depends on its neighbours, and a check that fails for that reason teaches people
// to ignore it.
//
// Modes: by default it starts `<--gtc> serve` itself on a temporary data directory with
// the embedded SQLite store and stops it afterwards, and reports the server's RSS (peak
// during the load and at the end). With --replicas N it starts N servers on one Cosmos DB
// database instead (`make loadtest REPLICAS=2` starts the Cosmos DB test server for them)
// and reports the first one's RSS. With --url it targets a running server instead
// (--pid names its process for the RSS figures). On a shared server it leaves its two
// datasets behind, and the curators' self-serve may claim unassigned drafts of other
// datasets (they are left assigned to lt-<run>-curator-NN users and never edited).
//
// Flags:
//
//	--gtc PATH            gtc binary to start (default bin/gtc; not with --url)
//	--url URL             target a running server, e.g. http://127.0.0.1:8080
//	--pid N               with --url: the server's process id, for its RSS
//	--clients N           concurrent clients (default 64, at least 1)
//	--duration D          how long the load runs (default 60s)
//	--requests N          stop after N requests in all (default 0: no cap)
//	--queue-items N       draft items for the curators (default 200 per client)
//	--library-items N     approved items for editors and the agent (default 600; at most
//	                      1000, the per-item results list_tag_operations returns)
//	--export-every D      pause between two exports (default 5s)
//	--think D             pause of every client before each of its requests (default 0:
//	                      none, each client sends its next request as soon as it has
//	                      the answer, so the load is as heavy as the server allows)
//	--timeout D           per-request timeout; a write that times out is unknown (default 30s)
//	--target-p99 D        the p99 target for item reads and writes (default 100ms)
//	--strict              exit 1 when a p99 target is missed too
//	--data-dir DIR        with its own server: use this data directory (default: a temporary one)
//	--keep                keep the temporary data directory and its serve.log
//	--seed N              random seed for the workload's choices (default: from the clock)
//	--replicas N          start N servers (at most 8) on one new Cosmos DB database named
//	                      gtc-load-<random>, and send the requests to them in turn, so a
//	                      curator's save, an agent's preview and its execution land on
//	                      different replicas (default 1: one server on SQLite)
//	--cosmos-endpoint URL with --replicas: the Cosmos DB account or test server
//	--cosmos-key KEY      with --replicas: its key (default: the emulator's published key)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/gtc-dev/gtc/storage/storetest/testenv"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	_, err := run(ctx, os.Args[1:], os.Stdout)
	var usage usageError
	switch {
	case err == nil:
	case errors.As(err, &usage):
		fmt.Fprintln(os.Stderr, "gtc-load:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "gtc-load:", err)
		os.Exit(1)
	}
}

// usageError is a bad flag or flag combination (exit status 2).
type usageError struct{ error }

// errFailed is returned when the run completed but did not pass; the report says why.
var errFailed = errors.New("the load test failed (see RESULT above)")

type options struct {
	gtc          string
	url          string
	pid          int
	clients      int
	duration     time.Duration
	requests     int64
	queueItems   int
	libraryItems int
	exportEvery  time.Duration
	think        time.Duration
	timeout      time.Duration
	targetP99    time.Duration
	strict       bool
	dataDir      string
	keep         bool
	seed         uint64
	// replicas servers on one Cosmos DB database, at cosmosEndpoint with cosmosKey.
	replicas       int
	cosmosEndpoint string
	cosmosKey      string
}

// maxLibraryItems keeps every agent operation's per-item results within the 1,000 items
// list_tag_operations returns, so each applied write can enter the ledger.
const maxLibraryItems = 1000

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("gtc-load", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.gtc, "gtc", "bin/gtc", "gtc binary to start")
	fs.StringVar(&o.url, "url", "", "target a running server instead of starting one")
	fs.IntVar(&o.pid, "pid", 0, "with --url: the server's process id, for its RSS")
	fs.IntVar(&o.clients, "clients", 64, "concurrent clients")
	fs.DurationVar(&o.duration, "duration", 60*time.Second, "how long the load runs")
	fs.Int64Var(&o.requests, "requests", 0, "stop after this many requests in all (0: no cap)")
	fs.IntVar(&o.queueItems, "queue-items", 0, "draft items for the curators (0: 200 per client)")
	fs.IntVar(&o.libraryItems, "library-items", 600, "approved items for the editors and the agent")
	fs.DurationVar(&o.exportEvery, "export-every", 5*time.Second, "pause between two exports")
	fs.DurationVar(&o.think, "think", 0, "pause of every client before each of its requests")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "per-request timeout")
	fs.DurationVar(&o.targetP99, "target-p99", 100*time.Millisecond, "p99 target for item reads and item writes")
	fs.BoolVar(&o.strict, "strict", false, "exit 1 when a p99 target is missed")
	fs.StringVar(&o.dataDir, "data-dir", "", "with its own server: use this data directory")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary data directory")
	fs.Uint64Var(&o.seed, "seed", 0, "random seed (0: from the clock)")
	fs.IntVar(&o.replicas, "replicas", 1, "servers to start on one Cosmos DB database (needs --cosmos-endpoint when more than 1)")
	fs.StringVar(&o.cosmosEndpoint, "cosmos-endpoint", "", "with --replicas: the Cosmos DB endpoint")
	fs.StringVar(&o.cosmosKey, "cosmos-key", testenv.EmulatorKey, "with --replicas: the Cosmos DB account key")
	if err := fs.Parse(args); err != nil {
		return o, usageError{err}
	}
	if fs.NArg() > 0 {
		return o, usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	switch {
	case o.clients < 1:
		return o, usageError{fmt.Errorf("--clients %d: must be at least 1", o.clients)}
	case o.duration <= 0:
		return o, usageError{fmt.Errorf("--duration %s: must be positive", o.duration)}
	case o.requests < 0:
		return o, usageError{fmt.Errorf("--requests %d: must not be negative", o.requests)}
	case o.queueItems < 0:
		return o, usageError{fmt.Errorf("--queue-items %d: must not be negative", o.queueItems)}
	case o.libraryItems < 1 || o.libraryItems > maxLibraryItems:
		return o, usageError{fmt.Errorf("--library-items %d: must be between 1 and %d", o.libraryItems, maxLibraryItems)}
	case o.exportEvery <= 0 || o.timeout <= 0 || o.targetP99 <= 0:
		return o, usageError{errors.New("--export-every, --timeout and --target-p99 must be positive")}
	case o.think < 0:
		return o, usageError{fmt.Errorf("--think %s: must not be negative", o.think)}
	case o.pid != 0 && o.url == "":
		return o, usageError{errors.New("--pid goes with --url (a server gtc-load starts is measured anyway)")}
	case o.url != "" && o.dataDir != "":
		return o, usageError{errors.New("--data-dir goes with a server gtc-load starts, not with --url")}
	case o.replicas < 1 || o.replicas > 8:
		return o, usageError{fmt.Errorf("--replicas %d: must be between 1 and 8", o.replicas)}
	case o.replicas > 1 && o.url != "":
		return o, usageError{errors.New("--replicas starts its own servers, not with --url")}
	case o.replicas > 1 && o.cosmosEndpoint == "":
		return o, usageError{errors.New("--replicas needs --cosmos-endpoint: replicas share a Cosmos DB database (SQLite serves one process)")}
	}
	if o.queueItems == 0 {
		o.queueItems = 200 * o.clients
	}
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	return o, nil
}

func run(ctx context.Context, args []string, out io.Writer) (*outcome, error) {
	o, err := parseFlags(args)
	if err != nil {
		return nil, err
	}
	res, err := runLoad(ctx, o, out)
	if err != nil {
		return res, err
	}
	if !res.passed() {
		return res, errFailed
	}
	return res, nil
}
