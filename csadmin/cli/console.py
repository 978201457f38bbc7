"""How a command talks to the person (or script) running it, without prompt_toolkit.

`PlainConsole` serves one-shot commands and scripts; the interactive shell has its own
(csadmin/shell/console.py) with prompt_toolkit dialogs. Actions only use this interface.
"""

from __future__ import annotations

import sys


class PlainConsole:
    def __init__(self, interactive: bool, stdout=None, stderr=None):
        #: whether a person is there to answer questions
        self.interactive = interactive
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr
        self._progress_shown = False

    def out(self, text: str) -> None:
        self._end_progress()
        print(text, file=self.stdout, flush=True)

    def err(self, text: str) -> None:
        self._end_progress()
        print(text, file=self.stderr, flush=True)

    def confirm(self, question: str) -> bool:
        answer = input(f"{question} [y/N] ").strip().lower()
        return answer in ("y", "yes")

    def choose(self, message: str, options: list[tuple[str, str]], default: str | None = None) -> str:
        from prompt_toolkit.shortcuts import choice  # only a person at a terminal pays for this import

        return choice(message=message, options=options, default=default)

    def progress(self, text: str) -> None:
        """A transient status line, redrawn in place on a terminal; silent otherwise."""
        if self.stdout.isatty():
            self.stdout.write(f"\r{text}\x1b[K")
            self.stdout.flush()
            self._progress_shown = True

    def _end_progress(self) -> None:
        if self._progress_shown:
            self.stdout.write("\r\x1b[K")
            self._progress_shown = False
