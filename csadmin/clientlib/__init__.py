"""What the client (csadmin/client.py) stands on, and what the console, the fleet, the launchers
and cstorch reach csd through:

    transport.py        a CURVE DEALER socket: request ids, timeouts, retries, the handshake monitor
    credentials.py      where the endpoint and keys come from: flags, environment, connection file
    follow.py           the one loop behind every wait and follower (no event skipped)
    runs.py             a run as a runtime holds it: a context manager renewing its lease
    inventory.py        the site's systems, from its TOML inventory
    inventory_cache.py  what tomllib made of an inventory's exact text, kept in ~/.cache/cs

It imports the shared leaves and csadmin.errors, never csd, the model, the console or cstorch;
importing it loads only pyzmq and the stdlib (tests/test_layers.py).
"""
