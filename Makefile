# `make run`: the product (a private csd and the cs> shell on it), installed with only what the
# product needs. `make test`: the whole suite, in parallel workers, with the test tools and the
# cstorch extra (torch, h5py). `make fuzz`: 10^5 hostile frames at a real csd, 400 damaged state directories, and many
# more generated metrics requests, scenario texts and Slurm environments than CI's (tests/fuzz; CI
# sends a few thousand frames, damages 16 and runs a few hundred of each of the rest). Each
# creates or refreshes the local virtualenv in .venv first. `make completions` regenerates
# completions/ (bash, zsh) from the command table. `make test-fast`: only the unit tier (the model
# and single units, no process; tests/conftest.py), in under 30 s, to run before every commit.
# `make docs`: the documentation site (mkdocs.yml) built strictly into site/; open site/index.html.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PRODUCT_STAMP := $(VENV)/.product
STAMP := $(VENV)/.installed
DOCS_STAMP := $(VENV)/.docs
# PyTorch for csadmin.cstorch, pinned so pip takes the CPU wheel this machine kind keeps on disk
# (pip's find-links) instead of PyPI's newest build with ~3 GB of CUDA packages.
TORCH ?= torch==2.13.0
# ModelZoo 2.10's bigcode_eval (its trainer imports it on every path): not on the registry; the
# archive its requirements pin is in ../shared beside the checkout (tests/zoo skip without it).
BIGCODE ?= ../shared/modelzoo/bigcode-evaluation-harness-f0b81a9.tar.gz

.PHONY: run test test-fast fuzz install completions docs clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# The product alone: csadmin and its runtime dependencies (no pytest, hypothesis, pexpect, torch).
$(PRODUCT_STAMP): pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet -e .
	touch $(PRODUCT_STAMP)

# Everything the suite needs: the product, the test tools, the cstorch extra, and what ModelZoo
# 2.10's fit path imports (the zoo extra, bigcode_eval from ../shared where it is).
$(STAMP): pyproject.toml $(PRODUCT_STAMP)
	$(PY) -m pip install --quiet '$(TORCH)'
	$(PY) -m pip install --quiet -e '.[test,cstorch]'
	$(PY) -m pip install --quiet -e '.[zoo]'
	if [ -f $(BIGCODE) ]; then $(PY) -m pip install --quiet --no-deps $(BIGCODE); fi
	touch $(STAMP)

install: $(STAMP)

run: $(PRODUCT_STAMP)
	$(VENV)/bin/cs --embedded

# The suite in TEST_JOBS worker processes (pytest-xdist): most tests wait on a csd, a pty or a
# daemon rather than compute, so more workers than cores pay; each worker takes whole modules
# (tests/conftest.py, worker_group). TEST_JOBS=0 runs it in this one process. Tests marked
# `alone` measure this CPU's speed (the simulated device is this CPU), so they run afterwards, by
# themselves: beside other tests their measurement is of the neighbours.
TEST_JOBS ?= 4
test: $(STAMP)
	$(PY) -m pytest -n $(TEST_JOBS) -m 'not alone'
	$(PY) -m pytest -m alone

test-fast: $(STAMP)
	$(PY) -m pytest -q -m unit

FUZZ_FRAMES ?= 100000
FUZZ_DAMAGE ?= 400
FUZZ_HTTP_HEADS ?= 20000
FUZZ_SCENARIOS ?= 20000
FUZZ_SLURM_ENVS ?= 3000
fuzz: $(STAMP)
	FUZZ_FRAMES=$(FUZZ_FRAMES) FUZZ_DAMAGE=$(FUZZ_DAMAGE) FUZZ_HTTP_HEADS=$(FUZZ_HTTP_HEADS) \
	FUZZ_SCENARIOS=$(FUZZ_SCENARIOS) FUZZ_SLURM_ENVS=$(FUZZ_SLURM_ENVS) $(PY) -m pytest -q -s tests/fuzz

completions: $(PRODUCT_STAMP)
	$(PY) -m csadmin.cli.shell_completion completions

# The site's tools (the `docs` extra: mkdocs, mkdocstrings, the Material theme), beside the product.
# mkdocstrings reads the modules' source without importing them, so torch is not needed.
$(DOCS_STAMP): pyproject.toml $(PRODUCT_STAMP)
	$(PY) -m pip install --quiet -e '.[docs]'
	touch $(DOCS_STAMP)

# Strict: a broken link or anchor, a page left out of the nav, or a docstring that does not render
# fails the build. NO_MKDOCS_2_WARNING silences the Material theme's banner about MkDocs' future.
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) build site *.egg-info .pytest_cache .hypothesis
