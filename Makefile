# coterie — `make run` starts a chat room in the terminal; `make test` runs every check.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
CONFIG ?= config/coterie.toml

.PHONY: run test lint typecheck unit install peers clean bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml examples/coterie-house-rules/pyproject.toml
	$(BIN)/pip install --quiet -e ".[test,lint,slack,telegram,matrix,charts]"
	$(BIN)/pip install --quiet -e examples/coterie-house-rules
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

peers: $(SYNAPSE_STAMP) $(NODE_STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/coterie chat --config $(CONFIG)

test: $(STAMP) lint typecheck unit

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy core/coterie adapters/coterie_* plugins/coterie_*

unit: $(STAMP) peers
	$(BIN)/pytest -q

bench: $(STAMP) peers
	$(BIN)/pip install --quiet -e ".[bench]"
	$(BIN)/python bench/core_roll.py
	$(BIN)/python bench/odds.py
	$(BIN)/python bench/matrix_latency.py

clean:
	rm -rf $(VENV) $(SYNAPSE_VENV) $(NODE_DIR)/node_modules .pytest_cache .mypy_cache .ruff_cache .hypothesis
