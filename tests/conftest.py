"""Shared fixtures: stores parametrized over SQLite and PostgreSQL, a simulated clock.

PostgreSQL tests use ``$STEWARD_TEST_POSTGRES_URL`` (default: postgres on 127.0.0.1:5432,
database ``test``). Each test gets a fresh database. Without a server they skip locally with a
message, and fail under ``CI=true``.

Multi-process tests scale their deadlines with how long a ``steward`` process takes to start
here (``startup_support``; the ``startup`` fixture measures it once per session).

A test that takes the ``store`` fixture gets its fresh database as a copy of one migrated once
per session (a file copy on SQLite; on PostgreSQL ``CREATE DATABASE ... TEMPLATE``, made ahead in
background threads while earlier tests run, and dropped there too): the store would bring it
to the head revision first thing anyway, and migrating again for each of a thousand tests, and
waiting for the server to create and drop each database, cost minutes. ``Store.open`` still
runs (and checks the revision) on the copy; migrating from nothing is tested on both backends in
``tests/store/test_migrations.py`` and by every test that opens ``db_url`` itself.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import uuid
from collections import deque
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
import structlog

from startup_support import measured, slowness
from steward.domain.clock import SimulatedClock
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


def _create_database(name: str, *, template: str | None = None) -> None:
    copy = f' TEMPLATE "{template}"' if template else ""
    with psycopg.connect(_pg_admin_dsn(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"{copy}')


def _drop_database(name: str) -> None:
    with psycopg.connect(_pg_admin_dsn(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _url_of(name: str) -> str:
    return f"{_pg_admin_dsn().rpartition('/')[0]}/{name}"


def _migrate(url: str) -> None:
    """Bring a blank database to the head revision, as ``Store.open`` does."""

    async def open_and_close() -> None:
        await (await Store.open(url)).close()

    asyncio.run(open_and_close())


def fresh_postgres_url() -> Iterator[str]:
    """Create a throwaway database, yield its URL, drop it afterwards."""
    require_postgres()
    name = f"steward_test_{uuid.uuid4().hex[:12]}"
    _create_database(name)
    try:
        yield _url_of(name)
    finally:
        _drop_database(name)


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite database file at the head revision, to copy."""
    path = tmp_path_factory.mktemp("template") / "steward.db"
    _migrate(f"sqlite:///{path}")
    leftovers = [p.name for p in path.parent.iterdir() if p != path]
    assert not leftovers, f"the closed template left {leftovers} behind: copy them too"
    return path


class _Copies:
    """Fresh copies of a PostgreSQL template database, made ahead in background threads while
    earlier tests run, and dropped there after their test: a test waits for neither (unless
    tests come faster than the server makes databases)."""

    AHEAD = 2
    """Copies made ahead, one per thread: the server makes two at once faster than one by one."""

    def __init__(self, template: str) -> None:
        self._template = template
        self._threads = ThreadPoolExecutor(max_workers=self.AHEAD, thread_name_prefix="pg-copy")
        self._ahead = deque(self._threads.submit(self._copy) for _ in range(self.AHEAD))
        self._drops: list[Future[None]] = []

    def _copy(self) -> str:
        name = f"steward_test_{uuid.uuid4().hex[:12]}"
        _create_database(name, template=self._template)
        return name

    def take(self) -> str:
        taken = self._ahead.popleft()
        self._ahead.append(self._threads.submit(self._copy))
        return taken.result()

    def drop(self, name: str) -> None:
        self._drops.append(self._threads.submit(_drop_database, name))

    def close(self) -> None:
        """Drop the copies made for no one, wait for every drop; raise what went wrong."""
        try:
            for unused in self._ahead:
                self.drop(unused.result())
        finally:
            self._threads.shutdown(wait=True)
        for dropped in self._drops:
            dropped.result()


@pytest.fixture(scope="session")
def postgres_copies() -> Iterator[_Copies]:
    """Fresh databases at the head revision: copies of one migrated once per session (under a
    unique name, so that concurrent sessions on one server do not share it)."""
    require_postgres()
    template = f"steward_template_{uuid.uuid4().hex[:12]}"
    _create_database(template)
    try:
        _migrate(_url_of(template))
        copies = _Copies(template)
        try:
            yield copies
        finally:
            copies.close()
    finally:
        _drop_database(template)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A URL of a fresh database, once per backend: empty, unless the test takes ``store``
    (which migrates it before anything else can see it), then already at the head revision."""
    migrated = "store" in request.fixturenames
    if request.param == "sqlite":
        path = tmp_path / "steward.db"
        if migrated:
            shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
        yield f"sqlite:///{path}"
    elif migrated:
        copies: _Copies = request.getfixturevalue("postgres_copies")
        name = copies.take()
        try:
            yield _url_of(name)
        finally:
            copies.drop(name)
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


@pytest.fixture(scope="session")
def startup() -> float:
    """How many times slower than at rest a ``steward`` process starts on this machine now
    (at least 1; measured once per session): multi-process tests stretch their bounds by it,
    through ``startup_support.scaled``."""
    return slowness()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    seconds = measured()
    if seconds is not None:
        terminalreporter.write_line(
            f"steward start-up here: {seconds:.1f} s; process deadlines stretched x{slowness():.1f}"
        )
