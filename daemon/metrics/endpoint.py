"""Where csd's Prometheus metrics listener binds: the `metrics_endpoint` setting.

Stdlib only, so checking a config (`csd --check-config`, the unit's ExecReload=) does not import
prometheus_client.

    ""                    no listener (the default)
    "9464"                127.0.0.1:9464: loopback, for a Prometheus on the same host
    "127.0.0.1:9464"      an address and a port; a name (`localhost:9464`) is resolved at bind
    "[::1]:9464"          an IPv6 address, in brackets
    "0.0.0.0:9464"        every interface, for a Prometheus elsewhere (the shipped unit's
                          IPAddressAllow=localhost still drops what does not come from loopback)

Port 0 lets the kernel pick one (tests); csd logs the address it bound.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LOOPBACK = "127.0.0.1"
_DIGITS = re.compile(r"[0-9]{1,5}")  # not str.isdigit(), which takes any script's digits
_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})")
_FORMS = '"PORT" (loopback), "HOST:PORT" or "[IPV6]:PORT", or "" for no listener'


@dataclass(frozen=True)
class MetricsEndpoint:
    host: str  # an address or a name; IPv6 without brackets
    port: int

    @property
    def netloc(self) -> str:
        """`host:port` as a URL (and a Prometheus target) writes it: IPv6 in brackets."""
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.netloc}/metrics"


def parse(text: str) -> MetricsEndpoint | None:
    """The endpoint `text` names, or None for "" (no listener). Raises ValueError saying what
    is wrong and which forms are accepted."""
    value = text.strip()
    if not value:
        return None
    if "://" in value:
        raise ValueError(f"{text!r} is a URL; give only where to listen (csd serves http://…/metrics there); "
                         f"use {_FORMS}")
    if _DIGITS.fullmatch(value):
        return MetricsEndpoint(LOOPBACK, _port(value, text))
    if value.startswith("["):
        host, sep, port = value[1:].partition("]:")
        if not sep or not host or not re.fullmatch(r"[0-9A-Fa-f:.]+", host) or ":" not in host:
            raise ValueError(f"{text!r} is not a bracketed IPv6 address and port such as \"[::1]:9464\"; "
                             f"use {_FORMS}")
        return MetricsEndpoint(host, _port(port, text))
    host, sep, port = value.rpartition(":")
    if not sep or not host:
        raise ValueError(f"{text!r} has no port; use {_FORMS}")
    if ":" in host:
        raise ValueError(f"{text!r}: write an IPv6 address in brackets (\"[::1]:9464\"); use {_FORMS}")
    if not _HOST.fullmatch(host):
        raise ValueError(f"{text!r}: {host!r} is not a host name or address; use {_FORMS}")
    return MetricsEndpoint(host, _port(port, text))


def _port(port: str, text: str) -> int:
    if not _DIGITS.fullmatch(port) or int(port) > 65535:
        raise ValueError(f"{text!r}: the port must be a number from 0 to 65535; use {_FORMS}")
    return int(port)
