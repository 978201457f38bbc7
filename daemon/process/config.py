"""csd's settings: built-in defaults < the config file (TOML) < command-line flags.

The file is `/etc/csd/csd.toml` unless `--config PATH` or `$CSD_CONFIG` names another. A missing
default file is fine (defaults apply); a missing file that was asked for is an error. Every key is
one top-level setting named like its flag (`--activate-seconds` ↔ `activate_seconds`); an unknown
key, a wrong type or a bad value is an error that names the key and the file, never silence.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import asdict, dataclass, field, fields

from csadmin import errors
from csadmin.shared import connection
from csadmin.statemachine.defaults import KEEP_EVENTS, SERIAL, Timings

DEFAULT_CONFIG_PATH = "/etc/csd/csd.toml"
LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("auto", "json", "console")
# Settings a SIGHUP applies to the running daemon; the others need a restart.
LIVE_KEYS = frozenset({"log_level", "log_format"})


class ConfigError(ValueError):
    """The configuration cannot be used; the message names the key and where it came from (one
    line per problem: every mistake in a file is reported at once)."""


SERVICE_STATE_DIR = "/var/lib/csd"  # the unit's StateDirectory=csd


def default_state_dir() -> str:
    """systemd's `$STATE_DIRECTORY` (StateDirectory=); else the service's /var/lib/csd for root
    and for the user that owns it (`runuser -u csd -- csd keys …` must edit the service's keys, not
    a private copy in ~csd/.local/state); else `$XDG_STATE_HOME/csd` for a private csd."""
    explicit = os.environ.get("STATE_DIRECTORY")
    if explicit:
        return explicit.split(":")[0]
    if os.geteuid() == 0 or _owned_by_me(SERVICE_STATE_DIR):
        return SERVICE_STATE_DIR
    base = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return os.path.join(base, "csd")


def _owned_by_me(path: str) -> bool:
    try:
        return os.stat(path).st_uid == os.geteuid()
    except OSError:
        return False


@dataclass
class Config:
    state_dir: str = field(default_factory=default_state_dir)
    endpoint: str = field(default_factory=lambda: os.environ.get("CSD_ENDPOINT") or connection.default_endpoint())
    events_endpoint: str = field(default_factory=connection.default_events_endpoint)
    # Extra endpoints for training runtimes on other hosts ("" = not bound), e.g. tcp://*:9000.
    tcp_endpoint: str = ""
    tcp_events_endpoint: str = ""
    # The model's own defaults (statemachine/defaults.py), in seconds.
    activate_seconds: float = Timings.activate_ms / 1000
    standby_seconds: float = Timings.standby_ms / 1000
    lease_seconds: float = Timings.lease_ms / 1000  # a run's lease when its runtime asks for none
    program_bytes_per_second: float = Timings.program_bytes_per_second  # simulated fabric programming rate
    serial: str = SERIAL
    keep_events: int = KEEP_EVENTS
    log_level: str = "info"
    log_format: str = "auto"  # auto: JSON unless stdout is a terminal
    connection_file: str = ""  # "": csd.json next to the ipc request socket, else in the runtime dir
    # Prometheus metrics over HTTP ("" = off; "9464" = 127.0.0.1:9464; "HOST:PORT"; "[IPV6]:PORT").
    metrics_endpoint: str = ""
    # A fault scenario file (TOML) loaded at start ("" = none): docs/operations.md, "Fault scenarios".
    faults_scenario: str = ""

    def as_toml(self) -> str:
        """The effective settings as a valid csd.toml (what `csd --check-config` prints)."""
        return "".join(f"{k} = {_toml_value(v)}\n" for k, v in asdict(self).items())


# TOML type each setting takes (float settings also take integers: `activate_seconds = 5`).
TYPES = {f.name: {"str": str, "float": float, "int": int}[f.type] for f in fields(Config)}


def _toml_value(value) -> str:
    return json.dumps(value) if isinstance(value, str) else repr(value)


def _check_type(key: str, value, where: str):
    want = TYPES[key]
    ok = isinstance(value, want) and not isinstance(value, bool)
    if want is float and isinstance(value, int) and not isinstance(value, bool):
        value, ok = float(value), True
    if not ok:
        kind = {str: "a string", float: "a number", int: "an integer"}[want]
        raise ConfigError(f"{where}: `{key}` must be {kind}, not {type(value).__name__} {value!r}")
    return value


def _check_value(key: str, value, where: str | None) -> None:
    """`where`: the file the value came from, or None for a command-line flag."""
    bad = None
    if key in ("activate_seconds", "standby_seconds") and value < 0:
        bad = "must be 0 or more"
    elif key in ("keep_events", "lease_seconds", "program_bytes_per_second") and value <= 0:
        bad = "must be more than 0"
    elif key == "log_level" and value not in LOG_LEVELS:
        bad = f"must be one of {', '.join(LOG_LEVELS)}"
    elif key == "log_format" and value not in LOG_FORMATS:
        bad = f"must be one of {', '.join(LOG_FORMATS)}"
    elif key in ("endpoint", "events_endpoint") and not value.startswith(("ipc://", "tcp://")):
        bad = "must be an ipc:// or tcp:// endpoint"
    elif key in ("tcp_endpoint", "tcp_events_endpoint") and value and not value.startswith("tcp://"):
        bad = 'must be a tcp:// endpoint (or "" for none)'
    elif key in ("state_dir", "serial") and not value:
        bad = "must not be empty"
    elif key == "metrics_endpoint":
        from ..metrics.endpoint import parse  # stdlib only: a config check loads no prometheus_client

        try:
            parse(value)
        except ValueError as exc:
            bad = str(exc)
    elif key == "faults_scenario" and value:
        try:
            read_scenario(value)
        except ConfigError as exc:
            name = f"{where}: `{key}`" if where else "--faults"
            raise ConfigError(f"{name}: {exc}") from None
    if bad:
        name = f"{where}: `{key}`" if where else "--" + key.replace("_", "-")
        raise ConfigError(f"{name} {bad} (got {value!r})")


def read_scenario(path: str) -> tuple[str, str]:
    """The fault scenario file at `path`: (its text, its name for messages), checked by
    statemachine/faults/scenario.py; ConfigError listing every problem with its line."""
    from csadmin.shared import scenario_file
    from csadmin.statemachine.faults.scenario import ScenarioError, parse

    try:
        text = scenario_file.read(path)  # bounded: csadmin/shared/scenario_limits.py
    except errors.CsError as exc:
        raise ConfigError(exc.message) from None
    try:
        parse(text, path)
    except ScenarioError as exc:
        raise ConfigError(f"the fault scenario cannot be used:\n{exc}") from None
    return text, path


def read_file(path: str) -> dict:
    """The settings in one TOML file, type- and value-checked; raises ConfigError listing every
    problem, each as `FILE:LINE: ...` naming its key (with the nearest known key for a typo)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
        text = raw.decode("utf-8")
        data = tomllib.loads(text)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:  # its message says where (line and column)
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    settings, problems = {}, []
    for key, value in data.items():
        where = f"{path}:{_line_of(text, key)}"
        try:
            if key not in TYPES:
                raise ConfigError(_unknown_key(key, where))
            settings[key] = _check_type(key, value, where)
            _check_value(key, settings[key], where)
        except ConfigError as exc:
            problems.append(str(exc))
    if problems:
        raise ConfigError("\n".join(problems))
    return settings


