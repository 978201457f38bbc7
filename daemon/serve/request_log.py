"""What csd keeps of each request it finished: its metrics and log line, and for a request that
changed nothing (a refusal, a retry) its audit record. The request path (daemon/serve/dispatch.py) and
the commit path (daemon/serve/commit.py) both finish requests, so they share one RequestLog.

Changes are audited with their commit (their record is written in the same transaction); what
is recorded here goes through the audit trail's batches, rate-limited per key (daemon/serve/audit.py).
"""

from __future__ import annotations

import logging
import time

from . import audit
from .audit import AuditTrail
from .context import Caller


class RequestLog:
    def __init__(self, log, audit_trail: AuditTrail, metrics):
        self.log = log
        self.audit = audit_trail
        self.metrics = metrics  # daemon/metrics/no_metrics.py: counts requests, denials and commits

    @property
    def log(self):
        return self._logger

    @log.setter
    def log(self, logger) -> None:
        """Set the logger (csd's reload replaces it); a read's DEBUG line is built only if it shows."""
        self._logger = logger
        is_enabled_for = getattr(logger, "is_enabled_for", None)
        self._debug = is_enabled_for(logging.DEBUG) if is_enabled_for else True

    def refused(self, caller: Caller, op, args, outcome: str, message: str) -> None:
        """Record a request that changed nothing (rate-limited, written in a batch)."""
        self.audit.add(caller.name, audit.record(caller.name, caller.role, op, args, outcome, message))

    def done(self, mutating: bool, request_id, op, caller: Caller, outcome: str, started: float) -> None:
        """Count a finished request and log it: a change at INFO, a read (or a hot op) at DEBUG."""
        seconds = time.perf_counter() - started
        self.metrics.observe_request(op, outcome, seconds)
        if not (mutating or self._debug):  # a filtered DEBUG line: not even its fields are built
            return
        emit = self.log.info if mutating else self.log.debug
        emit(
            "request", id=request_id, op=op, client=caller.name, role=caller.role,
            outcome=outcome, latency_ms=round(seconds * 1000, 3),
        )
