"""Shared fixtures: stores parametrized over SQLite and PostgreSQL, a simulated clock.

PostgreSQL tests use ``$STEWARD_TEST_POSTGRES_URL`` (default: postgres on 127.0.0.1:5432,
database ``test``). Each test gets a fresh database. Without a server they skip locally with a
message, and fail under ``CI=true``.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime

import psycopg
import pytest
import structlog

from steward.runtime.clock import SimulatedClock
from steward.store import Store

PG_URL = os.environ.get("STEWARD_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


def _pg_admin_dsn() -> str:
    return PG_URL.replace("postgresql+psycopg://", "postgresql://")


def postgres_available() -> str | None:
    """None if reachable, else why not."""
    try:
        with psycopg.connect(_pg_admin_dsn(), connect_timeout=3):
            return None
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}".strip()


_PG_PROBLEM: str | bool | None = False


def require_postgres() -> None:
    global _PG_PROBLEM
    if _PG_PROBLEM is False:
        _PG_PROBLEM = postgres_available()
    if _PG_PROBLEM:
        message = f"PostgreSQL not reachable at {PG_URL} ({_PG_PROBLEM}); set "
        message += "STEWARD_TEST_POSTGRES_URL to run these tests"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)


def fresh_postgres_url() -> Iterator[str]:
    """Create a throwaway database, yield its URL, drop it afterwards."""
    require_postgres()
    name = f"steward_test_{uuid.uuid4().hex[:12]}"
    admin = _pg_admin_dsn()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base, _, _ = admin.rpartition("/")
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: object) -> Iterator[str]:
    """A URL of an empty database, once per backend."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/steward.db"
    else:
        yield from fresh_postgres_url()


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    s = await Store.open(db_url)
    try:
        yield s
    finally:
        await s.close()


START = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)  # a Monday


@pytest.fixture
def clock() -> SimulatedClock:
    return SimulatedClock(START)
