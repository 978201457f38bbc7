import pytest

from tests.csadmin.terminal import Terminal


@pytest.fixture
def term(csd):
    """The `cs>` shell on a real pty against `csd`, once its prompt and toolbar are up."""
    t = Terminal(csd)
    t.wait_for(lambda t: t.prompt_line().startswith("cs>") and "ACTIVE" in t.toolbar(), what="prompt and toolbar")
    yield t
    t.close()
