"""Fixtures for csadmin.cstorch against a real csd: one csd in weight streaming per module (runs
end between tests, so they share it), and a fresh cstorch backend for every test (configure is
once per process; process_backend.reset() closes any run still open, as the process's end would)."""

import os

import pytest
import torch

from csadmin.cstorch.backend import process_backend
from tests.cstorch.helpers import ws_csd  # noqa: F401  (the fixture, for every cstorch test)


# One intra-op thread for the steps these tests run in the test process: `make test` runs several
# test processes per core, and torch's OpenMP threads, which spin while they wait for each other,
# then starve one another (these tests took 2.5x the CPU, and their steps' timing assumptions broke).
torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def fresh_runtime():
    process_backend.reset()
    yield
    process_backend.reset()


# The compiled step (core/fused.py) costs an Inductor compile per program, tens of seconds on
# this suite's 2 cores: the suite runs the replay unless the run asks for the compiler
# (CSTORCH_FUSE=1); tests/cstorch/core/test_fused.py turns it on for its own small program.
os.environ.setdefault("CSTORCH_FUSE", "0")
