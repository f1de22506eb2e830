# oncepay — `make` (or `make help`) lists the targets.
#
# Every target that runs Go does so in every module of go.work, one module
# after another, and keeps going after a failure so that one run shows every
# broken module; it fails at the end if any module failed.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory

GO      ?= go
HARNESS := scripts/harness

# staticcheck, pinned (honnef.co/go/tools v0.8.2 is staticcheck 2026.2.2);
# installed into bin/ once per version by make staticcheck.
STATICCHECK_VERSION := v0.8.2
STATICCHECK         := $(CURDIR)/bin/staticcheck

# in-modules runs $(1) inside every workspace module (`go list -m` in workspace
# mode lists them), prints one summary line per module and fails if any failed.
# $(2) names the step in the summary.
define in-modules
	@mods=$$($(GO) list -m -f '{{.Dir}}'); \
	[[ -n $$mods ]] || { echo "no Go modules found (is go.work there?)" >&2; exit 1; }; \
	failed=0; summary=''; \
	for dir in $$mods; do \
		mod=$${dir#$(CURDIR)}; mod=$${mod#/}; mod=$${mod:-.}; \
		echo "==> $$mod: $(1)"; \
		t0=$$(date +%s); \
		if (cd "$$dir" && $(1)); then res=ok; else res=FAIL; failed=1; fi; \
		summary+=$$(printf '  %-4s  %-22s %4ss' "$$res" "$$mod" "$$(( $$(date +%s) - t0 ))")$$'\n'; \
	done; \
	printf '\n$(2) summary:\n%s' "$$summary"; \
	exit $$failed
endef

.PHONY: help
help: ## list the targets
	@echo 'usage: make <target>'
	@echo
	@awk 'BEGIN { FS = ":.*## " } /^[a-zA-Z0-9_-]+:.*## / { printf "  %-16s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

.PHONY: test
test: lint tools k6 ## lint, install the pinned tools (helm, promtool, toxiproxy, k6), then run every module's tests, the teaching build's and a bounded fuzz run against real Redis/Postgres/RabbitMQ (started and stopped by scripts/harness)
	$(HARNESS) run -- $(MAKE) test-go test-compare test-examples test-adopt fuzz-go test-conform-peers

.PHONY: test-go
test-go: ## go test -race -count=1 -p 1 ./... in every module (needs the services: see make harness-up)
	$(call in-modules,$(GO) test -race -count=1 -p 1 ./...,test)

# examples/ is a module outside the workspace that uses the library as any
# other module would: one require, one replace, GOWORK=off. Building and
# testing it there proves that a consumer needs nothing else of this
# repository (no harness, pgx, amqp091, chi or Prometheus through it).
EXAMPLES := cd examples && export GOWORK=off &&

.PHONY: test-examples
test-examples: ## build and test examples/ outside the workspace (GOWORK=off) against the harness Redis and Postgres (needs the services)
	$(EXAMPLES) $(GO) build ./... && $(GO) test -race -count=1 ./...

.PHONY: test-adopt
test-adopt: ## run every command of docs/adopt.md in order and check what it promises (scripts/tutorial-test; needs the services; the example listens on PORT, default 18090)
	PORT=$${PORT:-18090} scripts/tutorial-test docs/adopt.md

.PHONY: lint-examples
lint-examples: ## go vet and staticcheck in examples/ and the library's own tests (pkg/idem, lua), outside the workspace (GOWORK=off)
	$(EXAMPLES) $(GO) vet ./... && $(STATICCHECK) ./...
	GOWORK=off $(GO) vet ./pkg/idem/... ./lua/...

# The teaching build (-tags compare) links the comparison strategies into the
# api and the worker; its tests are the *_compare_test.go files' (make compare).
COMPARE_TEST_FILES = $(wildcard services/*/cmd/*/*_compare_test.go)

.PHONY: test-compare
test-compare: ## go test -race -tags compare: the comparison strategies' tests in the api's and the worker's teaching build, and conform against each (needs the services)
	@tests=$$(grep -ho '^func Test[A-Za-z0-9_]*' $(COMPARE_TEST_FILES) | sed 's/^func //' | paste -sd'|'); \
	for svc in api worker; do \
		(cd services/$$svc && $(GO) test -race -count=1 -p 1 -tags compare -run "^($$tests)\$$" ./...) || exit 1; \
	done
	cd loadtest && $(GO) test -race -count=1 -p 1 -tags compare -run '^TestConformCompareStrategies$$' ./conform

# FUZZTIME bounds the fuzz run of make test; plain go test (test-go) runs
# only the committed seed corpus (testdata/fuzz).
FUZZTIME ?= 20s

.PHONY: fuzz-go
fuzz-go: ## fuzz POST /v1/payments end to end for FUZZTIME (20s) on a real api (needs the services: see make harness-up)
	cd services/api && $(GO) test -count=1 -run '^$$' -fuzz '^FuzzCreatePayment$$' -fuzztime $(FUZZTIME) ./cmd/api

.PHONY: lint
lint: ## gofmt check, go vet and the pinned staticcheck in every module and examples/, and docs-check (reports all before failing)
	@status=0; \
	unformatted=$$(gofmt -l $$($(GO) list -m -f '{{.Dir}}') | sed 's|^$(CURDIR)/||'); \
	if [[ -n $$unformatted ]]; then \
		echo "gofmt: these files need formatting (make fmt):" >&2; \
		echo "$$unformatted" | sed 's/^/  /' >&2; \
		status=1; \
	fi; \
	$(MAKE) vet || status=1; \
	$(MAKE) staticcheck || status=1; \
	$(MAKE) lint-examples || status=1; \
	$(MAKE) docs-check || status=1; \
	exit $$status

.PHONY: docs-check
docs-check: ## check the docs: Mermaid blocks parse and show their text, links, anchors and prose section references resolve, quoted results match their table, README <= 16 KiB, docs pages <= 20 KiB
	scripts/docscheck/run --selftest
	scripts/docscheck/run

# HAS_COMPARE_TAG: does the current module have a file of the teaching build?
HAS_COMPARE_TAG := grep -rqs --include='*.go' -E '^//go:build .*compare' .

.PHONY: vet
vet: ## go vet ./... in every module, and again with -tags compare where a file has that tag (the teaching build)
	$(call in-modules,$(GO) vet ./... && { ! $(HAS_COMPARE_TAG) || $(GO) vet -tags compare ./...; },vet)

.PHONY: staticcheck
staticcheck: ## staticcheck ./... in every module (and -tags compare, as vet), with the pinned version (installed into bin/ on first use)
	@[[ -x $(STATICCHECK) && "$$(cat bin/.staticcheck.version 2>/dev/null)" == $(STATICCHECK_VERSION) ]] || { \
		echo "installing staticcheck $(STATICCHECK_VERSION) into bin/" >&2; \
		GOBIN=$(CURDIR)/bin GOWORK=off GOFLAGS=-buildvcs=false $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) && \
		echo $(STATICCHECK_VERSION) >bin/.staticcheck.version; }
	$(call in-modules,$(STATICCHECK) ./... && { ! $(HAS_COMPARE_TAG) || $(STATICCHECK) -tags compare ./...; },staticcheck)

