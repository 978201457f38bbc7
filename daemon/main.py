"""`csd`: run the CS-2 device daemon in the foreground."""

from __future__ import annotations

import argparse
import sys

from csadmin import __version__


def build_parser() -> argparse.ArgumentParser:
    from .config import Config

    d = Config()
    p = argparse.ArgumentParser(prog="csd", description="The CS-2 device daemon (runs in the foreground).")
    p.add_argument("--version", action="version", version=f"csd {__version__}")
    p.add_argument("--state-dir", default=d.state_dir, help="where state is kept (default: %(default)s)")
    p.add_argument("--endpoint", default=d.endpoint, help="request socket to bind (default: %(default)s)")
    p.add_argument("--events-endpoint", default=d.events_endpoint, help="event socket to bind (default: %(default)s)")
    p.add_argument("--activate-seconds", type=float, default=d.activate_seconds, help="simulated activation time")
    p.add_argument("--standby-seconds", type=float, default=d.standby_seconds, help="simulated standby time")
    p.add_argument("--serial", default=d.serial, help="serial of a fresh system (default: %(default)s)")
    p.add_argument("--log-level", default=d.log_level, choices=["debug", "info", "warning", "error"])
    p.add_argument("--connection-file", default=d.connection_file,
                   help="where to write csd.json (default: next to the ipc request socket, else the runtime dir)")
    p.add_argument("--log-format", default=d.log_format, choices=["auto", "json", "console"])
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["keys"]:  # `csd keys ...`: key management, not the daemon
        from .keys_cli import main as keys_main

        return keys_main(argv[1:])
    args = build_parser().parse_args(argv)
    for name in ("activate_seconds", "standby_seconds"):
        if getattr(args, name) < 0:
            print(f"csd: --{name.replace('_', '-')} must be 0 or more", file=sys.stderr)
            return 2

    from .config import Config
    from .logs import configure
    from .server import Server
    from .store import StoreError

    config = Config(**{k: v for k, v in vars(args).items()})
    log = configure(config.log_level, config.log_format)
    server = Server(config, log)
    try:
        server.start()
    except StoreError as exc:
        log.error("cannot_start", reason=str(exc))
        return 1
    except Exception as exc:  # e.g. the endpoint is in use: say so plainly, no traceback
        log.error("cannot_start", reason=f"{type(exc).__name__}: {exc}")
        return 1
    try:
        server.serve_forever()
    finally:
        server.close()
    return 0
