"""A database that cannot be written (read-only) refuses a write with one plain
:class:`DatabaseUnusable`, not SQLite's own error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from steward.domain import TaskSpec
from steward.errors import DatabaseUnusable
from steward.service import Service
from steward.store import Store


async def test_a_read_only_database_refuses_a_write_in_plain_words(tmp_path: Path) -> None:
    """SQLite answers SQLITE_READONLY (as for a file this user may not write, which a test run
    as root cannot make: root writes any file) once the writer's connections are query-only."""
    path = tmp_path / "ro.db"
    store = await Store.open(f"sqlite:///{path}")
    person = await Service(store).ensure_person()
    await store.close()
    store = await Store.open(f"sqlite:///{path}")
    try:
        svc = Service(store)

        def query_only(conn: Any, _record: Any) -> None:
            conn.execute("PRAGMA query_only = ON")

        # before its first write, so every connection of the writer is query-only
        event.listen(store.backend._writer_engine, "connect", query_only)  # type: ignore[attr-defined]
        with pytest.raises(DatabaseUnusable, match=f"the database {path} is read-only"):
            await svc.create_task(person_id=person.id, spec=TaskSpec(kind="noop"))
        assert await svc.list_tasks(person_id=person.id) == []
    finally:
        await store.close()
