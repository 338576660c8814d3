"""Watch cursors: where each connection's trigger sources have read up to.

:meth:`WatchRepository.record` stores what a poll found and the cursor after it in one
transaction: a crash before it commits leaves the old cursor (the changes are found again and
deduplicated by their keys), a crash after it leaves both — never an advanced cursor without
its events.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select, update

from steward.domain import Event
from steward.domain.watch import Found, WatchState
from steward.errors import NotFound
from steward.store import rows
from steward.store.backend import Backend
from steward.store.schedule import insert_event
from steward.store.schema import connections, watch_cursors

MAX_ERROR = 500
"""Characters of a failure kept for the status page."""


class WatchRepository:
    """Trigger-source cursors and failures, per connection."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    async def get(self, connection_id: str, source: str) -> WatchState | None:
        query = select(watch_cursors).where(
            watch_cursors.c.connection_id == connection_id, watch_cursors.c.source == source
        )

        def op(conn: Connection) -> WatchState | None:
            row = conn.execute(query).first()
            return None if row is None else _state(row)

        return await self.backend.read(op)

    async def list_for(self, person_id: str) -> list[WatchState]:
        """Every watch state of the person's connections."""
        query = (
            select(watch_cursors)
            .join(connections, connections.c.id == watch_cursors.c.connection_id)
            .where(connections.c.person_id == person_id)
            .order_by(watch_cursors.c.connection_id, watch_cursors.c.source)
        )
        return await self.backend.read(lambda conn: [_state(r) for r in conn.execute(query)])

    async def record(
        self,
        *,
        person_id: str,
        connection_id: str,
        source: str,
        found: Sequence[Found],
        cursor: dict[str, Any],
        now: datetime,
    ) -> list[tuple[Event, bool]]:
        """Store the events a poll found (each once per dedupe key) and move the cursor, in one
        transaction. Returns each stored event and whether it was new. The connection must
        still be active: a poll that finishes after a disconnect records nothing."""

        def op(conn: Connection) -> list[tuple[Event, bool]]:
            _require_active(conn, connection_id, person_id)
            stored = [
                insert_event(
                    self.backend,
                    conn,
                    person_id=person_id,
                    type=item.type,
                    source=f"connection:{connection_id}",
                    dedupe_key=item.dedupe_key,
                    payload=item.payload,
                    now=now,
                )
                for item in found
            ]
            _upsert(self.backend, conn, connection_id, source, cursor=cursor, now=now)
            return stored

        return await self.backend.write(op)

    async def record_failure(
        self, *, connection_id: str, source: str, error: str, now: datetime
    ) -> int:
        """Count a failed poll (the cursor stays); returns the failures in a row."""

        def op(conn: Connection) -> int:
            row = conn.execute(
                select(watch_cursors.c.failures).where(
                    watch_cursors.c.connection_id == connection_id,
                    watch_cursors.c.source == source,
                )
            ).first()
            failures = (row[0] if row is not None else 0) + 1
            _upsert(
                self.backend,
                conn,
                connection_id,
                source,
                cursor=None,
                now=now,
                failures=failures,
                error=error[:MAX_ERROR],
            )
            return failures

        return await self.backend.write(op)


def _require_active(conn: Connection, connection_id: str, person_id: str) -> None:
    row = conn.execute(
        select(connections.c.active).where(
            connections.c.id == connection_id, connections.c.person_id == person_id
        )
    ).first()
    if row is None or not row[0]:
        raise NotFound("active connection", connection_id)


def _upsert(
    backend: Backend,
    conn: Connection,
    connection_id: str,
    source: str,
    *,
    cursor: dict[str, Any] | None,
    now: datetime,
    failures: int = 0,
    error: str | None = None,
) -> None:
    """Insert or update one cursor row; ``cursor`` None keeps the stored cursor (a failure)."""
    key = (watch_cursors.c.connection_id == connection_id) & (watch_cursors.c.source == source)
    changes: dict[str, Any] = {
        "updated_at": rows.ts(now),
        "failures": failures,
        "last_error": error,
    }
    if cursor is not None:
        changes["cursor"] = rows.dump(cursor)
    conn.execute(
        backend.insert_ignore(
            watch_cursors,
            {
                "connection_id": connection_id,
                "source": source,
                "cursor": rows.dump(cursor or {}),
                **{k: v for k, v in changes.items() if k != "cursor"},
            },
        )
    )
    conn.execute(update(watch_cursors).where(key).values(changes))


def _state(row: Any) -> WatchState:
    m = row._mapping
    return WatchState(
        connection_id=m["connection_id"],
        source=m["source"],
        cursor=rows.load(m["cursor"]),
        updated_at=rows.dt(m["updated_at"]),
        failures=m["failures"],
        last_error=m["last_error"],
    )
