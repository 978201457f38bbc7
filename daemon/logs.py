"""structlog set-up: JSON lines when stdout is not a terminal (journald, files), a readable
console rendering when it is. Level filtering happens in the bound logger itself, so a DEBUG
call on the hot path costs a no-op method call."""

from __future__ import annotations

import logging
import sys

import structlog

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


def configure(level: str = "info", fmt: str = "auto") -> structlog.typing.FilteringBoundLogger:
    as_json = fmt == "json" or (fmt == "auto" and not sys.stdout.isatty())
    renderer = structlog.processors.JSONRenderer() if as_json else structlog.dev.ConsoleRenderer(colors=False)
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(LEVELS[level]),
        logger_factory=structlog.PrintLoggerFactory(sys.stdout),
        cache_logger_on_first_use=True,
    )
    return structlog.get_logger("csd")
