"""Failpoints: named places where a test can make this process die, to prove recovery.

Start a process with ``STEWARD_FAILPOINTS=name[,name…]``; when execution reaches an armed
failpoint the process exits at once with status 137, as if killed with ``kill -9``: no cleanup,
no flush, no outcome written. Armed as ``name=stop``, the process instead stops itself with
SIGSTOP there, the first time it gets there, as if frozen by the machine (a zombie in the
making): the test decides when it goes on (SIGCONT). Unarmed, a failpoint is a dict lookup.
"""

from __future__ import annotations

import os
import signal

_ARMED = dict(
    (n.strip().partition("=")[0], n.strip().partition("=")[2])
    for n in os.environ.get("STEWARD_FAILPOINTS", "").split(",")
    if n.strip()
)


def failpoint(name: str) -> None:
    action = _ARMED.get(name)
    if action is None:
        return
    if action == "stop":
        del _ARMED[name]
        os.kill(os.getpid(), signal.SIGSTOP)
        return
    os._exit(137)
