"""Shared fixtures: stores parametrized over SQLite and PostgreSQL, a simulated clock.

PostgreSQL tests use ``$STEWARD_TEST_POSTGRES_URL`` (``support.databases``). Each test gets a
fresh database. Without a server they skip locally with a message, and fail under ``CI=true``.

Multi-process tests scale their deadlines with how long a ``steward`` process takes to start
here (``support.startup``; the ``startup`` fixture measures it once per session).

A test that takes the ``store`` fixture gets its fresh database as a copy of one migrated once
per session (a file copy on SQLite; on PostgreSQL ``CREATE DATABASE ... TEMPLATE``, made ahead in
background threads while earlier tests run, and dropped there too): the store would bring it
to the head revision first thing anyway, and migrating again for each of a thousand tests, and
waiting for the server to create and drop each database, cost minutes. ``Store.open`` still
runs (and checks the revision) on the copy; migrating from nothing is tested on both backends in
``tests/store/test_migrations.py`` and by every test that opens ``db_url`` itself.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import structlog

from steward.domain.clock import SimulatedClock
from steward.store import Store
from support.clock import START
from support.databases import (
    TemplateCopies,
    create_database,
    drop_database,
    fresh_database,
    migrate,
    require_postgres,
    url_of,
)
from support.startup import measured, slowness

# before any test module imports it (the dispatcher's tests use its helpers, and run first)
pytest.register_assert_rewrite("steward.testing.store_conformance")

pytest_plugins = ["support.caldav_fixtures"]

structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite database file at the head revision, to copy."""
    path = tmp_path_factory.mktemp("template") / "steward.db"
    migrate(f"sqlite:///{path}")
    leftovers = [p.name for p in path.parent.iterdir() if p != path]
    assert not leftovers, f"the closed template left {leftovers} behind: copy them too"
    return path


@pytest.fixture(scope="session")
def postgres_copies() -> Iterator[TemplateCopies]:
    """Fresh databases at the head revision: copies of one migrated once per session (under a
    unique name, so that concurrent sessions on one server do not share it)."""
    require_postgres()
    template = f"steward_template_{uuid.uuid4().hex[:12]}"
    create_database(template)
    try:
        migrate(url_of(template))
        copies = TemplateCopies(template)
        try:
            yield copies
        finally:
            copies.close()
    finally:
        drop_database(template)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A URL of a fresh database, once per backend: empty, unless the test takes ``store``
    (which migrates it before anything else can see it), then already at the head revision."""
    migrated = "store" in request.fixturenames
    yield from fresh_database(request, request.param, tmp_path / "steward.db", migrated=migrated)


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    s = await Store.open(db_url)
    try:
        yield s
    finally:
        await s.close()


@pytest.fixture
def clock() -> SimulatedClock:
    return SimulatedClock(START)


@pytest.fixture(scope="session")
def startup() -> float:
    """How many times slower than at rest a ``steward`` process starts on this machine now
    (at least 1; measured once per session): multi-process tests stretch their bounds by it,
    through ``support.startup.scaled``."""
    return slowness()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    seconds = measured()
    if seconds is not None:
        terminalreporter.write_line(
            f"steward start-up here: {seconds:.1f} s; process deadlines stretched x{slowness():.1f}"
        )
