"""Join tokens for a run's input workers (issue #15), for run.open and run.program.

csd draws the token (256 random bits), so the model stays deterministic: only its digest enters
the model (statemachine/workers.py), and the token itself leaves csd once, in the reply to the
request that asked for worker slots.
"""

from __future__ import annotations

import secrets

from csadmin.statemachine.workers import token_digest


def draw(slots: int) -> tuple[str | None, str | None]:
    """(token, its digest) for `slots` worker slots; (None, None) for none."""
    if not slots:
        return None, None
    token = secrets.token_urlsafe(32)
    return token, token_digest(token)


def handed_out(result: dict, token: str | None, slots: int) -> dict:
    """`result` with the token and a message saying what to do with it (unchanged without one)."""
    if token is None:
        return result
    message = f"{result['message']} {slots} input worker(s) may join it with run.join and the joinToken."
    return {**result, "message": message, "joinToken": token}
