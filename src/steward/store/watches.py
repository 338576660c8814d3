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

from sqlalchemy import ColumnElement, Connection, select, update

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
        query = select(watch_cursors).where(_key(connection_id, source))

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
            _require_active(self.backend, conn, connection_id, person_id)
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
            _save_cursor(self.backend, conn, connection_id, source, cursor, now)
            return stored

        return await self.backend.write(op)

    async def record_failure(
        self, *, connection_id: str, source: str, error: str, now: datetime, retry_at: datetime
    ) -> int:
        """Count a failed poll (the cursor stays) and hold further polls until ``retry_at``;
        returns the failures in a row."""

        def op(conn: Connection) -> int:
            key = _key(connection_id, source)
            conn.execute(
                self.backend.insert_ignore(
                    watch_cursors,
                    {
                        "connection_id": connection_id,
                        "source": source,
                        "cursor": None,
                        "updated_at": rows.ts(now),
                        "failures": 0,
                    },
                )
            )
            conn.execute(
                update(watch_cursors)
                .where(key)
                .values(
                    failures=watch_cursors.c.failures + 1,
                    last_error=error[:MAX_ERROR],
                    updated_at=rows.ts(now),
                    retry_at=rows.ts(retry_at),
                )
            )
            return int(conn.execute(select(watch_cursors.c.failures).where(key)).scalar_one())

        return await self.backend.write(op)


def _key(connection_id: str, source: str) -> ColumnElement[bool]:
    return (watch_cursors.c.connection_id == connection_id) & (watch_cursors.c.source == source)


def _require_active(backend: Backend, conn: Connection, connection_id: str, person_id: str) -> None:
    """The connection is active, and stays so until this transaction ends (a disconnect waits
    for it, so no event lands after the disconnect)."""
    row = conn.execute(
        backend.lock_for_update(
            select(connections.c.active).where(
                connections.c.id == connection_id, connections.c.person_id == person_id
            )
        )
    ).first()
    if row is None or not row[0]:
        raise NotFound("active connection", connection_id)


def _save_cursor(
    backend: Backend,
    conn: Connection,
    connection_id: str,
    source: str,
    cursor: dict[str, Any],
    now: datetime,
) -> None:
    """Store the cursor after a successful poll; failures and the backoff are cleared."""
    values = {
        "cursor": rows.dump(cursor),
        "updated_at": rows.ts(now),
        "failures": 0,
        "last_error": None,
        "retry_at": None,
    }
    conn.execute(
        backend.insert_ignore(
            watch_cursors, {"connection_id": connection_id, "source": source, **values}
        )
    )
    conn.execute(update(watch_cursors).where(_key(connection_id, source)).values(values))


def _state(row: Any) -> WatchState:
    m = row._mapping
    return WatchState(
        connection_id=m["connection_id"],
        source=m["source"],
        cursor=rows.load(m["cursor"]) if m["cursor"] is not None else None,
        updated_at=rows.dt(m["updated_at"]),
        failures=m["failures"],
        last_error=m["last_error"],
        retry_at=rows.dt_opt(m["retry_at"]),
    )
