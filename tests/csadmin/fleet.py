"""Several real csd as one site: an inventory file naming them (each with its own admin key, as
separate systems have), and the real `cs` run against it."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from tests.harness import ROOT, Daemon


class Fleet:
    def __init__(self, daemons: dict[str, Daemon], tags: dict[str, list[str]] | None = None):
        self.daemons = daemons
        self.dir = tempfile.mkdtemp(prefix="fleet-t-")
        self.inventory = os.path.join(self.dir, "systems.toml")
        tags = tags or {}
        with open(self.inventory, "w") as f:
            for name, d in daemons.items():
                f.write(f'[systems.{name}]\nconnect = "{d.connection_file}"\nkey = "{d.admin_key}"\n'
                        f"tags = {tags.get(name, [])!r}\n\n".replace("'", '"'))

    def env(self, **extra) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CS_")}
        env.update({"CS_INVENTORY": self.inventory, "PYTHONPATH": ROOT, **extra})
        return env

    def cs(self, *args: str, input: str = "", timeout: float = 60, **env) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "csadmin", *args], input=input, capture_output=True, text=True,
                              env=self.env(**env), timeout=timeout, cwd=ROOT)

    def popen(self, *args: str, **env) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "csadmin", *args], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env(**env),
                                cwd=ROOT)

    def cleanup(self) -> None:
        import shutil

        for d in self.daemons.values():
            d.cleanup()
        shutil.rmtree(self.dir, ignore_errors=True)


def four_systems(activate_seconds: float = 0.05, standby_seconds: float = 0.05) -> tuple[Fleet, object]:
    """The issue's site: `up` fine, `down` stopped, `busy` with a run holding its fabric, `sick`
    with a critical fault injected. Returns the fleet and the open run (close it at the end)."""
    daemons = {name: Daemon(activate_seconds=activate_seconds, standby_seconds=standby_seconds,
                            extra_args=["--serial", f"CS2-000{i}"])
               for i, name in enumerate(("up", "down", "busy", "sick"), start=1)}
    fleet = Fleet(daemons, tags={"up": ["lab", "ws"], "down": ["lab"], "busy": ["prod"], "sick": ["prod", "ws"]})
    for d in daemons.values():
        d.start()
    daemons["down"].stop()
    trainer = daemons["busy"].add_key("trainer", "operator")
    runtime = daemons["busy"].client(key=trainer)
    run = runtime.open_run(mode="train", owner="job-7", lease_seconds=600)
    with daemons["sick"].client() as c:
        c.fault_inject("health-critical")
    return fleet, (runtime, run)
