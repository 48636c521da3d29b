# gtc — the Ground Truth Curator backend. `make run` tries it locally; `make test` runs every test.

GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo 0.1.0-dev)
LDFLAGS   := -X main.version=$(VERSION)
BIN       := bin/gtc
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

export GTC_DATA_DIR ?= ./data

.PHONY: run build test test-unit fuzz bench bench-compare bench-instrumentation bench-hostile bench-history bench-release bench-engine loadtest lint clean

## run: build, load a small demo set into an empty embedded store, and serve on :8000
run: build
	@$(BIN) seed --items 200 --datasets 3 --if-empty
	@echo "Starting gtc: open http://localhost:$${GTC_PORT:-8000}/ (the API is at http://localhost:$${GTC_PORT:-8000}/v1; Ctrl-C stops it)"
	@$(BIN) serve

## build: compile the gtc binary into bin/
build:
	@mkdir -p bin
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/gtc

## test: install and start what the tests need, run every test, stop what was started
test:
	@bash scripts/test.sh

## fuzz: every fuzz target for FUZZTIME each (default 60s; make test runs them for 1s)
fuzz:
	@FUZZTIME=$${FUZZTIME:-60s} bash scripts/fuzz.sh

## test-unit: the tests that need no servers
test-unit:
	$(GO) test -short ./...

## bench: seed 100,000 items and measure the API and the exports through HTTP on loopback, the migration of 100,000 legacy documents, then the Cosmos DB store
bench:
	@bash scripts/bench.sh

## bench-compare: this tree against OLD (a commit, e.g. OLD=a3bf34f) side by side in one run: the jsonl export stream of every approved item and PUT with 16 writers (the two binaries in interleaved rounds on one seeded store), then the tag engine per item (COMPARE_FLAGS adds gtc-bench flags, e.g. --export-items 20000 --rounds 4)
bench-compare:
	@test -n "$(OLD)" || { echo "usage: make bench-compare OLD=<commit>"; exit 2; }
	@bash scripts/bench-compare.sh $(OLD) $(COMPARE_FLAGS)

## bench-instrumentation: the cost of metrics and of tracing: the list and PUT figures of make bench with everything off, with metrics, and with metrics and traces (to an OTLP sink in the bench), in interleaved rounds on one seeded store (INSTR_FLAGS adds gtc-bench flags, e.g. --data-dir DIR --rounds 12)
bench-instrumentation: build
	$(GO) run ./cmd/gtc-bench --suite instrumentation --gtc $(BIN) $(INSTR_FLAGS)

## bench-hostile: the server's memory under hostile requests, each case on a freshly started server: 422s with millions of problems (1 MiB and 10 MiB bodies, import and PUT) and the size of those answers, 4 concurrent 10 MiB PUTs of 5M numbers in metadata, 4 concurrent GETs of a dataset of 100 items of 1.4 MB; prints RSS before, peak (VmHWM) and growth (HOSTILE_FLAGS adds gtc-bench flags, e.g. --gtc-old OLD_BIN to measure another gtc binary side by side)
bench-hostile: build
	$(GO) run ./cmd/gtc-bench --suite hostile --gtc $(BIN) $(HOSTILE_FLAGS)

## bench-history: what recording every change costs, in one build: rounds alternating GTC_HISTORY_ENABLED=true and false on one seeded store (PUT with 16 writers, list and GET medians, an import of 10,000 items), the history reads of an item with 1,000 revisions, and the bytes a revision takes (100,000 items edited 5 times each; HISTORY_FLAGS adds gtc-bench flags, e.g. --items 20000 --rounds 4 --history-items 10000)
bench-history: build
	$(GO) run ./cmd/gtc-bench --suite history --gtc $(BIN) $(HISTORY_FLAGS)

## bench-release: releases of 100,000 seeded approved items (RELEASE_FLAGS adds gtc-bench flags, e.g. --export-items 20000 or --export-data-dir DIR to reuse a seeded store): jsonl, parquet, two splits and both formats at once, each with its items/s and the server's RSS growth
bench-release: build
	$(GO) run ./cmd/gtc-bench --suite release --gtc $(BIN) $(RELEASE_FLAGS)

## bench-engine: each bulk path through gtc against the bare SQLite engine writing (or reading) the same rows on a copy of the same 100,000-item store, with the same schema, pragmas, durability and writes per transaction, in rounds whose first side alternates; prints every round, the medians with their spread and the ratios gtc/engine (ENGINE_FLAGS adds gtc-bench flags, e.g. --rounds 2 --engine-paths import,migrate --data-dir DIR to reuse a seeded store)
bench-engine: build
	$(GO) run ./cmd/gtc-bench --suite engine --gtc $(BIN) --rounds 3 --instr-write-duration 15s $(ENGINE_FLAGS)

## loadtest: build bin/gtc, then 64 clients for 60 s against it on the embedded SQLite store (curators, editors, explorers, an exporter, an agent); checks that no acknowledged write was lost and prints throughput, latency percentiles, errors and the server's RSS (LOADTEST_FLAGS adds gtc-load flags). REPLICAS=2 (or more) runs that many servers on one database of the Cosmos DB test server instead, the requests going to them in turn
REPLICAS ?= 1
loadtest: build
	@if [ "$(REPLICAS)" -gt 1 ]; then bash scripts/loadtest-replicas.sh $(BIN) $(REPLICAS) $(LOADTEST_FLAGS); \
	else $(GO) run ./cmd/gtc-load --gtc $(BIN) $(LOADTEST_FLAGS); fi

## lint: gofmt, go vet and staticcheck
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	@v=$$($(GO) list -m -f '{{.Version}}' github.com/Azure/azure-sdk-for-go/sdk/storage/azblob); if [ "$$v" != v1.8.1 ]; then echo "azblob is $$v; it must stay v1.8.1 (v1.8.2+ need a module the Go proxy refuses; see go.mod)"; exit 1; fi

clean:
	rm -rf bin
