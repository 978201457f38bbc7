"""A fresh cstorch run state for each library test (the state is process-wide, csadmin.cstorch.current).

    from tests.cstorch.run_state import fresh_run  # noqa: F401  (pytest finds the fixture by name)
"""

import pytest

from csadmin.cstorch import current


@pytest.fixture(autouse=True)
def fresh_run():
    current.reset()
    yield current.state()
    current.reset()