.PHONY: fmt
fmt: ## gofmt -w every module
	gofmt -w $$($(GO) list -m -f '{{.Dir}}')

.PHONY: tidy
tidy: ## go mod tidy in every module
	$(call in-modules,$(GO) mod tidy,tidy)

.PHONY: harness-up
harness-up: ## start Redis, Postgres and RabbitMQ and print their export lines
	$(HARNESS) up

.PHONY: harness-down
harness-down: ## stop the harness services (state is kept in .run/harness)
	$(HARNESS) down

.PHONY: harness-status
harness-status: ## show whether each harness service runs, its pid and port
	$(HARNESS) status

.PHONY: clean
clean: ## stop the local runtime and the harness, then delete .run (all local state) and bin
	-scripts/local down
	ONCEPAY_RUN_DIR=$(CURDIR)/.run $(HARNESS) down
	rm -rf .run bin

# ---------------------------------------------------------------------------
# runtimes, load and fault tests (scripts/runtime, loadtest/run, docs/demo.md,
# docs/runtimes.md). RUNTIME picks where oncepay runs: local (the default:
# processes, scripts/local), compose (containers, deploy/compose/run) or kind
# (the Helm chart on a kind cluster, deploy/kind/run), e.g. make demo RUNTIME=compose.

RUNTIME  ?= local
# TOPOLOGY: single, or ha for a Redis Cluster and a 3-node
# RabbitMQ cluster (docs/runtimes.md, docs/deploy-ha.md); local: unset, the last used.
TOPOLOGY ?=
export TOPOLOGY
DURATION ?= 180s
RATE     ?= 50
DRAIN    ?= 120s
LOADTEST := RUNTIME=$(RUNTIME) DURATION=$(DURATION) RATE=$(RATE) DRAIN=$(DRAIN) loadtest/run

