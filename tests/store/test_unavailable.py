"""A database that cannot be reached, or is locked beyond the busy timeout, is reported as
:class:`DatabaseUnavailable` (what the runtime rides through), and the store works again as
soon as it can be reached; opening a store whose schema is current takes no write lock."""

from __future__ import annotations

import socket
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from steward.errors import DatabaseUnavailable
from steward.store import DatabaseLimits, Store

SHORT = DatabaseLimits(busy_timeout_seconds=0.2)


@pytest.fixture
def current(sqlite_template: Path, tmp_path: Path) -> Path:
    """A SQLite database at the head revision."""
    path = tmp_path / "steward.db"
    path.write_bytes(sqlite_template.read_bytes())
    return path


@pytest.fixture
def locked(current: Path) -> Iterator[str]:
    """A current SQLite database whose write lock another connection holds."""
    path = current
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield f"sqlite:///{path}"
    finally:
        holder.execute("ROLLBACK")
        holder.close()


async def test_opening_a_current_store_takes_no_write_lock(locked: str) -> None:
    store = await Store.open(locked, limits=SHORT)
    try:
        assert await store.persons.list_persons() == []
    finally:
        await store.close()


async def test_a_write_locked_past_the_busy_timeout_is_unavailable(current: Path) -> None:
    path = current
    store = await Store.open(f"sqlite:///{path}", limits=SHORT)
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        with pytest.raises(DatabaseUnavailable, match="database is locked"):
            await store.persons.create_person(name="a", now=datetime.now(UTC))
        holder.execute("ROLLBACK")
        person = await store.persons.create_person(name="a", now=datetime.now(UTC))
        assert [p.id for p in await store.persons.list_persons()] == [person.id]
    finally:
        holder.close()
        await store.close()


async def test_a_postgres_server_that_refuses_connections_is_unavailable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens on it once closed
    with pytest.raises(DatabaseUnavailable, match="refused"):
        await Store.open(f"postgresql://postgres@127.0.0.1:{port}/steward")
