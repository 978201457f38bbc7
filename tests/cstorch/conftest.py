"""Fixtures for csadmin.cstorch against a real csd: one csd in weight streaming per module (runs
end between tests, so they share it), and a fresh cstorch runtime for every test (configure is
once per process; runtime.reset() closes any run still open, as the process's end would)."""

import pytest

from csadmin.cstorch import runtime
from tests.cstorch.helpers import weight_streaming
from tests.harness import Daemon


@pytest.fixture(scope="module")
def ws_csd():
    daemon = Daemon().start()
    weight_streaming(daemon)
    yield daemon
    daemon.cleanup()


@pytest.fixture(autouse=True)
def fresh_runtime():
    runtime.reset()
    yield
    runtime.reset()
