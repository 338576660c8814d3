"""Failpoints: named places where a test can make this process die, to prove recovery.

Start a process with ``STEWARD_FAILPOINTS=name[,name…]``; when execution reaches an armed
failpoint the process exits at once with status 137, as if killed with ``kill -9``: no cleanup,
no flush, no outcome written. Unarmed, a failpoint is a set lookup.
"""

from __future__ import annotations

import os

_ARMED = frozenset(n.strip() for n in os.environ.get("STEWARD_FAILPOINTS", "").split(",") if n)


def failpoint(name: str) -> None:
    if name in _ARMED:
        os._exit(137)