.PHONY: up
up: ## start oncepay (2 api, 2 worker, psp, Redis, Postgres, RabbitMQ) on RUNTIME=local|compose|kind
	RUNTIME=$(RUNTIME) scripts/runtime up

.PHONY: down
down: ## stop RUNTIME: local processes and their harness; compose/kind also delete their volumes
	RUNTIME=$(RUNTIME) scripts/runtime down

.PHONY: status
status: ## show what RUNTIME runs: processes, containers or pods, and their readiness
	RUNTIME=$(RUNTIME) scripts/runtime status

.PHONY: logs
logs: ## follow the logs of everything RUNTIME runs
	RUNTIME=$(RUNTIME) scripts/runtime logs

.PHONY: tools
tools: ## install the pinned helm (v3.22.0), promtool (Debian's) and toxiproxy (v2.12.0) into bin/ and Debian's chromium, which the tests need (deploy/tools; kind and kubectl: deploy/kind/run up)
	deploy/tools helm promtool toxiproxy chromium

.PHONY: k6
k6: ## build the pinned k6 (v1.8.1) into bin/ once (takes minutes; kept afterwards)
	loadtest/run k6

.PHONY: loadtest
loadtest: k6 ## load without faults (DURATION, RATE), then verify; leaves the stack up
	$(LOADTEST) load

.PHONY: chaos
chaos: k6 ## load with faults: kills, RabbitMQ/Redis restarts, FLUSHALL (and, from 150s, a Postgres SIGKILL and a worker pause); then verify; leaves the stack up
	$(LOADTEST) chaos

.PHONY: demo
demo: k6 ## up + 3 min k6 fault test + drain + invariant report and timeline (.run/demo[-RUNTIME]); leaves the stack up
	$(LOADTEST) chaos

MATRIX_RATE  ?= 20
MATRIX_DRAIN ?= 120s

.PHONY: fault-matrix
fault-matrix: k6 ## every fault kind RUNTIME can apply, once, under load (~11 min local), then verify; fails on any violation or missed fault; report in .run/fault-matrix[-RUNTIME]
	RUNTIME=$(RUNTIME) RATE=$(MATRIX_RATE) DRAIN=$(MATRIX_DRAIN) loadtest/run matrix

.PHONY: verify
verify: ## check the last run's invariants again and rewrite its report (.run/demo[-RUNTIME])
	RUNTIME=$(RUNTIME) DRAIN=$(DRAIN) loadtest/run verify

.PHONY: repro
repro: k6 ## rerun a recorded run's load and fault plan (RUN=.run/demo, its run.json) into RUN-repro; print both verdicts
	@[[ -n "$(RUN)" ]] || { echo 'usage: make repro RUN=<run dir>' >&2; exit 2; }
	REPRO_RUN=$(RUN) loadtest/run repro

.PHONY: test-demo
test-demo: k6 ## CI: a short fault run (60s load, 90s drain limit) that fails on any violation; stops the stack after; then checks its report.html in Chromium
	RUNTIME=$(RUNTIME) DURATION=60s RATE=30 DRAIN=90s loadtest/run chaos --down
	$(MAKE) test-report RUN=.run/demo$(if $(filter-out local,$(RUNTIME)),-$(RUNTIME))

.PHONY: report
report: ## serve the last run's report.html on 127.0.0.1 and print its URL (RUN=<run dir> for another); Ctrl-C stops it
	$(GO) build -o bin/report ./loadtest/cmd/report
	bin/report $(if $(RUN),-run $(RUN))

