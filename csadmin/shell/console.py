"""The shell's console: prompt_toolkit dialogs for questions, and the in-place progress line
written straight to the terminal (no prompt is drawn while a command runs, so nothing else is
competing for the line; patch_stdout's proxy would hold a line without a newline back)."""

from __future__ import annotations

import sys

from prompt_toolkit import PromptSession

from ..cli.console import PlainConsole


class ShellConsole(PlainConsole):
    in_shell = True

    def __init__(self):
        super().__init__(interactive=True, progress_stream=sys.__stdout__)
        self._questions: PromptSession = PromptSession()

    def confirm(self, question: str) -> bool:
        try:
            answer = self._questions.prompt(f"{question} [y/N] ")
        except (EOFError, KeyboardInterrupt):
            return False
        return answer.strip().lower() in ("y", "yes")
