# make run: the default sweep. make test: lint and the whole test suite (CI). make test-fast: the
# fast layer for the edit-test loop; test-torch, test-jax, test-tensorflow, test-e2e: one layer.
# All set up .venv first. The layers: tests/layers.py; which test is where: docs/architecture.md.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORES ?= 8
# More snakemake arguments for `make run`, e.g. RUN_ARGS="--configfile config/test.yaml".
RUN_ARGS ?=

.PHONY: setup run test test-fast test-torch test-jax test-tensorflow test-e2e lint format clean-venv

setup: $(STAMP)

# Rebuilt when the requirements or the package metadata change (stale venv).
$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $@

# A lock left by a sweep killed outright is cleared first, only when no live Snakemake holds it.
run: setup
	$(BIN)/python -m fwbench.io.stale_lock $(RUN_ARGS)
	$(BIN)/snakemake --cores $(CORES) $(RUN_ARGS)

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/snakefmt --check Snakefile workflow/rules
	# --sdm conda: rules name their envs only when jobs are deployed with conda (common.smk)
	$(BIN)/snakemake --lint --sdm conda --cores 1

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .
	$(BIN)/snakefmt Snakefile workflow/rules

# Each layer in a pytest process of its own; every layer runs, and the last lines count them all.
TEST_ENV := PATH="$(CURDIR)/$(BIN):$$PATH"
test: setup lint
	$(TEST_ENV) $(BIN)/python tests/run_layers.py

test-fast test-torch test-jax test-tensorflow test-e2e: test-%: setup
	$(TEST_ENV) $(BIN)/python -m pytest -m $*

clean-venv:
	rm -rf $(VENV)
