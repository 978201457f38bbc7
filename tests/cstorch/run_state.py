"""A fresh cstorch backend for each library test (the backend is process-wide, csadmin.cstorch.backend.process_backend).

    from tests.cstorch.run_state import fresh_run  # noqa: F401  (pytest finds the fixture by name)

The fixture is the new backend: a test sets what it needs of the run on it (`fresh_run.execmode`,
`fresh_run.run.step`, `fresh_run.config`). `configured` is that backend as R1.8's
cstorch.configure leaves it (a default Config, csd not contacted): what a cstorch optimizer
needs to be built, as the real one needs a backend.

    pytestmark = pytest.mark.usefixtures("configured")
"""

import pytest

from csadmin.cstorch.backend import process_backend
from csadmin.cstorch.backend.config import Config


@pytest.fixture(autouse=True)
def fresh_run():
    yield process_backend.reset()
    process_backend.reset()


@pytest.fixture
def configured(fresh_run):
    fresh_run.config = Config()
    return fresh_run
