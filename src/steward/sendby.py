"""The send deadline of the effect being sent, for the code that puts its bytes on the wire.

:meth:`steward.runtime.run.TaskRun.effect` checks the deadline before it calls the tool, but a
tool does work of its own before its request starts (the egress broker reads secrets and
connections, resolves the host, may refresh a token): that code calls :func:`check` right
before the request, so a request that would start late is not sent at all.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from steward.errors import NotSent

_BOOTTIME: int | None = getattr(time, "CLOCK_BOOTTIME", None)
_SEND_BY: ContextVar[float | None] = ContextVar("steward_send_by", default=None)


def elapsed() -> float:
    """Seconds on a clock that never steps and, unlike :func:`time.monotonic` on Linux, keeps
    counting while the machine is suspended: every kind of pause shows."""
    return time.clock_gettime(_BOOTTIME) if _BOOTTIME is not None else time.monotonic()


@contextmanager
def sending_by(deadline: float) -> Iterator[None]:
    """Within this block, a request must start before ``deadline`` (an :func:`elapsed` value)."""
    token = _SEND_BY.set(deadline)
    try:
        yield
    finally:
        _SEND_BY.reset(token)


def check() -> None:
    """Raise :class:`NotSent` if the current effect's send deadline has passed (no deadline:
    not sending an effect, nothing to check)."""
    deadline = _SEND_BY.get()
    if deadline is not None and elapsed() >= deadline:
        raise NotSent("not sent: its send deadline passed before the request started")
