"""How a command talks to the person (or script) running it, without prompt_toolkit.

`PlainConsole` serves one-shot commands and scripts; the interactive shell has its own
(csadmin/shell/console.py) with prompt_toolkit dialogs. Actions only use this interface.
"""

from __future__ import annotations

import sys

from .colour import Paint, wanted


# The keys of a selection menu (execution mode), shown under it.
CHOICE_KEYS = " ↑/↓ or a number: move   Enter: select   Ctrl-C: cancel "


class PlainConsole:
    in_shell = False  # the interactive cs> shell's console says True (shell/console.py)

    def __init__(self, interactive: bool, stdout=None, stderr=None, progress_stream=None):
        #: whether a person is there to answer questions
        self.interactive = interactive
        self._stdout, self._stderr, self._progress_stream = stdout, stderr, progress_stream
        self._progress_shown = False

    # Looked up at each use, so a shell's patch_stdout (installed after start-up) takes effect.
    @property
    def stdout(self):
        return self._stdout or sys.stdout

    @property
    def stderr(self):
        return self._stderr or sys.stderr

    @property
    def paint(self) -> Paint:
        """Colours for what `out` writes (none unless stdout is a terminal and NO_COLOR is unset)."""
        return Paint(wanted(self.stdout))

    @property
    def err_paint(self) -> Paint:
        return Paint(wanted(self.stderr))

    @property
    def progress_stream(self):
        return self._progress_stream or self.stdout

    def out(self, text: str) -> None:
        self._end_progress()
        print(text, file=self.stdout, flush=True)

    def err(self, text: str) -> None:
        self._end_progress()
        print(text, file=self.stderr, flush=True)

    def confirm(self, question: str) -> bool:
        """Ask a yes/no question; "no" unless answered yes (Ctrl-C and end of input are "no")."""
        try:
            answer = input(f"{question} [y/N] ").strip().lower()
        except (KeyboardInterrupt, EOFError):
            print(file=self.stdout, flush=True)  # off the question's line, after the terminal's ^C
            return False
        return answer in ("y", "yes")

    def choose(self, message: str, options: list[tuple[str, str]], default: str | None = None) -> str | None:
        """One of `options`' values, picked from a menu; None if the person pressed Ctrl-C."""
        from prompt_toolkit.shortcuts import choice  # only a person at a terminal pays for this import

        try:
            return choice(message=message, options=options, default=default, bottom_toolbar=CHOICE_KEYS)
        except (KeyboardInterrupt, EOFError):
            return None

    def progress(self, text: str) -> None:
        """A transient status line, redrawn in place on a terminal; silent otherwise."""
        if self.progress_stream.isatty():
            self.progress_stream.write(f"\r{text}\x1b[K")
            self.progress_stream.flush()
            self._progress_shown = True

    def _end_progress(self) -> None:
        if self._progress_shown:
            self.progress_stream.write("\r\x1b[K")
            self.progress_stream.flush()
            self._progress_shown = False