def _unknown_key(key: str, where: str) -> str:
    import difflib  # error path only

    close = difflib.get_close_matches(key, list(TYPES), n=1)
    if close:
        return f"{where}: unknown key `{key}` (did you mean `{close[0]}`?)"
    return f"{where}: unknown key `{key}` (known keys: {', '.join(TYPES)})"


def _line_of(text: str, key: str) -> int | str:
    """The line where the top-level `key` is set (or its table begins): for messages only."""
    import re

    quoted = re.escape(key)
    pattern = re.compile(rf"^[ \t]*(?:{quoted}|\"{quoted}\"|'{quoted}')[ \t]*=|^[ \t]*\[\[?[ \t]*{quoted}[ \t]*[\].]", re.M)
    match = pattern.search(text)
    return text.count("\n", 0, match.start()) + 1 if match else "?"


def config_path(flag: str | None) -> tuple[str, bool]:
    """Which file to read, and whether it was asked for explicitly (then it must exist)."""
    if flag:
        return flag, True
    env = os.environ.get("CSD_CONFIG")
    if env:
        return env, True
    return DEFAULT_CONFIG_PATH, False


def load(flags: dict, path_flag: str | None = None) -> Config:
    """Defaults < file < `flags` (only the flags actually given, by setting name)."""
    path, explicit = config_path(path_flag)
    problems = []
    try:
        from_file = read_file(path) if explicit or os.path.exists(path) else {}
    except ConfigError as exc:
        problems.append(str(exc))
        from_file = {}
    for key, value in flags.items():
        try:
            _check_value(key, value, None)
        except ConfigError as exc:
            problems.append(str(exc))
    if problems:
        raise ConfigError("\n".join(problems))
    return Config(**{**from_file, **flags})
