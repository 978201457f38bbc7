"""structlog set-up: JSON lines when stdout is not a terminal (journald, files), a readable
console rendering when it is.

Every line has `event` (what happened), `level`, `timestamp` (ISO 8601, UTC) and `logger`
(`csd` for csd's own lines; the stdlib logger's name, e.g. `transitions.core`, for library
lines). Library logs (pyzmq, transitions, …) go through the stdlib `logging` module; a
`structlog.stdlib.ProcessorFormatter` on the root logger renders them with the same processors,
so the output is one format. csd's own lines skip `logging` entirely: level filtering happens in
the bound logger itself, so a DEBUG call on the hot path costs a no-op method call.
"""

from __future__ import annotations

import logging
import sys

import structlog

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


def _renderer(fmt: str):
    as_json = fmt == "json" or (fmt == "auto" and not sys.stdout.isatty())
    return structlog.processors.JSONRenderer() if as_json else structlog.dev.ConsoleRenderer(colors=False)


def configure(level: str = "info", fmt: str = "auto") -> structlog.typing.FilteringBoundLogger:
    """Set up csd's and the libraries' logging; may be called again (SIGHUP) with new settings.
    Returns csd's logger; loggers obtained before a re-configure keep the old settings."""
    renderer = _renderer(fmt)
    shared = [
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[*shared, structlog.processors.format_exc_info, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(LEVELS[level]),
        logger_factory=structlog.PrintLoggerFactory(sys.stdout),
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[structlog.stdlib.add_logger_name, *shared, structlog.processors.format_exc_info],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(LEVELS[level])
    # transitions logs two INFO lines per state change, restating what csd's own `request` and
    # `timers_fired` lines say: keep them for debugging only.
    logging.getLogger("transitions").setLevel(logging.DEBUG if level == "debug" else logging.WARNING)
    logging.captureWarnings(True)
    return structlog.get_logger("csd").bind(logger="csd")
