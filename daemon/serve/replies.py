"""The replies of recent mutating requests, so a retry gets its first reply and never a second
side effect.

Keyed on (client, id) with the id's JSON type kept (7 and "7" are different requests), and each
entry remembers what was asked: a fingerprint of the op and its canonical args. A request that
reuses an id for something else is refused (`Reused`), never answered with another request's
reply. Bounded: the oldest entries go first.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict

from csadmin.shared import protocol


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True)  # one, not one per call


def fingerprint(op: str, args: dict) -> str:
    """What a request asks for, canonically (key order does not matter; 1 and "1" differ)."""
    text = _CANONICAL.encode([op, args])
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


class Reused(Exception):
    """The id was already used by this client for a different request."""


class ReplyCache:
    def __init__(self, keep: int = 10_000, rows=()):
        """`rows`: (client, id key, fingerprint, reply) as the store keeps them, oldest first."""
        self.keep = keep
        self._entries: OrderedDict[tuple[bytes, str], tuple[str, bytes]] = OrderedDict(
            ((client, key), (fp, reply)) for client, key, fp, reply in rows
        )
        while len(self._entries) > keep:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, client: bytes, request_id, fp: str) -> bytes | None:
        """The first reply to this very request, None if it is new; raises Reused if the id
        was used for another request."""
        entry = self._entries.get((client, protocol.id_key(request_id)))
        if entry is None:
            return None
        if entry[0] != fp:
            raise Reused()
        return entry[1]

    def remember(self, client: bytes, request_id, fp: str, reply: bytes) -> tuple[bytes, str, str, bytes]:
        """Keep `reply`; return the row the store keeps for it."""
        key = protocol.id_key(request_id)
        self._entries[(client, key)] = (fp, reply)
        self._entries.move_to_end((client, key))
        if len(self._entries) > self.keep:
            self._entries.popitem(last=False)
        return client, key, fp, reply


class LastReplies:
    """Each client's last reply only, for hot ops (run.stream, run.heartbeat): a client waits
    for its reply before it sends its next request, so the last one is the only one it can
    retry. A retry of it gets the first reply (samples are never counted twice); its id reused
    for another request is refused (`Reused`); an earlier id is not remembered. Memory: one
    entry per client (socket identity), at most `clients`, the least recently heard first out.
    Same interface as ReplyCache."""

    def __init__(self, clients: int = 10_000):
        self.clients = clients
        self._last: OrderedDict[bytes, tuple[str, str, bytes]] = OrderedDict()  # client -> (id key, fp, reply)

    def __len__(self) -> int:
        return len(self._last)

    def lookup(self, client: bytes, request_id, fp: str) -> bytes | None:
        entry = self._last.get(client)
        if entry is None or entry[0] != protocol.id_key(request_id):
            return None
        if entry[1] != fp:
            raise Reused()
        return entry[2]

    def remember(self, client: bytes, request_id, fp: str, reply: bytes) -> None:
        self._last[client] = (protocol.id_key(request_id), fp, reply)
        self._last.move_to_end(client)
        if len(self._last) > self.clients:
            self._last.popitem(last=False)
