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

# in-modules runs $(1) inside every workspace module (`go list -m` in workspace
# mode lists them), prints one summary line per module and fails if any failed.
# $(2) names the step in the summary.
define in-modules
	@mods=$$($(GO) list -m -f '{{.Dir}}'); \
	[[ -n $$mods ]] || { echo "no Go modules found (is go.work there?)" >&2; exit 1; }; \
	failed=0; summary=''; \
	for dir in $$mods; do \
		mod=$${dir#$(CURDIR)/}; \
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
test: lint ## lint, then run every module's tests against real Redis/Postgres/RabbitMQ (started and stopped by scripts/harness)
	$(HARNESS) run -- $(MAKE) test-go

.PHONY: test-go
test-go: ## go test -race -count=1 -p 1 ./... in every module (needs the services: see make harness-up)
	$(call in-modules,$(GO) test -race -count=1 -p 1 ./...,test)

.PHONY: lint
lint: ## gofmt check and go vet in every module (reports both before failing)
	@status=0; \
	unformatted=$$(gofmt -l $$($(GO) list -m -f '{{.Dir}}') | sed 's|^$(CURDIR)/||'); \
	if [[ -n $$unformatted ]]; then \
		echo "gofmt: these files need formatting (make fmt):" >&2; \
		echo "$$unformatted" | sed 's/^/  /' >&2; \
		status=1; \
	fi; \
	$(MAKE) vet || status=1; \
	exit $$status

.PHONY: vet
vet: ## go vet ./... in every module
	$(call in-modules,$(GO) vet ./...,vet)

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
clean: ## stop the harness, then delete .run (all local state) and bin
	ONCEPAY_RUN_DIR=$(CURDIR)/.run $(HARNESS) down
	rm -rf .run bin
