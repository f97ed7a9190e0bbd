# minds-operator. The two commands a newcomer needs: `make demo` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEVCLUSTER := .cache/bin/devcluster
HELM := .cache/bin/helm
PROMTOOL := .cache/bin/promtool
PROMETHEUS := .cache/bin/prometheus
CHART := charts/minds-operator
STAMP := $(VENV)/.installed
# The tools the tests run, by the variables tests/fixtures read.
TOOL_ENV = MINDS_HELM=$(CURDIR)/$(HELM) MINDS_PROMTOOL=$(CURDIR)/$(PROMTOOL) \
	MINDS_PROMETHEUS=$(CURDIR)/$(PROMETHEUS)

.PHONY: help
help: ## Show the targets.
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "Python 3.11 or newer is required (found $$($(PYTHON) --version))"; exit 2; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,embedded]'
	touch $@

.PHONY: venv
venv: $(STAMP) ## Create .venv with the package and its test tools.

.PHONY: tools
tools: system-tools helm prometheus ## Every tool: kubectl and go checked, helm, promtool and prometheus into .cache/bin.

.PHONY: system-tools
system-tools: ## Check (and on Debian as root, install) the system tools: kubectl, go.
	@bash scripts/ensure-tools.sh

.PHONY: helm
helm: ## Build helm v4.3.2 from its Go module into .cache/bin (minutes cold, seconds warm).
	@bash scripts/build-helm.sh $(HELM)

.PHONY: prometheus
prometheus: ## Install promtool and prometheus 2.42 from Debian's package into .cache/bin (seconds).
	@bash scripts/build-prometheus.sh $(dir $(PROMTOOL))

.PHONY: devcluster
devcluster: system-tools ## Build the local control plane and its world (docs/world.md) into .cache/bin.
	@bash tests/cluster/build.sh $(DEVCLUSTER)

.PHONY: crds
crds: venv ## Regenerate crds/ and the chart's crds/ from the models.
	$(BIN)/minds crds generate

.PHONY: lint
lint: venv helm ## ruff, mypy, import-linter, CRD drift, helm lint, hadolint.
	$(BIN)/ruff check .
	$(BIN)/mypy operator/minds
	$(BIN)/lint-imports
	$(BIN)/minds crds generate --check
	$(HELM) lint --strict $(CHART) -f $(CHART)/ci/lint-values.yaml
	$(BIN)/hadolint Dockerfile

.PHONY: unit
unit: venv helm prometheus ## Unit and property tests only (no services).
	$(TOOL_ENV) $(BIN)/pytest tests/unit -q $(PYTEST_ARGS)

# pytest-xdist workers. The unit tests are CPU-bound: one worker per core. The service suites
# mostly wait (on controllers, rollouts, Postgres), so they run more workers than cores; each
# worker starts its own control planes, Postgres and controllers, exactly as a sequential run
# does, and takes whole files (module fixtures pause a worker's own session controller).
# Measured here on 2 cores: the suites wait on clocks (cycles, expiries, rollouts) far more
# than they compute (two workers kept the cores 35% busy mid-run; four, once the probes stopped
# starting a kubectl process per poll, about 65%), so five workers is the default (files
# marked `minutes` start first, tests/conftest.py). xdist would otherwise hand out the files
# with the most tests first (its --loadscope-reorder default), whatever their length, and a
# clock-bound file started last kept one worker busy minutes after the rest were done.
# See README for the times.
CPU_WORKERS ?= $(shell nproc 2>/dev/null || echo 2)
SERVICE_WORKERS ?= 5
# Each pytest run writes a JUnit report here; .ci/run prints the slowest tests from them.
REPORTS := .cache/test-reports
PYTEST_ARGS ?=

.PHONY: test-fast
test-fast: venv helm prometheus lint ## The loop between edits: lint, types, import contracts, unit tests, port contracts over the fakes (3 min warm).
	$(TOOL_ENV) $(BIN)/pytest -q -n $(CPU_WORKERS) --junitxml=$(REPORTS)/fast.xml \
		-m "not e2e and not integration and not image" \
		tests/unit tests/integration/test_port_contracts.py $(PYTEST_ARGS)

