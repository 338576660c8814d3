"""Waiting for something another task, thread or process does: one poller for every test."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import psycopg
import pytest

from support.startup import scaled


async def eventually(
    check: Callable[[], Awaitable[bool]],
    what: str,
    *,
    seconds: float,
    every: float = 0.05,
    tolerate: tuple[type[BaseException], ...] = (),
    gone: Callable[[], str | None] = lambda: None,
    details: Callable[[], str] = lambda: "",
) -> float:
    """Poll ``check`` every ``every`` seconds until it holds; return the seconds it took.

    Fails after ``seconds`` (the caller scales them for this machine), or at once when
    ``gone()`` says why waiting is pointless (a process or loop that would do it ended); the
    failure message ends with ``details()`` (log tails, say). An error in ``tolerate`` raised
    by ``check`` counts as "not yet" (an outage the test waits out).
    """
    began = time.monotonic()
    while True:
        try:
            if await check():
                return time.monotonic() - began
        except tolerate:
            pass
        why = gone()
        if why is not None or time.monotonic() - began > seconds:
            reason = f"; {why}" if why is not None else ""
            extra = details()
            pytest.fail(f"timed out waiting for {what}{reason}" + (f"\n{extra}" if extra else ""))
        await asyncio.sleep(every)


async def lock_waiters(watcher: psycopg.Connection[Any], *, at_least: int) -> None:
    """Wait until ``at_least`` sessions of this test's database wait for a lock."""

    async def waiting() -> bool:
        row = watcher.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()
        return row is not None and row[0] >= at_least

    # the database server is another process: nothing signals that a session began to wait
    await eventually(waiting, "a session to wait for the lock", seconds=scaled(5), every=0.01)
