# make run: the default sweep. make test: the whole test suite. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORES ?= 8
# More snakemake arguments for `make run`, e.g. RUN_ARGS="--configfile config/test.yaml".
RUN_ARGS ?=

.PHONY: setup run test lint format clean-venv

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

test: setup lint
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest

clean-venv:
	rm -rf $(VENV)
