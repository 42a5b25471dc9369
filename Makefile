# coterie — `make run` starts a chat room in the terminal; `make test` runs every check.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
CONFIG ?= config/coterie.toml

.PHONY: run test lint typecheck unit install clean bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml examples/coterie-house-rules/pyproject.toml
	$(BIN)/pip install --quiet -e ".[test,lint,slack]"
	$(BIN)/pip install --quiet -e examples/coterie-house-rules
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/coterie chat --config $(CONFIG)

test: $(STAMP) lint typecheck unit

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy core/coterie adapters/coterie_* plugins/coterie_*

unit: $(STAMP)
	$(BIN)/pytest -q

bench: $(STAMP)
	$(BIN)/pip install --quiet -e ".[bench]"
	$(BIN)/python bench/core_roll.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
