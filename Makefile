# `make run`: the product (a private csd and the cs> shell on it). `make test`: the whole suite.
# `make fuzz`: 10^5 hostile frames at a real csd (tests/fuzz; CI sends a few thousand).
# Both create or refresh the local virtualenv in .venv first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test fuzz install clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/cs --embedded

test: $(STAMP)
	$(PY) -m pytest

FUZZ_FRAMES ?= 100000
fuzz: $(STAMP)
	FUZZ_FRAMES=$(FUZZ_FRAMES) $(PY) -m pytest -q -s tests/fuzz

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
