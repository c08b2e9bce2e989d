# R&R Studio. `make` lists the targets.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8501
# The tests run on this many processes (pytest-xdist): most of their time is spent waiting on
# browsers, servers and subprocesses, so three keep a 2-core machine busy. TEST_WORKERS=0: one.
TEST_WORKERS ?= 3
# Offline tokenizer files: tiktoken reads them from here when the folder exists.
# (Only when the folder exists: an empty TIKTOKEN_CACHE_DIR would switch tiktoken's cache off.)
SHARED_TIKTOKEN := $(abspath ../shared/tiktoken)
ifneq ($(wildcard $(SHARED_TIKTOKEN)),)
export TIKTOKEN_CACHE_DIR ?= $(SHARED_TIKTOKEN)
endif

.PHONY: help run test lint typecheck bench samples clean team team-stop

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(BIN)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt
	@touch $@

$(BIN)/.installed-dev: $(BIN)/.installed requirements-dev.txt
	$(BIN)/pip install --quiet -r requirements-dev.txt
	# The Every Eval Ever schemas the Lab's export is validated against in the tests: the
	# package says Python >= 3.12, but its schemas and jsonschema (already here) are all we use.
	$(BIN)/pip install --quiet --no-deps --ignore-requires-python every-eval-ever==0.3.0
	@touch $@

run: $(BIN)/.installed ## set up and open the app (no key needed: offline engine + samples)
	$(BIN)/streamlit run app.py --server.port $(PORT)

test: $(BIN)/.installed-dev ## set up and run the tests (the browser test needs Debian's chromium)
	@# The project's modules compiled once: the tests start many Python processes (app
	@# servers, workers, commands), and where PYTHONDONTWRITEBYTECODE is set each compiled them again.
	$(BIN)/python -m compileall -q rr_core pages app.py
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

lint: $(BIN)/.installed-dev ## ruff check + format check, the whole project
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(BIN)/.installed-dev ## mypy on rr_core, pages and app.py
	$(BIN)/mypy

bench: $(BIN)/.installed-dev ## run the benchmarks (they print ratios against a floor)
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

team: $(BIN)/.installed ## team mode trial: PostgreSQL, a worker, 2 replicas, nginx (TEAM_ARGS=--mock-oidc: sign-in)
	RR_PYTHON=$(abspath $(BIN))/python deploy/team.sh $(TEAM_ARGS)

team-stop: ## stop what make team started
	deploy/team.sh stop

samples: $(BIN)/.installed ## write the generated sample documents to samples_out/
	$(BIN)/python -m rr_core samples --write samples_out

clean: ## remove the virtual environment and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis artifacts
