"""A real pty running the `cs>` shell, rendered by a terminal emulator (pyte) so tests can assert
what a person sees: the toolbar, lines printed above the prompt, the line being typed."""

from __future__ import annotations

import os
import sys
import time

import pexpect
import pyte

from tests.harness import ROOT

COLS, ROWS = 140, 30


class _AnsweringScreen(pyte.HistoryScreen):
    """Answers the program's cursor-position requests (CSI 6n) as a real terminal does;
    prompt_toolkit only draws the bottom toolbar once it knows where the cursor is. Keeps the
    lines that scroll off the top, as a terminal's scrollback does: where the prompt sits
    depends on when the cursor-position answer arrives, so output may scroll."""

    answer = None

    def write_process_input(self, data: str) -> None:
        if self.answer is not None:
            self.answer(data)


class Terminal:
    def __init__(self, csd=None, extra_env=None, args=(), env=None, command=None, cwd=ROOT):
        """The shell on `csd` (its connection file and admin key), or with `env` as given
        (e.g. `cs --embedded`, which makes its own csd); `command` runs something else that
        starts the shell (e.g. make)."""
        env = dict(env) if env is not None else csd.env()
        if csd is not None:
            env["XDG_STATE_HOME"] = os.path.join(csd.dir, "xdg")
        env["TERM"] = "xterm"
        env.update(extra_env or {})
        program, argv = command if command else (sys.executable, ["-m", "csadmin", *args])
        self.child = pexpect.spawn(program, argv, env=env, cwd=cwd, encoding="utf-8", timeout=20,
                                   dimensions=(ROWS, COLS))
        self.screen = _AnsweringScreen(COLS, ROWS, history=2000)
        self.screen.answer = self.child.send
        self.stream = pyte.Stream(self.screen)
        self.raw = ""

    def pump(self, wait: float = 0.05) -> None:
        try:
            while True:
                data = self.child.read_nonblocking(65536, timeout=wait)
                self.raw += data
                self.stream.feed(data)
                wait = 0.01
        except (pexpect.TIMEOUT, pexpect.EOF):
            pass

    def lines(self) -> list[str]:
        """Scrollback, then the visible screen (its last line is the toolbar)."""
        cols = self.screen.columns
        scrolled = ["".join(line[x].data for x in range(cols)).rstrip() for line in self.screen.history.top]
        return scrolled + [line.rstrip() for line in self.screen.display]

    def text(self) -> str:
        return "\n".join(self.lines())

    def wait_for(self, predicate, timeout: float = 20.0, what: str = "screen condition"):
        deadline = time.monotonic() + timeout
        while True:
            self.pump()
            if predicate(self):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; screen:\n{self.text()}")

    def wait_text(self, text: str, timeout: float = 20.0) -> None:
        self.wait_for(lambda t: text in t.text(), timeout, what=repr(text))

    def prompt_line(self) -> str:
        """The last line starting with `cs>` (the one being typed)."""
        candidates = [line for line in self.lines() if line.startswith("cs>")]
        return candidates[-1] if candidates else ""

    def toolbar(self) -> str:
        return self.lines()[-1]

    def send(self, keys: str) -> None:
        self.child.send(keys)

    def close(self) -> int | None:
        if self.child.isalive():
            self.child.sendeof()
            try:
                self.child.expect(pexpect.EOF, timeout=10)
            except pexpect.TIMEOUT:
                pass
        self.child.close()
        return self.child.exitstatus
