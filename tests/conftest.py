import pytest

from tests.harness import Daemon


@pytest.fixture
def csd():
    daemon = Daemon().start()
    yield daemon
    daemon.cleanup()


@pytest.fixture
def make_csd():
    """Build a daemon with custom settings; started or not as the test decides."""
    made = []

    def make(**kwargs) -> Daemon:
        daemon = Daemon(**kwargs)
        made.append(daemon)
        return daemon

    yield make
    for daemon in made:
        daemon.cleanup()


@pytest.fixture
def faulty_csd(make_csd, monkeypatch):
    """A csd with fault switches (tests/faulty_csd.py); not started."""
    d = make_csd()
    d.launcher = ["-m", "tests.faulty_csd"]
    monkeypatch.setenv("CSD_FAULT_DIR", d.dir)
    return d
