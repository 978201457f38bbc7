"""The options every example runtime takes to reach csd, the same as `cs`'s (README, "Connecting").

    --connect FILE    csd's connection file (default: $CS_CONNECT, else csd.json in csd's runtime dir)
    --key FILE        your secret key file (default: $CS_KEY, else ~/.config/cs/client.key_secret)
    --endpoint URL    csd's request socket (default: $CS_ENDPOINT, else the connection file's)
    --server-key KEY  csd's public key, for an --endpoint without a connection file ($CS_SERVER_KEY)

`cs --embedded` prints `export CS_CONNECT=… CS_KEY=…` for its private csd: with those two
exported, an example needs none of these options.
"""

from __future__ import annotations

import argparse
import os

from csadmin.client import Client
from csadmin.clientlib.credentials import default_key_file


def add(p: argparse.ArgumentParser) -> None:
    p.add_argument("--connect", metavar="FILE",
                   help="csd's connection file (default: $CS_CONNECT, else csd.json in csd's runtime dir)")
    p.add_argument("--key", metavar="FILE", help=f"your secret key file (default: $CS_KEY, else {_home(default_key_file())})")
    p.add_argument("--endpoint", metavar="URL", help="csd's request socket (default: $CS_ENDPOINT, else the connection file's)")
    p.add_argument("--server-key", metavar="KEY", help="csd's public key, for an --endpoint without a connection file "
                   "(default: $CS_SERVER_KEY); write --server-key=KEY, as a key may begin with '-'")


def client(args, endpoint: str | None = None, key: str | None = None) -> Client:
    """A Client reaching csd as `args` (from a parser `add` filled in) say; `endpoint` and `key`
    override theirs (an input worker with its own)."""
    return Client(endpoint or args.endpoint, connect=args.connect, key=key or args.key, server_key=args.server_key)


def _home(path: str) -> str:
    """`path` with the home directory written `~`, as a help text shows it."""
    home = os.path.expanduser("~")
    return "~" + path[len(home):] if path.startswith(home + os.sep) else path
