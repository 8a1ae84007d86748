# The README's two commands are `make run` and `make test`.
GO ?= go
PKGS ?= ./...
TEST_TIMEOUT ?= 12m

.PHONY: build run test test-unit fuzz bench bench-go vet fmt clean

build:
	$(GO) build -o bin/gateway ./cmd/gateway

# Runs the gateway on the embedded default: SQLite, local disk, in-process
# limits. `make run LISTEN=127.0.0.1:9090` listens elsewhere (so does
# GATEWAY_LISTEN in the environment).
run:
	$(GO) run ./cmd/gateway serve $(if $(LISTEN),--listen $(LISTEN))

# Starts Redis, PostgreSQL, an S3-compatible server and a GCS emulator on free
# loopback ports, runs the whole suite with the race detector against them,
# and stops them again, pass or fail. vet and gofmt run first, beside the
# installing and building of the test servers (module downloads and package
# installs wait on the network, and a link on one core). The fuzzing build
# and runs then go beside the race suite at the lowest CPU priority: they
# take only what the suite leaves idle (most of internal/e2e is waiting),
# where at the same priority they slowed the browser tests twofold.
# Output is grouped per target (-O), not interleaved.
test:
	$(MAKE) --no-print-directory -j2 vet testenv
	$(MAKE) --no-print-directory -j2 -Otarget test-race test-plain

.PHONY: testenv test-race test-plain
testenv:
	deploy/testenv/run.sh --prepare

test-race:
	deploy/testenv/run.sh $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(PKGS)

# Each fuzz target briefly, and the allocation bounds of the hot paths,
# exact only without the race detector's instrumentation: they run in the
# fuzzing build of their package (its coverage counters allocate nothing)
# rather than in a build of their own.
test-plain:
	nice -n 19 $(MAKE) --no-print-directory fuzz FUZZTIME=$(TEST_FUZZTIME) FUZZ_RUN=Allocations

# The fuzz targets, package:Target. `make test` runs each briefly (their seed
# corpora and testdata/fuzz crashers also run in every plain `go test`);
# `make fuzz` runs them longer. A crasher found goes to the package's
# testdata/fuzz/ and stays there as a regression test.
FUZZ_TARGETS = catalog:FuzzFromBytes gateway:FuzzWorkspaceBody files/sniff:FuzzReader internal/jsonobj:FuzzWalk internal/jsonobj:FuzzAppendEscaped internal/jsonobj:FuzzAppendString \
	gateway:FuzzUpload gateway:FuzzModelPath gateway:FuzzRange gateway:FuzzFileListJSON
FUZZTIME ?= 60s
# make test counts executions rather than seconds: Go 1.26's fuzz coordinator
# can fail a target with "context deadline exceeded" at a wall-clock
# -fuzztime boundary on a busy machine, having found nothing (go.dev/issue/75804,
# fixed in Go 1.27); a count has no deadline to race.
TEST_FUZZTIME ?= 20000x
# The tests run before each target's fuzzing (none by default).
FUZZ_RUN ?= ^$$

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "fuzz $$t for $(FUZZTIME)"; \
		$(GO) test -run '$(FUZZ_RUN)' -fuzz "^$${t##*:}$$" -fuzztime $(FUZZTIME) ./$${t%%:*}; \
	done

# Unit tests only; integration tests skip without their servers.
test-unit:
	$(GO) test -race -count=1 $(PKGS)

# vet builds with -race: the packages it compiles for its analysis are then
# the ones `go test -race` links, instead of a second, uninstrumented build
# of every dependency (the cloud SDKs, SQLite) on a cold cache.
vet:
	$(GO) vet -race $(PKGS)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }

# Go benchmarks (no servers needed for most; Redis ones use the test env).
bench-go:
	deploy/testenv/run.sh $(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# Load benchmarks of the running gateway against baselines measured in the
# same run (see the header of each script in bench/).
bench:
	bench/lookup.sh
	bench/limits.sh
	bench/uploads.sh
	bench/downloads.sh
	bench/passthrough.sh
	bench/abuse.sh

clean:
	rm -rf bin .testenv
