"""`csd`: run the CS-2 device daemon in the foreground (under systemd: Type=notify).

Settings: built-in defaults < the config file (`/etc/csd/csd.toml`, `--config`, `$CSD_CONFIG`)
< the flags given here. `csd --check-config` validates them, prints the result and exits.
Exit codes: 0 clean stop, 1 cannot start (state store, endpoint) or stopped for a damaged state
store, 2 bad flags or config.
"""

from __future__ import annotations

import argparse
import sys

from csadmin import __version__

# Flags that are settings: argparse name → how to parse. Each has a config-file key of the
# same name; flags are SUPPRESSed when absent so the file's value is not overwritten by a default.
SETTING_FLAGS = {
    "state_dir": (str, "DIR", "where state is kept"),
    "endpoint": (str, "URL", "request socket to bind"),
    "events_endpoint": (str, "URL", "event socket to bind"),
    "tcp_endpoint": (str, "URL", "extra request endpoint for remote runtimes, e.g. tcp://*:9000"),
    "tcp_events_endpoint": (str, "URL", "extra event endpoint for remote runtimes, e.g. tcp://*:9001"),
    "activate_seconds": (float, "SECONDS", "simulated activation time"),
    "standby_seconds": (float, "SECONDS", "simulated standby time"),
    "serial": (str, "SERIAL", "serial of a fresh system"),
    "keep_events": (int, "N", "how many events are kept"),
    "lease_seconds": (float, "SECONDS", "default lease of a run"),
    "program_bytes_per_second": (float, "N", "simulated fabric programming rate: time = size_bytes / rate"),
    "log_level": (str, "LEVEL", "debug, info, warning or error"),
    "log_format": (str, "FORMAT", "auto (JSON unless on a terminal), json or console"),
    "connection_file": (str, "PATH", "where to write csd.json (\"\": next to the ipc request socket, else the runtime dir)"),
    "metrics_endpoint": (str, "ADDR", "serve Prometheus metrics at http://ADDR/metrics: PORT (loopback), HOST:PORT or "
                                      "[IPV6]:PORT"),
    "faults_scenario": (str, "FILE", "a fault scenario (TOML) to load at start"),
}
# Shorter spellings of some setting flags.
FLAG_ALIASES = {"faults_scenario": ("--faults",)}


def build_parser() -> argparse.ArgumentParser:
    from .process.config import DEFAULT_CONFIG_PATH, Config

    d = Config()
    p = argparse.ArgumentParser(
        prog="csd", description="The CS-2 device daemon (runs in the foreground).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Flags override the config file, which overrides the defaults shown.\n\n"
               "keys (clients need one to connect; run as the user csd runs as):\n"
               "  csd keys init                  server keypair and a first admin key\n"
               "  csd keys add NAME --role ROLE  a client key (admin, operator or viewer)\n"
               "  csd keys list | revoke NAME    see `csd keys --help`",
    )
    p.add_argument("--version", action="version", version=f"csd {__version__}")
    p.add_argument("--config", metavar="PATH",
                   help=f"config file (default: $CSD_CONFIG or {DEFAULT_CONFIG_PATH}, if it exists)")
    p.add_argument("--check-config", action="store_true",
                   help="validate the settings, print the effective config and exit (0 valid, 2 not)")
    p.add_argument("--quiet", action="store_true",
                   help="with --check-config: print nothing when valid, only the exit code (the unit's ExecReload=)")
    for name, (kind, metavar, text) in SETTING_FLAGS.items():
        default = getattr(d, name)
        p.add_argument("--" + name.replace("_", "-"), *FLAG_ALIASES.get(name, ()), dest=name, type=kind, metavar=metavar,
                       default=argparse.SUPPRESS, help=f"{text} (default: {default if default != '' else 'none'})")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["keys"]:  # `csd keys ...`: key management, not the daemon
        from .process.keys_command import main as keys_main

        return keys_main(argv[1:])
    args = build_parser().parse_args(argv)
    from .process.config import ConfigError, load

    flags = {k: v for k, v in vars(args).items() if k in SETTING_FLAGS}
    try:
        config = load(flags, args.config)
    except ConfigError as exc:  # every problem found, one per line
        problems = str(exc).splitlines()
        if len(problems) == 1:
            print(f"csd: {problems[0]}", file=sys.stderr)
        else:
            print("csd: the configuration cannot be used:" + "".join(f"\n  {p}" for p in problems), file=sys.stderr)
        return 2
    if args.check_config:
        if not args.quiet:  # quiet under ExecReload=: the journal stays JSON lines for jq
            sys.stdout.write(config.as_toml())
        return 0
    return run(config, lambda: load(flags, args.config))


def run(config, reload_config) -> int:
    """Serve until SIGTERM/SIGINT; `reload_config()` gives the settings a SIGHUP applies."""
    from .process.logs import configure
    from .process.notify import Notifier
    from .process.server import Server
    from .serve.sockets import BindError
    from .store.store import StoreError

    log = configure(config.log_level, config.log_format)
    notifier = Notifier()
    server = Server(config, log, notifier, reload_config, configure)
    try:
        server.start()
    except Exception as exc:  # e.g. the endpoint is in use: say so plainly, no traceback
        reason = str(exc) if isinstance(exc, (StoreError, BindError)) else f"{type(exc).__name__}: {exc}"
        log.error("cannot_start", reason=reason)
        notifier.status(f"cannot start: {reason}")  # what `systemctl status csd` shows
        return 1
    try:
        return server.serve_forever()  # 1: the store was found damaged while serving
    finally:
        server.close()
        notifier.close()
