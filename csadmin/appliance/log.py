"""`cerebras.appliance.log`: the package's logging names, as ModelZoo 2.10 uses them.

Two levels beside logging's own: VERBOSE (15, between INFO and DEBUG) and TRACE (5, below DEBUG),
with `logger.verbose(...)` and `logger.trace(...)` on every logger under "cerebras" once
register_levels() has run (the runner, `python -m csadmin.cstorch`, runs it when it registers
this package as `cerebras.appliance`; the real package does it on import). `named_class_logger`
gives a class its logger (`cerebras.<module>.<class>`, or the namespace it names) and the
`_should_log_*` checks of the ClassLogger protocol. Loggers under "cerebras.wsc" set the levels of
the cluster's servers on the real system; collect_wsc_log_settings() reads them the same way here,
though no server here reads them.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import ClassVar, Optional, Protocol

ROOTNAME = "cerebras"
WSC_ROOTNAME = f"{ROOTNAME}.wsc"

CRITICAL = logging.CRITICAL
FATAL = logging.FATAL
ERROR = logging.ERROR
WARNING = logging.WARNING
INFO = logging.INFO
VERBOSE = logging.INFO - 5
DEBUG = logging.DEBUG
TRACE = logging.DEBUG - 5
NOTSET = logging.NOTSET

logger = logging.getLogger(ROOTNAME)
wsc_logger = logging.getLogger(WSC_ROOTNAME)

_CUSTOM = {VERBOSE: "VERBOSE", TRACE: "TRACE"}
ROLES = ("crd", "wrk", "wgt", "act", "cmd", "br", "chf")
MODES = ("compile", "execute")


def get_level_name(level):
    """logging.getLevelName, knowing VERBOSE and TRACE: a name (any case) gives its number, a
    number its name."""
    if isinstance(level, str):
        level = level.upper()
    for number, name in _CUSTOM.items():
        if level == name:
            return number
        if level == number:
            return name
    return logging.getLevelName(level)


class ClassLogger(Protocol):
    """What named_class_logger gives a class: its `logger` and the `_should_log_*` checks."""

    logger: ClassVar[logging.Logger]

    @classmethod
    def _should_log_info(cls) -> bool: ...

    @classmethod
    def _should_log_verbose(cls) -> bool: ...

    @classmethod
    def _should_log_debug(cls) -> bool: ...

    @classmethod
    def _should_log_trace(cls) -> bool: ...


def named_class_logger(cls_or_namespace=None):
    """Decorate a class with its logger: `@named_class_logger` names it after the class's module
    and name, `@named_class_logger("ns")` after `cerebras.ns` (a name already under "cerebras."
    is kept)."""
    if isinstance(cls_or_namespace, type):
        return _with_logger(cls_or_namespace, None)
    if cls_or_namespace is None or isinstance(cls_or_namespace, str):
        return lambda cls: _with_logger(cls, cls_or_namespace)
    raise TypeError(f"`cls_or_namespace` must be a type, str, or None. Got `{type(cls_or_namespace)}`.")


def _with_logger(cls, name: Optional[str]):
    if name:
        qualified = name if name.startswith(f"{ROOTNAME}.") else f"{ROOTNAME}.{name}"
    else:
        qualified = f"{ROOTNAME}.{cls.__module__}.{cls.__name__}"
    cls.logger = logging.getLogger(qualified)
    for method, level in (("info", INFO), ("verbose", VERBOSE), ("debug", DEBUG), ("trace", TRACE)):
        setattr(cls, f"_should_log_{method}", classmethod(lambda c, level=level: c.logger.isEnabledFor(level)))
    return cls


def register_levels() -> None:
    """Give VERBOSE and TRACE their names, and every logger under "cerebras", now and later, the
    methods `verbose` and `trace` (ModelZoo calls them). Idempotent."""
    manager = logging.Logger.manager
    if getattr(manager.getLogger, "_cerebras_levels", False):
        return
    for number, name in _CUSTOM.items():
        logging.addLevelName(number, name)
    plain = manager.getLogger

    def get_logger(name):
        found = plain(name)
        _extend(name, found)
        return found

    get_logger._cerebras_levels = True
    for name, existing in list(manager.loggerDict.items()):
        _extend(name, existing)
    manager.getLogger = get_logger


def _extend(name: str, found) -> None:
    if isinstance(found, logging.Logger) and (name == ROOTNAME or name.startswith(ROOTNAME + ".")):
        found.verbose = _at_level(found, VERBOSE)
        found.trace = _at_level(found, TRACE)


def _at_level(found: logging.Logger, level: int):
    """`found.log(level, ...)`, reporting its caller's line (one frame up) as its own."""
    def log_at(msg, *args, stacklevel: int = 1, **kwargs):
        found.log(level, msg, *args, stacklevel=stacklevel + 1, **kwargs)

    return log_at


@dataclass(order=False)
class WscLogSetting:
    """One server log setting: `level` for the loggers tagged `tag`, in `mode`, of `role`
    (None: all)."""

    level: int
    tag: Optional[str] = None
    mode: Optional[str] = None
    role: Optional[str] = None

    def __post_init__(self):
        if not isinstance(self.level, int) or self.level <= NOTSET:
            raise ValueError(f"`level` must be an integer greater than {NOTSET}, but got {self.level}.")
        if self.mode is not None and self.mode not in MODES:
            raise ValueError(f"`mode` must be one of {list(MODES)}, but got {self.mode}.")
        if self.role is not None and self.role not in ROLES:
            raise ValueError(f"`role` must be one of {list(ROLES)}, but got {self.role}.")

    def __lt__(self, other):
        """Generic before specific: a setting for all modes (roles, tags) sorts before one for a
        single mode (role, tag)."""
        if not isinstance(other, WscLogSetting):
            return NotImplemented
        mine, theirs = [], []
        for attr in ("mode", "role", "tag"):
            a, b = getattr(self, attr), getattr(other, attr)
            if (a is None) != (b is None):
                return a is None
            mine.append(a)
            theirs.append(b)
        return mine < theirs


def collect_wsc_log_settings() -> list[WscLogSetting]:
    """The levels set on loggers named `cerebras.wsc[.<mode>][.<role>][.tag]`, generic first; a
    logger under cerebras.wsc named otherwise is warned about and left out."""
    pattern = re.compile(rf"{re.escape(WSC_ROOTNAME)}(?:\.<(?P<mode>{'|'.join(MODES)})>)?"
                         rf"(?:\.<(?P<role>{'|'.join(ROLES)})>)?(?:\.(?P<tag>[^<>]+))?")
    settings = []
    for name, found in list(logging.Logger.manager.loggerDict.items()):
        if not isinstance(found, logging.Logger) or found.level == NOTSET:
            continue
        if name != WSC_ROOTNAME and not name.startswith(WSC_ROOTNAME + "."):
            continue
        match = pattern.fullmatch(name)
        if match is None:
            logger.warning(f"Invalid Wafer-Scale Cluster server log specification: `{name}`. This log setting has "
                           f"no effect and will be ignored. Expected {WSC_ROOTNAME}.<mode>.<role>.<tag>, where mode "
                           f"is one of {'|'.join(MODES)} and role one of {'|'.join(ROLES)}.")
            continue
        settings.append(WscLogSetting(found.level, match["tag"], match["mode"], match["role"]))
    return sorted(settings)
