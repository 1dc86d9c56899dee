# streamsql — see README.md.
GO ?= go
GOTESTFLAGS ?=
PKGS := ./...

.PHONY: build test run bench vet fmt clean

build:
	$(GO) build -o bin/streamsql ./cmd/streamsql

# Every test; the runtime packages also under the race detector.
# The process-level e2e tests (kill -9, savepoints) run on their own, after
# the others, so that timing-sensitive steps do not compete for the CPUs.
test: vet
	$(GO) test -count=1 $(GOTESTFLAGS) $$($(GO) list $(PKGS) | grep -v /e2e)
	$(GO) test -count=1 $(GOTESTFLAGS) ./e2e/
	$(GO) test -count=1 -race $(GOTESTFLAGS) ./exec/ ./session/

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)

# The demo: word count over a built-in text file, printed as Flink's changelog.
run: build
	./bin/streamsql run examples/wordcount.sql

# Throughput benchmarks (events/s per core); see docs/benchmarks.md.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x -count 3 ./bench/
	$(GO) test -run '^$$' -bench Checkpoint1MKeys -benchtime 1x -count 3 ./exec/

# Nexmark with checkpoints every 1 s and off, p1 and p2, every query of
# bench/nexmark, each run in a process of its own (docs/benchmarks.md).
# Flags: `make bench-nexmark ARGS='--queries q1,q5 --events 2000000'`.
ARGS ?=
.PHONY: bench-nexmark
bench-nexmark: build
	./bin/streamsql bench nexmark $(ARGS)

clean:
	rm -rf bin

# Randomized fault schedules (exec/faultsched_test.go) with N random seeds:
# `make soak N=1000`. A failure prints its seed and schedule; rerun one seed
# with STREAMSQL_SEED=<seed> go test -run TestFaultSchedule ./exec/.
N ?= 1000
.PHONY: soak
soak:
	STREAMSQL_SOAK=$(N) $(GO) test -count=1 -timeout 0 -run '^TestFaultSchedule$$' $(GOTESTFLAGS) ./exec/
