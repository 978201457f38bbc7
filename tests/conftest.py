"""The suite's fixtures and its tiers (docs/design.md, "Tests").

Every test falls in one tier, by the file it is in (a test marked by hand keeps its mark):
- `unit`: the model and single units in this process; no csd, no child process (enforced below,
  so a unit test that starts one fails and says so). `make test-fast` runs these.
- `real`: real external components beyond csd itself: systemd, Slurm daemons, a Prometheus
  server, the fuzz suite.
- `integration`: everything else: against real csd processes, and the checks too long for the
  unit tier's 30 s (cstorch/amp/test_formats_exhaustive.py: CB16 rounding of every float32).
`make test` runs all three."""

import os
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.harness import Daemon

TESTS = Path(__file__).parent

# Run in the background of a script (`make test &`, nohup), pytest starts with SIGINT ignored, and
# an ignored signal stays ignored across exec: every csd, shell and runtime the tests start would
# shrug off the Ctrl-C the interrupt tests send it. Its default handler is reset at exec instead.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# The suite's caches (the inventory's parsed TOML, csadmin/clientlib/inventory_cache.py) go to a directory of
# its own, never the developer's ~/.cache; child processes inherit it.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="cs-test-cache-")

# Files (or folders, ending in "/") whose tests need no process, relative to tests/.
UNIT = (
    "statemachine/", "appliance/",
    "cstorch/amp/test_loss_scaling.py", "cstorch/amp/test_formats.py", "cstorch/storage/test_checkpoint.py",
    "cstorch/data/test_dataloader.py", "cstorch/optim/test_lr_scheduler.py", "cstorch/optim/test_optimizer.py",
    "cstorch/optim/test_scheduler.py", "cstorch/sparse/test_sparsity.py",
    "cstorch/data/test_sampler.py", "cstorch/backend/test_cluster_resolver.py", "cstorch/backend/test_csx_debug.py",
    "cstorch/test_nn.py",
    "cstorch/metrics/test_accuracy_perplexity.py", "cstorch/tensorboard/test_ctrl_c_while_logging.py",
    "csadmin/test_command_table.py", "csadmin/test_completer.py", "csadmin/test_inventory_cache.py",
    "csadmin/test_errors.py", "csadmin/test_states.py", "csadmin/test_atomic_write.py",
    "daemon/test_args.py", "daemon/test_audit.py", "daemon/test_commands.py", "daemon/test_dispatch.py",
    "daemon/test_event_filter.py",
    "daemon/test_read_path.py", "daemon/test_replies.py", "daemon/test_roles_doc.py", "daemon/test_store.py",
    "test_ops.py", "test_docs.py",
)
# Tests of real components other than csd (they skip, saying why, where the component is missing).
REAL = (
    "systemd/", "slurm/", "fuzz/",
    "daemon/test_metrics_prometheus.py", "daemon/test_metrics_dashboard.py",
)


def tier_of(path: Path) -> str:
    """The tier of the tests in `path` (a test file under tests/)."""
    name = path.relative_to(TESTS).as_posix()
    if any(name == entry or name.startswith(entry) for entry in UNIT):
        return "unit"
    if any(name == entry or name.startswith(entry) for entry in REAL):
        return "real"
    return "integration"


TIERS = ("unit", "integration", "real")


def _holds_unit_files(folder: Path) -> bool:
    """Whether `folder` (under tests/) is, or holds, or is inside an entry of UNIT."""
    name = folder.relative_to(TESTS).as_posix() + "/"
    return any(entry.startswith(name) or name.startswith(entry) for entry in UNIT)


def pytest_ignore_collect(collection_path: Path, config):
    """`-m unit` (`make test-fast`) collects only the unit tier's files. The tier is given by
    file (a test is marked `unit` nowhere else: pytest_collection_modifyitems refuses it), so the
    rest holds no unit test, and importing it all (every csd, launcher and cstorch test, its
    assertions rewritten each run where bytecode is not cached) would cost the tier seconds."""
    if config.getoption("markexpr") != "unit" or TESTS not in collection_path.parents:
        return None
    if collection_path.is_dir():
        return None if _holds_unit_files(collection_path) else True
    if collection_path.name.startswith("test_") and collection_path.suffix == ".py":
        return None if tier_of(collection_path) == "unit" else True
    return None


