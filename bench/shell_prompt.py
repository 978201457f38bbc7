"""The `cs>` shell's time to prompt (target ≤ 250 ms): from spawning `cs` on a real pty until
`cs> ` is drawn on it.

How: csd runs from the installed wheel; `cs` (installed, compiled) starts on a fresh pty of
80×24 with TERM=xterm-256color, its connection file and an admin key, and an empty history. The
terminal's answers to cursor-position queries are given at once, as a terminal would. The
output is read as it comes; the time is taken when the text without escape sequences first
holds `cs>` (the space after it is drawn as a cursor move). Then Ctrl-D ends the shell.
`shell_runs` runs (again if other users took CPU meanwhile: suite.rounds); medians.
"""

from __future__ import annotations

import fcntl
import os
import random
import re
import select
import statistics
import struct
import subprocess
import termios
import time

NAME = "shell"
ESCAPES = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]")
CURSOR_QUERY = b"\x1b[6n"
PROMPT = b"cs>"  # prompt_toolkit draws the space after it as a cursor move


def time_to_prompt(argv: list[str], env: dict, timeout: float = 20.0) -> float:
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True,
                            close_fds=True)
    os.close(slave)
    seen, answered, prompt_at = b"", 0, None
    try:
        while prompt_at is None:
            left = timeout - (time.perf_counter() - t0)
            if left <= 0:
                raise RuntimeError(f"no `cs>` prompt within {timeout} s; the pty showed: {seen[-500:]!r}")
            if not select.select([master], [], [], left)[0]:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the shell exited
                raise RuntimeError(f"cs exited before its prompt: {seen[-500:]!r}") from None
            seen += chunk
            while seen.count(CURSOR_QUERY) > answered:  # answer like a terminal at row 1, column 1
                os.write(master, b"\x1b[1;1R")
                answered += 1
            if PROMPT in ESCAPES.sub(b"", seen):
                prompt_at = time.perf_counter()
        os.write(master, b"\x04")  # Ctrl-D: leave
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        _drain_and_close(master)
    return (prompt_at - t0) * 1000


def _drain_and_close(fd: int) -> None:
    try:
        while select.select([fd], [], [], 0)[0]:
            if not os.read(fd, 65536):
                break
    except OSError:
        pass
    os.close(fd)


def run(bench) -> tuple[list[dict], dict]:
    from contenders import Csd
    from machine import loadavg
    from stats import row, summary, target

    csd = Csd(bench)
    try:
        csd.start()
        state_home = bench.tmpdir("shell-state")
        env = {k: v for k, v in os.environ.items() if not k.startswith("CS_")}
        env.update(CS_CONNECT=csd.connection_file, CS_KEY=csd.key_files["admin"], TERM="xterm-256color",
                   XDG_STATE_HOME=state_home, COLUMNS="80", LINES="24")
        argv = bench.pinning.client([bench.bin("csd", "cs")])
        time_to_prompt(argv, env)  # page cache warm

        def runs() -> dict:
            load1, times = loadavg()[0], []
            for _ in range(bench.settings.shell_runs):
                times.append(time_to_prompt(argv, env))
                time.sleep(random.uniform(0, 0.05))  # no fixed rhythm (see oneshot.py)
            return {"ms": times, "load1": load1}

        result = bench.rounds("shell", [("runs", runs)])["runs"]
    finally:
        csd.stop()
    times = result["ms"]
    bench.say(f"  cs> drawn after {statistics.median(times):.0f} ms (median of {len(times)})")
    return [row("shell_prompt", "`cs>` shell: spawn to prompt drawn (real pty)", summary(times, "ms"),
                target=target("<=", 250, "≤ 250 ms"), load=[result["load1"]], busy=[result["others_cpus"]])], result
