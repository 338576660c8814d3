"""Shared plumbing for the benchmarks: throwaway databases, percentiles, result records.

Every benchmark gets a fresh database of its own: a SQLite file in a temporary directory, or a
new PostgreSQL database on the local server (as ``tests/conftest.py`` makes them) that is
dropped afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import statistics
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import psycopg
import structlog

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
STEWARD = str(VENV_BIN / "steward")
PG_URL = os.environ.get(
    "STEWARD_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
BACKENDS = ("sqlite", "postgres")

T = TypeVar("T")


def quiet_logs() -> None:
    """The runtime logs at debug/info on hot paths; a benchmark only wants warnings."""
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


@dataclass(kw_only=True)
class Metric:
    """One measured figure, with the target it is judged against (if any)."""

    bench: str
    backend: str
    name: str
    value: float | None
    unit: str
    target: str = ""
    met: bool | None = None
    note: str = ""


@dataclass(kw_only=True)
class Outcome:
    """What one benchmark function returns: figures for the table plus raw details for JSON."""

    metrics: list[Metric] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def add(self, **kwargs: Any) -> Metric:
        metric = Metric(**kwargs)
        self.metrics.append(metric)
        return metric


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of a non-empty sample."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile of an empty sample")
    rank = max(1, min(len(ordered), round(p / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def summary(values: Sequence[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "min": min(values),
        "p50": percentile(values, 50),
        "p90": percentile(values, 90),
        "p99": percentile(values, 99),
        "max": max(values),
        "mean": statistics.fmean(values),
    }


# --- databases ------------------------------------------------------------------------------


def _pg_admin_dsn() -> str:
    return PG_URL.replace("postgresql+psycopg://", "postgresql://")


def postgres_problem() -> str | None:
    """None if the PostgreSQL server answers, else why not."""
    try:
        with psycopg.connect(_pg_admin_dsn(), connect_timeout=3):
            return None
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}".strip()


@contextlib.contextmanager
def fresh_database(backend: str) -> Iterator[str]:
    """Yield the URL of an empty database of ``backend``; remove it afterwards."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix="steward-bench-") as tmp:
            yield f"sqlite:///{Path(tmp) / 'steward.db'}"
        return
    name = f"steward_bench_{uuid.uuid4().hex[:12]}"
    admin = _pg_admin_dsn()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base, _, _ = admin.rpartition("/")
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def pg_dsn(url: str) -> str:
    """A psycopg DSN for a store URL."""
    return url.replace("postgresql+psycopg://", "postgresql://")


def sqlite_path(url: str) -> Path:
    return Path(url.removeprefix("sqlite:///"))


def sqlite_checkpoint(url: str) -> None:
    """Fold the WAL into the main file so its size reflects what is stored."""
    conn = sqlite3.connect(sqlite_path(url))
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def sqlite_bytes(url: str) -> int:
    """Main file plus WAL, in bytes."""
    path = sqlite_path(url)
    total = 0
    for suffix in ("", "-wal"):
        candidate = Path(f"{path}{suffix}")
        if candidate.exists():
            total += candidate.stat().st_size
    return total


# --- running coroutines -----------------------------------------------------------------


async def gather_chunked(
    factories: Iterable[Callable[[], Awaitable[T]]], *, chunk: int = 256
) -> list[T]:
    """Await many coroutines, ``chunk`` at a time (so SQLite group-commits them and
    PostgreSQL's connection pool is not flooded)."""
    results: list[T] = []
    batch: list[Callable[[], Awaitable[T]]] = []
    for factory in factories:
        batch.append(factory)
        if len(batch) >= chunk:
            results += await asyncio.gather(*(f() for f in batch))
            batch = []
    if batch:
        results += await asyncio.gather(*(f() for f in batch))
    return results


@contextlib.asynccontextmanager
async def subprocess_up(url: str, *, extra: Sequence[str] = ()) -> AsyncIterator[Any]:
    """Run ``steward up --db URL`` in a child process; stop it with SIGTERM afterwards."""
    proc = await asyncio.create_subprocess_exec(
        STEWARD,
        "up",
        "--db",
        url,
        "--log-level",
        "warning",
        "--no-http",  # what is measured here is the runtime
        *extra,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        yield proc
    finally:
        if proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), timeout=30)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        if proc.returncode not in (0, -15) and proc.stderr is not None:
            err = (await proc.stderr.read()).decode(errors="replace")
            print(f"steward up exited {proc.returncode}: {err[-2000:]}", file=sys.stderr)
