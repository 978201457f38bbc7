"""`csd keys`: manage the server keypair and the client keys csd admits.

    csd keys init                       server keypair + a first admin key (idempotent)
    csd keys add NAME --role ROLE       a new client key; prints where its secret file is
    csd keys list                       every key, revoked ones included
    csd keys revoke NAME                csd refuses that key from its next message

Run it as the user csd runs as (files are created 0600 for that user; as root, new files in
the state directory are handed to the directory's owner). The running daemon needs no signal:
it notices a changed registry on its next message (daemon/auth/key_registry.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from ..auth.key_registry import ROLES, KeyManagementError, KeyStore
from .config import default_state_dir


def build_parser() -> argparse.ArgumentParser:
    state_help = f"csd's state directory (default: {default_state_dir()})"
    p = argparse.ArgumentParser(prog="csd keys", description="Manage the CURVE keys csd admits.")
    p.add_argument("--state-dir", default=default_state_dir(), help=state_help)
    # --state-dir is also accepted after the action (`csd keys add NAME --state-dir D ...`), and
    # each action's --help shows it; SUPPRESS keeps the default above when it is not given there.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--state-dir", default=argparse.SUPPRESS, help=state_help)
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    init = sub.add_parser("init", parents=[common], help="create the server keypair and, if there is none, a first admin key")
    init.add_argument("--admin-name", default="admin", help="name of the first admin key (default: %(default)s)")
    init.add_argument("--out", help="where to write the admin's secret key (default: keys/clients/NAME.key_secret)")
    add = sub.add_parser("add", parents=[common], help="register a client key with a role")
    add.add_argument("name")
    add.add_argument("--role", required=True, choices=list(reversed(ROLES)))
    add.add_argument("--public-key", help="register this Z85 public key instead of making a keypair")
    add.add_argument("--out", help="where to write the new secret key (default: keys/clients/NAME.key_secret)")
    lst = sub.add_parser("list", parents=[common], help="show every key")
    lst.add_argument("--output-format", choices=["text", "json"], default="text")
    rev = sub.add_parser("revoke", parents=[common], help="revoke a key: csd refuses it from its next message")
    rev.add_argument("name")
    return p


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    os.umask(0o077)  # anything we create is ours alone unless we say otherwise
    store = KeyStore(args.state_dir)
    try:
        code = ACTIONS[args.action](store, args)
    except KeyManagementError as exc:
        print(f"csd keys: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"csd keys: {exc.strerror}: {exc.filename}", file=sys.stderr)
        return 1
    _give_to_state_dir_owner(store)
    return code


def _secret_note(path: str) -> str:
    return (f"  secret key: {path} (mode 0600)\n"
            f"  use it with: cs --key {path} ...   or   export CS_KEY={path}\n"
            f"  keep it secret; copy it only over a secure channel, and keep it 0600.")


def init(store: KeyStore, args) -> int:
    public, _ = store.ensure_server_keypair()
    print(f"server public key: {public}\n  ({store.server_public_path}; also in csd's connection file csd.json)")
    active = [e for e in store.load() if not e.get("revoked")]
    if any(e["role"] == "admin" for e in active):
        print(f"{len(active)} client key(s) registered, at least one admin: nothing more to do (`csd keys list`).")
        return 0
    entry, secret_path = store.add(args.admin_name, "admin", out=args.out)
    print(f"added key {entry['name']!r} with role admin\n{_secret_note(secret_path)}")
    return 0


def add(store: KeyStore, args) -> int:
    store.ensure_server_keypair()
    entry, secret_path = store.add(args.name, args.role, public=args.public_key, out=args.out)
    print(f"added key {entry['name']!r} with role {entry['role']}")
    if secret_path:
        print(_secret_note(secret_path))
    else:
        print("  the client keeps its own secret key; it needs csd's public key (csd keys init prints it).")
    return 0


def _when(ms) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms / 1000)) + "Z" if ms else "-"


def list_(store: KeyStore, args) -> int:
    entries = store.load()
    if args.output_format == "json":
        print(json.dumps({"keys": entries}, indent=2))
        return 0
    if not entries:
        print("No client keys yet: `csd keys init` makes a first admin key.")
        return 0
    rows = [("NAME", "ROLE", "STATUS", "CREATED", "PUBLIC KEY")] + [
        (e["name"], e["role"], f"revoked {_when(e['revoked'])}" if e.get("revoked") else "active",
         _when(e.get("created")), e["public_key"])
        for e in entries
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[4])
    return 0


def revoke(store: KeyStore, args) -> int:
    entry = store.revoke(args.name)
    print(f"revoked key {entry['name']!r} ({entry['role']}); a running csd refuses it from its next message.")
    return 0


ACTIONS = {"init": init, "add": add, "list": list_, "revoke": revoke}


def _give_to_state_dir_owner(store: KeyStore) -> None:
    """Run as root (e.g. `csd keys add` in a root shell), hand what we made under the state dir to its owner (csd)."""
    if os.geteuid() != 0 or not os.path.isdir(store.state_dir):
        return
    st = os.stat(store.state_dir)
    if st.st_uid == 0:
        return
    for root, dirs, files in os.walk(store.dir):
        for name in [*dirs, *files]:
            os.chown(os.path.join(root, name), st.st_uid, st.st_gid)
    os.chown(store.dir, st.st_uid, st.st_gid)
