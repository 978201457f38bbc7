"""A runtime developer's first contact: help(Client), the examples' own recipes and --help, and
event times in the console. Real processes: `cs --embedded`, the examples, `cs` against csd."""

import json
import os
import pydoc
import re
import subprocess
import sys

from csadmin.client import Client
from tests.harness import ROOT, wait_until


def test_help_of_client_shows_its_real_arguments_and_docstrings():
    text = pydoc.render_doc(Client, renderer=pydoc.plaintext)
    assert "*args, **kwargs" not in text
    for argument in ("endpoint", "timeout", "connect", "key", "server_key"):
        assert re.search(rf"\b{argument}: '[^']+' = ", text), argument
    assert "A connection to csd" in text and "$CS_KEY" in text
    public = [name for name in dir(Client) if not name.startswith("_") and callable(getattr(Client, name))]
    assert [name for name in public if not (getattr(Client, name).__doc__ or "").strip()] == []


def _env_without_cs() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CS_")}
    env["PYTHONPATH"] = ROOT
    return env


def _train_loop(env: dict, *args: str, out: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "train_loop.py"), *args, "--batches", "2", "--batch-seconds",
         "0.01", "--size-bytes", "1000", "--performance-dir", out],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=120,
    )


def test_train_loops_own_recipe_works_against_cs_embedded(tmp_path):
    """The docstring's recipe: `cs --embedded` prints `export CS_CONNECT=… CS_KEY=…`; with those
    exported, `train_loop.py --performance-dir out` runs (it failed with exit 5: no key)."""
    doc = open(os.path.join(ROOT, "examples", "train_loop.py")).read()
    assert "python examples/train_loop.py --performance-dir out" in doc and "CS_KEY" in doc and "--key" in doc
    # stdin a pipe: the embedded csd lives until cs has read its (empty) script, i.e. until we close it.
    cs = subprocess.Popen([sys.executable, "-m", "csadmin", "--embedded"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env_without_cs(), cwd=ROOT)
    try:
        lines = []
        wait_until(lambda: lines.append(cs.stderr.readline()) or "export CS_CONNECT=" in lines[-1], timeout=60,
                   what="cs --embedded to say how to reach its csd")
        exported = dict(pair.split("=", 1) for pair in lines[-1].split("export", 1)[1].split())
        assert set(exported) == {"CS_CONNECT", "CS_KEY"}
        r = _train_loop({**_env_without_cs(), **exported}, out=str(tmp_path / "env"))
        assert r.returncode == 0, r.stderr
        assert json.loads((tmp_path / "env" / "performance.json").read_text())["total_samples"] == 512
        # The same with the options instead of the environment.
        r = _train_loop(_env_without_cs(), "--connect", exported["CS_CONNECT"], "--key", exported["CS_KEY"],
                        out=str(tmp_path / "flags"))
        assert r.returncode == 0, r.stderr
    finally:
        cs.stdin.close()
        assert cs.wait(timeout=60) == 0


def test_every_example_takes_the_same_connection_options():
    for example in ("train_loop.py", "fault_tolerant_loop.py", "input_workers.py"):
        r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", example), "--help"], capture_output=True,
                           text=True, env={**_env_without_cs(), "XDG_CONFIG_HOME": ""}, cwd=ROOT, timeout=60)
        assert r.returncode == 0, r.stderr
        help_text = " ".join(r.stdout.split())
        for option in ("--connect FILE", "--key FILE", "--endpoint URL", "--server-key KEY"):
            assert option in help_text, (example, option)
        # csadmin/clientlib/credentials.py's default, not ~/.config/csadmin/ as input_workers.py said.
        assert "~/.config/cs/client.key_secret" in help_text and ".config/csadmin" not in help_text, example


def test_expected_completion_shows_as_local_time_and_json_keeps_the_number(csd):
    with csd.client() as c:
        c.system_standby()
        c.wait_for(state="STANDBY", timeout=10)
        pending = c.events_show(event_type="EventPendingStandby")[-1]
    ms = pending["details"]["expectedCompletion"]
    r = csd.cs("events", "show", "--event-type", "EventPendingStandby")
    assert r.returncode == 0, r.stderr
    from csadmin.cli.render import fmt_ms

    assert f"expectedCompletion={fmt_ms(ms)}" in r.stdout and str(ms) not in r.stdout
    r = csd.cs("events", "show", "--event-type", "EventPendingStandby", "--output-format", "json")
    assert json.loads(r.stdout)["events"][-1]["details"]["expectedCompletion"] == ms