def pytest_collection_modifyitems(items):
    for item in items:
        # A test marked with its tier by hand (one that needs a process in a unit file) keeps it;
        # only a unit file's test may be marked unit, since `-m unit` reads no other file.
        if item.get_closest_marker("unit") and tier_of(Path(item.path)) != "unit":
            raise pytest.UsageError(f"{item.nodeid} is marked unit outside the unit tier's files: "
                                    "add its file to UNIT in tests/conftest.py instead")
        if not any(item.get_closest_marker(tier) for tier in TIERS):
            item.add_marker(tier_of(Path(item.path)))
    _groups_first_real_then_integration_then_unit(items)


# A parallel run (`make test`: pytest-xdist) hands each worker whole groups of tests, run one after
# another in file order as in a serial run: a module's tests share its fixtures of module scope (a
# shared csd, a Slurm cluster, a booted container) and what one test leaves for the next. A folder
# listed here is one group: its real components are host-wide (a systemd container's tests compare
# the host's mount table and /run/systemd before and after, so no two may run at once).
HOST_WIDE = ("systemd/",)


def worker_group(nodeid: str) -> str:
    """The group of the test `nodeid` (as pytest names it, from the root: "tests/…::test_…")."""
    path = nodeid.split("::", 1)[0]
    name = Path(path).relative_to(TESTS.name).as_posix() if path.startswith(TESTS.name + "/") else path
    return next((folder for folder in HOST_WIDE if name.startswith(folder)), name)


def _groups_first_real_then_integration_then_unit(items):
    """Order the run so that the longest groups, the real components', start first and the many
    short unit tests fill the workers' last gaps (collection order within a group is kept)."""
    rank = {"real": 0, "integration": 1, "unit": 2}
    items.sort(key=lambda item: rank[next(t for t in TIERS if item.get_closest_marker(t))])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        """xdist's scheduling by scope, where the scope is `worker_group` and groups are handed out
        in collection order (see `_groups_first_real_then_integration_then_unit`)."""

        def _split_scope(self, nodeid: str) -> str:
            return worker_group(nodeid)

    config.option.loadscopereorder = False
    return ByGroup(config, log)


@pytest.fixture(autouse=True)
def _unit_tests_start_no_process(request, monkeypatch):
    """A `unit` test that starts a child process (a csd, a shell, git) belongs in another tier:
    fail it here, so `make test-fast` stays fast and honest."""
    if request.node.get_closest_marker("unit") is None:
        return

    def refuse(self, args, *rest, **kwargs):
        raise AssertionError(f"a unit test started a process ({args!r}): move its file out of UNIT "
                             "in tests/conftest.py")

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)


# What a test sharing its module's csd must leave as it found it (`system.show`, less its clock).
SHARED_STATE = ("state", "systemHealth", "activeExecmode", "configuredExecmode", "pendingUntil", "runHolder",
                "slurmJob", "activeFaults")


def _shared_state(daemon: Daemon) -> dict | None:
    """The part of csd's state a shared daemon must keep, or None if csd no longer answers."""
    if daemon.proc.poll() is not None:
        return None
    try:
        with daemon.client(timeout=5.0, retries=0) as c:
            shown = c.system_show()
    except Exception:  # noqa: BLE001 - any failure to answer means: replace this csd
        return None
    return {key: shown[key] for key in SHARED_STATE}


@pytest.fixture(scope="module")
def _module_csd():
    """The csd a module's `shared_csd` tests share, started on first use; replaced when a test
    leaves it changed or stopped (see `csd`)."""
    held: dict = {}  # "daemon": the Daemon, "state": its SHARED_STATE at start
    yield held
    if "daemon" in held:
        held["daemon"].cleanup()


@pytest.fixture
def csd(request):
    """A real csd, started for this test. A test (or module, `pytestmark`) marked `shared_csd`
    shares one csd with the other such tests of its module instead, unless marked `own_csd`:
    for tests that change nothing they do not undo, or whose changes no later test can see
    (a read, a refusal, a key of their own). Each still starts from the same state: when a test
    leaves csd's state changed (`SHARED_STATE`) or csd stopped, the next test gets a fresh one."""
    if not request.node.get_closest_marker("shared_csd") or request.node.get_closest_marker("own_csd"):
        daemon = Daemon().start()
        yield daemon
        daemon.cleanup()
        return
    held = request.getfixturevalue("_module_csd")
    if "daemon" not in held:
        held["daemon"] = Daemon().start()
        held["state"] = _shared_state(held["daemon"])
    daemon = held["daemon"]
    yield daemon
    if _shared_state(daemon) != held["state"]:
        daemon.cleanup()
        del held["daemon"]


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
