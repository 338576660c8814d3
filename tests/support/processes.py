"""Real ``steward`` processes for multi-process tests: spawn them, wait on them, read their logs,
see the database outages they logged."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

import psycopg

from steward.errors import DatabaseUnavailable
from support.startup import startup_seconds
from support.waiting import eventually

OUTAGE_LINE = "database unavailable, retrying in"
BACK_LINE = "database available again"


def start_deadline(extra: float = 0.0) -> float:
    """Seconds to allow for processes to start and do ``extra`` seconds of work: scaled by how
    long a ``steward`` process takes to start here, now (3 s at rest, 10 s under load), as
    measured once per session by :func:`support.startup.startup_seconds`."""
    return 30.0 + 10 * startup_seconds() + extra


def holds_task_lock(db_url: str, task_id: str) -> bool:
    """Whether some (frozen) process holds the database write lock (SQLite), or the task's row
    lock (PostgreSQL).

    A process frozen inside a transaction would block everyone else; a test then stages its
    scenario again rather than measure a deadlock it caused itself.
    """
    if db_url.startswith("sqlite"):
        conn = sqlite3.connect(db_url.removeprefix("sqlite:///"), timeout=0.3)
        try:
            conn.isolation_level = None
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
            return False
        except sqlite3.OperationalError:
            return True
        finally:
            conn.close()
    with psycopg.connect(db_url) as pg, pg.transaction():
        pg.execute("SET LOCAL lock_timeout = '300ms'")
        try:
            pg.execute("SELECT id FROM tasks WHERE id = %s FOR UPDATE", (task_id,))
        except psycopg.errors.LockNotAvailable:
            return True
    return False


def spawn(
    role: str, db_url: str, log: Path, *extra: str, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start ``steward <role>`` as its own OS process, its log in ``log``."""
    cmd = [sys.executable, "-m", "steward.cli.main", role, "--db", db_url]
    with log.open("ab") as err:
        return subprocess.Popen(
            [*cmd, "--log-level", "warning", *extra],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=os.environ | (env or {}),
        )


def log_tails(logs: Path) -> str:
    return "\n".join(f"--- {f.name}\n{f.read_text()[-3000:]}" for f in sorted(logs.glob("*.log")))


async def until(
    check: Callable[[], Awaitable[bool]],
    what: str,
    procs: Mapping[str, subprocess.Popen[bytes]],
    logs: Path,
    seconds: float,
) -> float:
    """Poll ``check`` until true (a database outage meanwhile is waited out); fail early if one
    of ``procs`` exited, or after ``seconds``. Returns the seconds it took."""

    def gone() -> str | None:
        dead = {name: p.returncode for name, p in procs.items() if p.poll() is not None}
        return f"exited: {dead}" if dead else None

    return await eventually(
        check,
        what,
        seconds=seconds,
        tolerate=(DatabaseUnavailable,),
        gone=gone,
        details=lambda: log_tails(logs),
    )


def stop_all(procs: dict[str, subprocess.Popen[bytes]]) -> None:
    for proc in procs.values():
        if proc.poll() is None:
            proc.terminate()
            proc.send_signal(signal.SIGCONT)  # a paused one, too
    for proc in procs.values():
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def outage_lines(log: Path) -> tuple[int, int]:
    """How many outages the process logged, and how many ends of one."""
    text = log.read_text()
    return text.count(OUTAGE_LINE), text.count(BACK_LINE)


async def all_back(procs: dict[str, subprocess.Popen[bytes]], logs: Path, seconds: float) -> None:
    """Wait until every process that logged an outage has logged its end (a process backing
    off notices that the database is back at its next try)."""

    async def back() -> bool:
        counts = [outage_lines(logs / f"{name}.log") for name in procs]
        return all(outages == ends for outages, ends in counts)

    await until(back, "every process to see the database back", procs, logs, seconds)
