"""The outcomes a rule table gives a request: carry it out, succeed without change, or refuse.

The tables are data (lifecycle_rules.py, run_rules.py); the model looks a request up and applies
what it finds. Messages and next steps are written once, next to the rule, and may name fields of
the request in braces ({run_id}), filled in when the rule is applied.
"""

from __future__ import annotations

from dataclasses import dataclass

from csadmin.errors import CsError


@dataclass(frozen=True)
class Go:
    """The request is allowed: carry it out."""


@dataclass(frozen=True)
class Already:
    """Already where the request would lead: succeed, change nothing (idempotent repeat)."""

    message: str

    def filled(self, **fields) -> "Already":
        return Already(self.message.format(**fields))


@dataclass(frozen=True)
class Refuse:
    """Refuse with `error` (a csadmin.errors class), saying what happened and what to do next."""

    error: type[CsError]
    message: str
    hint: str

    def refusal(self, **fields) -> CsError:
        """The error to raise, its message and hint filled in with `fields`."""
        return self.error(self.message.format(**fields), self.hint.format(**fields))


GO = Go()
