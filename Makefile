# `make run`: the product (a private csd and the cs> shell on it). `make test`: the whole suite.
# `make fuzz`: 10^5 hostile frames at a real csd, and many more generated metrics requests,
# scenario texts and Slurm environments than CI's (tests/fuzz; CI runs a few hundred of each).
# Both create or refresh the local virtualenv in .venv first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# PyTorch for csadmin.cstorch, pinned so pip takes the CPU wheel this machine kind keeps on disk
# (pip's find-links) instead of PyPI's newest build with ~3 GB of CUDA packages.
TORCH ?= torch==2.13.0

.PHONY: run test fuzz install clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet '$(TORCH)'
	$(PY) -m pip install --quiet -e '.[test,cstorch]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/cs --embedded

test: $(STAMP)
	$(PY) -m pytest

FUZZ_FRAMES ?= 100000
FUZZ_HTTP_HEADS ?= 20000
FUZZ_SCENARIOS ?= 20000
FUZZ_SLURM_ENVS ?= 3000
fuzz: $(STAMP)
	FUZZ_FRAMES=$(FUZZ_FRAMES) FUZZ_HTTP_HEADS=$(FUZZ_HTTP_HEADS) FUZZ_SCENARIOS=$(FUZZ_SCENARIOS) \
	FUZZ_SLURM_ENVS=$(FUZZ_SLURM_ENVS) $(PY) -m pytest -q -s tests/fuzz

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
