"""The outcomes a rule table gives a request: carry it out, succeed without change, or refuse.

Shared by the lifecycle table (device.py) and the run table (run_rules.py); each defines its
own `Refuse`, since a lifecycle refusal is always INVALID_STATE while a run's names its error.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Go:
    """The request is allowed: carry it out."""


@dataclass(frozen=True)
class Already:
    """Already where the request would lead: succeed, change nothing (idempotent repeat)."""

    message: str


GO = Go()
