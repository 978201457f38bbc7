"""Group commit: the durable changes drained in one loop turn, applied in order and made durable
by one SQLite commit (one fsync) instead of one each.

The group is one open change on the model (statemachine/change.py) with each request applied in
its own inner change inside it: a request the model refuses undoes only itself, and a commit
that fails undoes the whole group, leaving the model as it was before the first of them. Every
request keeps what it would have had alone — its reply, its audit record, its reply-cache entry,
its events — but its reply waits for the commit (daemon/serve/dispatch.py sends it after, never before).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from csadmin.shared import protocol
from csadmin.statemachine.change import Change
from csadmin.statemachine.device import Device
from csadmin.statemachine.events import Event

from .context import Caller


@dataclass
class Staged:
    """One request applied in the group, waiting for its commit."""

    client: bytes
    request_id: object
    key: str  # the request id as the reply cache and the store key it (protocol.id_key)
    fp: str  # what it asked (daemon/serve/replies.py)
    reply: bytes  # sent once the group is committed
    outcome: str  # "ok" or the error code
    op: str
    args: dict
    caller: Caller
    started: float  # perf_counter() when it arrived, for its log line
    row: tuple | None  # its audit record if it changed the model (committed with it); None if refused
    message: str = ""  # the refusal's message (audited once the group is committed)
    hot: bool = False  # a hot op that emitted events: committed at once, logged at DEBUG


class Group:
    """The durable changes applied since the last commit (empty between loop turns)."""

    def __init__(self, device: Device):
        self._device = device
        self._outer: Change | None = None
        self.staged: list[Staged] = []
        self._keys: set[tuple[bytes, str]] = set()

    def __bool__(self) -> bool:
        return self._outer is not None or bool(self.staged)

    def holds(self, client: bytes, request_id) -> bool:
        """Whether this request id of this client is waiting in the group (a retry must wait for it)."""
        return bool(self._keys) and (client, protocol.id_key(request_id)) in self._keys

    def apply(self, execute: Callable[[], dict]) -> dict:
        """Run `execute()` (a request on the model) in its own change inside the group's; if it
        raises, only what it did is undone."""
        if self._outer is not None:
            with self._device.change():
                return execute()
        # The group's first request needs no change of its own: the group's undoes only it.
        outer = self._device.change().__enter__()
        try:
            result = execute()
        except BaseException as exc:
            if getattr(exc, "keeps_change", False):  # attempted and failed: what it did is history
                self._outer = outer
            else:
                outer.__exit__(type(exc), exc, exc.__traceback__)
            raise
        self._outer = outer
        return result

    def add(self, staged: Staged) -> None:
        self.staged.append(staged)
        self._keys.add((staged.client, staged.key))

    @property
    def events(self) -> list[Event]:
        """The events the group's requests emitted, in order."""
        return self._outer.events if self._outer is not None else []

    def dirty_runs(self) -> list[dict]:
        return self._outer.dirty_runs() if self._outer is not None else []

    def close(self, failure: BaseException | None = None) -> list[Staged]:
        """End the group: keep everything it did, or, given the `failure` that stopped its
        commit, undo all of it. Returns the staged requests, in order."""
        outer, staged = self._outer, self.staged
        self._outer, self.staged = None, []
        self._keys.clear()
        if outer is not None:
            if failure is None:
                outer.__exit__(None, None, None)
            else:
                outer.__exit__(type(failure), failure, failure.__traceback__)
        return staged
