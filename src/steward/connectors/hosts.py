"""What every connector's settings need to know about a server's host name."""

from __future__ import annotations

import ipaddress

LOOPBACK_NAMES = frozenset({"localhost"})


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine (a credential may cross in plain text only there)."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
