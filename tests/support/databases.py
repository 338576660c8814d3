"""Throwaway databases for tests.

``$STEWARD_TEST_POSTGRES_URL`` (default: postgres on 127.0.0.1:5432, database ``test``) names
the server; tests make databases of their own on it. Without a server they skip locally with a
message, and fail under ``CI=true``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest

from steward.store import Store

PG_URL = os.environ.get("STEWARD_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def admin_dsn() -> str:
    return PG_URL.replace("postgresql+psycopg://", "postgresql://")


def postgres_available() -> str | None:
    """None if reachable, else why not."""
    try:
        with psycopg.connect(admin_dsn(), connect_timeout=3):
            return None
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}".strip()


_problem: str | bool | None = False


def require_postgres() -> None:
    global _problem
    if _problem is False:
        _problem = postgres_available()
    if _problem:
        message = f"PostgreSQL not reachable at {PG_URL} ({_problem}); set "
        message += "STEWARD_TEST_POSTGRES_URL to run these tests"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)


def create_database(name: str, *, template: str | None = None) -> None:
    copy = f' TEMPLATE "{template}"' if template else ""
    with psycopg.connect(admin_dsn(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"{copy}')


def drop_database(name: str) -> None:
    with psycopg.connect(admin_dsn(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def url_of(name: str) -> str:
    return f"{admin_dsn().rpartition('/')[0]}/{name}"


def migrate(url: str) -> None:
    """Bring a blank database to the head revision, as ``Store.open`` does."""

    async def open_and_close() -> None:
        await (await Store.open(url)).close()

    asyncio.run(open_and_close())


def fresh_postgres_url() -> Iterator[str]:
    """Create a throwaway database, yield its URL, drop it afterwards."""
    require_postgres()
    name = f"steward_test_{uuid.uuid4().hex[:12]}"
    create_database(name)
    try:
        yield url_of(name)
    finally:
        drop_database(name)


class TemplateCopies:
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
        create_database(name, template=self._template)
        return name

    def take(self) -> str:
        taken = self._ahead.popleft()
        self._ahead.append(self._threads.submit(self._copy))
        return taken.result()

    def drop(self, name: str) -> None:
        self._drops.append(self._threads.submit(drop_database, name))

    def close(self) -> None:
        """Drop the copies made for no one, wait for every drop; raise what went wrong."""
        try:
            for unused in self._ahead:
                self.drop(unused.result())
        finally:
            self._threads.shutdown(wait=True)
        for dropped in self._drops:
            dropped.result()


def fresh_database(
    request: pytest.FixtureRequest, backend: str, path: Path, *, migrated: bool
) -> Iterator[str]:
    """Yield the URL of a fresh database of ``backend`` (``sqlite``: the file ``path``), empty
    or, if ``migrated``, already at the head revision: a copy of the session's template (the
    ``sqlite_template`` and ``postgres_copies`` fixtures)."""
    if backend == "sqlite":
        if migrated:
            shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
        yield f"sqlite:///{path}"
    elif migrated:
        copies: TemplateCopies = request.getfixturevalue("postgres_copies")
        name = copies.take()
        try:
            yield url_of(name)
        finally:
            copies.drop(name)
    else:
        yield from fresh_postgres_url()