.PHONY: test-report
test-report: ## load RUN's report.html (default .run/demo) in headless Chromium (installed with apt when missing), check it, save RUN/report.png
	deploy/tools chromium >/dev/null
	cd loadtest && ONCEPAY_REPORT_RUN=$(abspath $(or $(RUN),.run/demo)) $(GO) test -count=1 -run 'TestRunPageInBrowser' -v ./page

.PHONY: test-tutorial
test-tutorial: k6 ## run every command of docs/tutorial.md in order and check what it promises (~2-3 min; scripts/tutorial-test); stops the stack after
	scripts/tutorial-test

# make compare: the same fault run (seed, rate, duration, fault schedule and
# psp faults) against oncepay and each comparison strategy, restarting the api
# and the workers with IDEM_STRATEGY=<strategy> and resetting the state between
# runs; one table and one chart (docs/compare.md, docs/failure-windows.md).
# A "+key" strategy is its pattern with the propagated psp key; off is no
# boundary with the propagated key: the rows that separate the two variables.
# The api and the workers of a comparison strategy are the teaching build.
# patroni-sync and patroni-async run oncepay on TOPOLOGY=ha (Postgres under
# Patroni, synchronous or asynchronous replication) under a lagged Postgres
# failover; the runtime is stopped and its Patroni state deleted before each.
COMPARE_STRATEGIES     ?= oncepay,get-then-set,get-then-set+key,setnx-marker,setnx-marker+key,lock-then-check,api-only,no-backstop,off,patroni-sync,patroni-async
COMPARE_DURATION       ?= 60s
COMPARE_RATE           ?= 30
COMPARE_DRAIN          ?= 60s
COMPARE_SEED           ?= 1
COMPARE_PSP_FAIL_AFTER ?= 0.01
COMPARE_FLAGS = -strategies $(COMPARE_STRATEGIES) -duration $(COMPARE_DURATION) -rate $(COMPARE_RATE) \
	-drain $(COMPARE_DRAIN) -seed $(COMPARE_SEED) -psp-fail-after $(COMPARE_PSP_FAIL_AFTER)

.PHONY: compare
compare: k6 ## the same fault run against oncepay and every naive strategy (~3-4 min each), one table + chart in .run/compare
	$(GO) build -o bin/compare ./loadtest/cmd/compare
	bin/compare $(COMPARE_FLAGS)

.PHONY: compare-report
compare-report: ## print the table and redraw the chart of the last make compare (.run/compare) without running anything
	$(GO) build -o bin/compare ./loadtest/cmd/compare
	bin/compare -report-only $(COMPARE_FLAGS)

.PHONY: conform-build
conform-build: ## build the conform command (an Idempotency-Key conformance, storm and history checker, docs/conform.md) into bin/
	$(GO) build -o bin/conform ./loadtest/cmd/conform

.PHONY: conform
conform: conform-build ## run conform against the api that make up started on RUNTIME (CONFORM_FLAGS adds flags); reports in .run/conform[-RUNTIME]
	RUNTIME=$(RUNTIME) scripts/conform $(CONFORM_FLAGS)

.PHONY: conform-peers
conform-peers: ## conform against third-party middlewares (Fiber v2 and v3, express-idempotency; memory and Redis) on the harness; writes docs/conform.md's table
	$(HARNESS) run -- scripts/conform-peers --write

.PHONY: test-conform-peers
test-conform-peers: ## make conform-peers, but fail when docs/conform.md's table differs instead of writing it (needs the services; ~40 s)
	scripts/conform-peers --check

# ---------------------------------------------------------------------------
# benchmarks and the performance report (loadtest/bench, docs/PERFORMANCE.md).
# Not part of make test: they take minutes and load the whole machine. They
# run on their own harness instance (ports BENCH_REDIS_PORT/BENCH_PG_PORT/
# BENCH_AMQP_PORT, state in .run/bench), started and stopped by the run.

BENCH_REDIS_PORT ?= 6392
BENCH_PG_PORT    ?= 5442
BENCH_AMQP_PORT  ?= 5682
BENCH_HARNESS := ONCEPAY_RUN_DIR=$(CURDIR)/.run/bench HARNESS_REDIS_PORT=$(BENCH_REDIS_PORT) HARNESS_PG_PORT=$(BENCH_PG_PORT) HARNESS_AMQP_PORT=$(BENCH_AMQP_PORT) $(HARNESS)
BENCH_BIN     := .run/bench/bench