.PHONY: test-services
test-services: venv devcluster helm prometheus ## The suites against real services: Postgres, the local control plane, controllers, Prometheus.
	MINDS_DEVCLUSTER=$(CURDIR)/$(DEVCLUSTER) $(TOOL_ENV) $(BIN)/pytest -q \
		-n $(SERVICE_WORKERS) --dist loadfile --no-loadscope-reorder \
		--junitxml=$(REPORTS)/services.xml \
		-m "not image" tests/integration tests/e2e $(PYTEST_ARGS)

.PHONY: test
test: test-fast test-services ## Every check and test but the image build; starts and stops services.

.PHONY: test-node
test-node: venv devcluster helm prometheus ## The real node (root): Pods that really run, the chart installed for real (docs/world.md).
	@bash scripts/ensure-tools.sh --node
	MINDS_DEVCLUSTER=$(CURDIR)/$(DEVCLUSTER) MINDS_IMAGE_BASE=$${MINDS_IMAGE_BASE:-$$(bash scripts/image-base.sh)} \
		$(TOOL_ENV) $(BIN)/pytest -q -p no:xdist --junitxml=$(REPORTS)/node.xml tests/node $(PYTEST_ARGS)

.PHONY: image-test
image-test: venv ## Build the image with buildah and run the CLI in it (slow; CI runs it).
	MINDS_IMAGE_BASE=$${MINDS_IMAGE_BASE:-$$(bash scripts/image-base.sh)} $(BIN)/pytest tests/image -m image \
		--junitxml=$(REPORTS)/image.xml

# The image's dependencies, pinned with their hashes (the Dockerfile installs exactly these):
# the runtime dependencies of pyproject.toml and its build backend, resolved for every Python
# the package supports (markers where they differ), by uv in a virtualenv of its own.
# `make lock` keeps the pins pyproject.toml still allows; `make lock LOCK_ARGS=--upgrade`
# takes the newest.
UV_VERSION := 0.13.9
UV := .cache/lock-tools/bin/uv
LOCK_ARGS ?=
LOCK_COMPILE = $(UV) pip compile --quiet --universal --python-version 3.11 --generate-hashes \
	--custom-compile-command 'make lock' $(LOCK_ARGS)

$(UV):
	$(PYTHON) -m venv .cache/lock-tools
	.cache/lock-tools/bin/pip install --quiet uv==$(UV_VERSION)

.PHONY: lock
lock: $(UV) ## Regenerate requirements/image.lock and build.lock (hashed pins) from pyproject.toml.
	$(LOCK_COMPILE) pyproject.toml -o requirements/image.lock
	$(PYTHON) -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"], sep="\n")' \
		| $(LOCK_COMPILE) - -o requirements/build.lock

.PHONY: bench
bench: venv devcluster helm ## Benchmark the executor on a fresh devcluster; rewrites docs/benchmarks.md.
	$(BIN)/pip install --quiet -e '.[bench]'
	MINDS_DEVCLUSTER=$(CURDIR)/$(DEVCLUSTER) $(BIN)/python -m bench.executor_bench

.PHONY: demo
demo: venv tools ## Start everything; a mind notices a broken workload and asks to restart it.
ifeq ($(KUBECONFIG),)
	@bash tests/cluster/build.sh $(DEVCLUSTER)
	MINDS_DEVCLUSTER=$(CURDIR)/$(DEVCLUSTER) $(BIN)/minds demo
else
	$(BIN)/minds demo
endif

.PHONY: down
down: ## Stop what `make demo` started.
	@test -x $(BIN)/minds && $(BIN)/minds dev down || echo "nothing to stop"

.PHONY: clean
clean: down ## Remove the virtualenv, caches and local state.
	rm -rf $(VENV) .cache .dev .pytest_cache .mypy_cache .ruff_cache
