# coterie — `make run` starts a chat room in the terminal; `make test` runs every check.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
CONFIG ?= config/coterie.toml

.PHONY: run test lint typecheck unit install peers clean bench fuzz faults postgres nginx docs dist

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml examples/coterie-house-rules/pyproject.toml examples/coterie-cofd/pyproject.toml
	$(BIN)/pip install --quiet -e ".[test,lint,slack,telegram,matrix,charts,bench,docs,postgres,release]"
	$(BIN)/pip install --quiet -e examples/coterie-house-rules
	$(BIN)/pip install --quiet -e examples/coterie-cofd
	touch $(STAMP)

# Peers the tests run against, installed by `make test` itself:
# a real Synapse homeserver (its own virtualenv: its dependencies are not ours) ...
SYNAPSE_VENV  := .venv-synapse
SYNAPSE_STAMP := $(SYNAPSE_VENV)/.installed
SYNAPSE_VERSION ?= 1.163.2
$(SYNAPSE_STAMP):
	$(PYTHON) -m venv $(SYNAPSE_VENV)
	$(SYNAPSE_VENV)/bin/python -m pip install --quiet "matrix-synapse==$(SYNAPSE_VERSION)"
	touch $(SYNAPSE_STAMP)

# ... and the npm Telegram Bot API emulator, pinned in tests/telegram/package.json.
NODE_DIR   := tests/telegram
NODE_STAMP := $(NODE_DIR)/node_modules/.installed
$(NODE_STAMP): $(NODE_DIR)/package.json
	npm install --prefix $(NODE_DIR) --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)

# ... and Debian's PostgreSQL server binaries: tests/pg.py runs a throwaway cluster from them
# (initdb in a temporary directory, on 127.0.0.1), never the system's own server.
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || \
	{ if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; \
	  else sudo -n sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql'; fi; } || \
	{ echo "make postgres: cannot install PostgreSQL (apt-get install postgresql as root)"; exit 1; }

# ... and Debian's nginx: tests/nginx.py runs a throwaway one on 127.0.0.1 (deploy/nginx.conf)
# in front of several `coterie run` workers (tests/test_scale.py, bench/scale.py).
nginx:
	@command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || \
	{ if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx; \
	  else sudo -n sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx'; fi; } || \
	{ echo "make nginx: cannot install nginx (apt-get install nginx as root)"; exit 1; }

peers: $(SYNAPSE_STAMP) $(NODE_STAMP) postgres nginx

install: $(STAMP)

run: $(STAMP)
	$(BIN)/coterie chat --config $(CONFIG)

test: $(STAMP) lint typecheck docs unit

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

# bench/ is checked with tests/ on the path: the benchmarks import the tests' fakes
typecheck: $(STAMP)
	MYPYPATH=bench:tests $(BIN)/mypy core/coterie adapters/coterie_* plugins/coterie_* \
		examples/coterie-cofd/coterie_cofd bench

# The API reference of the public modules (mkdocs.yml): any warning fails the build.
docs: $(STAMP)
	$(BIN)/mkdocs build --strict --quiet

unit: $(STAMP) peers
	$(BIN)/pytest -q

bench: $(STAMP) peers
	$(BIN)/pip install --quiet -e ".[bench]"
	$(BIN)/python bench/core_roll.py --processes 5
	$(BIN)/python bench/instructions.py
	$(BIN)/python bench/instructions.py --syscalls
	$(BIN)/python bench/startup.py
	$(BIN)/python bench/pg_round_trips.py
	$(BIN)/python bench/log_line.py
	$(BIN)/python bench/throughput.py --rounds 3
	$(BIN)/python bench/sqlite_statements.py
	$(BIN)/python bench/memory.py
	$(BIN)/python bench/odds.py
	$(BIN)/python bench/matrix_latency.py
	$(BIN)/python bench/scale.py

# The fault battery, long form (make test runs the short one): SIGTERM and SIGINT under load and
# kill -9 mid-flood against real workers — Slack (HTTP) and Telegram (webhook) with their fakes on
# PostgreSQL, Telegram polling, Matrix on a real Synapse — printing a table (sent, answered,
# answered twice, lost), then the faults the adapter tests drive against their peers: a homeserver
# restart and 150 commands while away (Synapse), Slack retries and 5xx and a reply posted before a
# crash, Telegram redelivery and time-outs, a hanging plugin, a flood.
faults: $(STAMP) peers
	COTERIE_FAULTS=long $(BIN)/pytest -q -s tests/test_faults.py
	$(BIN)/pytest -q tests/test_command_limits.py tests/test_ratelimit.py tests/test_ratelimit_shared.py \
		tests/test_events.py tests/test_supervise.py
	$(BIN)/pytest -q tests/test_slack_http.py tests/test_telegram_polling.py tests/test_telegram_webhook.py \
		-k "retr or redeliver or again or twice or flood or hanging or 5xx or time or crash or acknowledged or lease"
	$(BIN)/pytest -q tests/test_matrix.py -k "restart or away or catch or same_device"

# Long fuzzing of the chat path with atheris (libFuzzer); FUZZ_SECONDS bounds the run.
FUZZ_SECONDS ?= 300
fuzz: $(STAMP)
	$(BIN)/pip install --quiet -e ".[fuzz]"
	mkdir -p fuzz/corpus
	$(BIN)/python fuzz/fuzz_chat.py -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
		-max_len=4096 -rss_limit_mb=4096 -dict=fuzz/chat.dict -artifact_prefix=fuzz/ \
		fuzz/corpus fuzz/seeds

# The wheels a release publishes: coterie (core, rule sets, adapters) and the example plugin, checked
# with twine and installed into a clean virtual environment (coterie --version, one roll).
# `make test` runs the same check (tests/test_dist.py).
dist: $(STAMP)
	rm -rf dist
	$(BIN)/pip wheel --quiet --no-deps --wheel-dir dist . examples/coterie-house-rules
	$(BIN)/python tests/dist_check.py dist

clean:
	rm -rf dist $(VENV) $(SYNAPSE_VENV) $(NODE_DIR)/node_modules .pytest_cache .mypy_cache .ruff_cache .hypothesis