.PHONY: bench
bench: k6 benchstat ## performance run: the targets of docs/PERFORMANCE.md side by side (~15 min; BENCH_QUICK=1: ~4 min); report in .run/bench/latest
	$(GO) build -o $(BENCH_BIN) ./loadtest/bench/cmd/bench
	$(BENCH_HARNESS) run -- $(BENCH_BIN)

.PHONY: bench-go
bench-go: benchstat ## only the pkg/idem Go benchmarks: BENCH_GO_COUNT (8) interleaved runs, medians, benchstat
	$(GO) build -o $(BENCH_BIN) ./loadtest/bench/cmd/bench
	BENCH_PHASES=go $(BENCH_HARNESS) run -- $(BENCH_BIN)

.PHONY: bench-overload
bench-overload: k6 ## offer 1.5x and 2x capacity to this code and BENCH_BASE's (default: merge-base with main) side by side (~10 min; BENCH_SPLIT=0: k6 shares the system's CPUs)
	$(GO) build -o $(BENCH_BIN) ./loadtest/bench/cmd/bench
	@# The system under test on every CPU but the last, k6 and the psp on the last
	@# one (with two or more CPUs): a load generator on the system's own cores
	@# takes the processor the system would use to refuse the excess.
	n=$$(nproc); sys=; load=; \
	if [ "$(BENCH_SPLIT)" != 0 ] && [ "$$n" -ge 2 ]; then sys="taskset --cpu-list 0-$$((n - 2))"; load=$$((n - 1)); \
		echo "bench-overload: the system on CPUs 0-$$((n - 2)), k6 and the psp on CPU $$load (BENCH_SPLIT=0 to share them)"; fi; \
	BENCH_LOAD_CPUS=$$load BENCH_PHASES=overload $$sys env $(BENCH_HARNESS) run -- $(BENCH_BIN)

.PHONY: bench-peer
bench-peer: ## pkg/idem against AWS Powertools idempotency on a private Redis (port 6425, ~6 min); results in .run/bench/peer (BENCH_PEER_OUT, BENCH_PEER_FLAGS)
	cd loadtest/bench/peer/node && npm ci --no-audit --no-fund --loglevel=error
	$(GO) build -o .run/bench/benchpeer ./loadtest/bench/peer/cmd/benchpeer
	.run/bench/benchpeer run -out $(or $(BENCH_PEER_OUT),.run/bench/peer) $(BENCH_PEER_FLAGS)

.PHONY: bench-middleware
bench-middleware: benchstat ## idemhttp against direct pkg/idem calls (BenchmarkMiddleware) and beside Fiber's idempotency middlewares over HTTP, on a private Redis (port BENCH_MW_REDIS_PORT, 6426; ~8 min); results in .run/bench/middleware
	$(GO) test -c -o .run/bench/idemhttp.test ./pkg/idem/idemhttp
	cd loadtest/bench/fiberpeer && GOWORK=off $(GO) build -o $(CURDIR)/.run/bench/fiberpeer .
	.run/bench/fiberpeer run -redis-port $(or $(BENCH_MW_REDIS_PORT),6426) -gotest .run/bench/idemhttp.test -gocount $(or $(BENCH_GO_COUNT),8) -benchstat bin/benchstat -out .run/bench/middleware $(BENCH_MW_FLAGS)

.PHONY: bench-report
bench-report: ## render report.md and the plots of the last bench run again (BENCH_DIR=<run dir> for another)
	$(GO) run ./loadtest/bench/cmd/bench report $(or $(BENCH_DIR),.run/bench/latest)

.PHONY: bench-publish
bench-publish: ## copy the plots of the last bench run (or BENCH_DIR) to docs/img/perf-*.png
	cp $(or $(BENCH_DIR),.run/bench/latest)/perf-*.png docs/img/

.PHONY: benchstat
benchstat: ## install benchstat into bin/ (once)
	@[[ -x bin/benchstat ]] || GOBIN=$(CURDIR)/bin GOWORK=off $(GO) install golang.org/x/perf/cmd/benchstat@latest
