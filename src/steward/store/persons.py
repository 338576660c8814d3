"""Persons: who Steward works for, each with a concurrency limit and a timezone."""

from __future__ import annotations

from datetime import datetime, time

from sqlalchemy import Connection, insert, select, update

from steward.domain import Person
from steward.domain.ids import new_id
from steward.errors import NotFound
from steward.store import rows
from steward.store.backend import Backend
from steward.store.schema import persons


class PersonRepository:
    """Persons."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    async def create_person(
        self,
        *,
        name: str,
        now: datetime,
        max_concurrency: int = 4,
        timezone: str = "UTC",
        person_id: str | None = None,
    ) -> Person:
        new_person_id = person_id or new_id("per")
        values = {
            "id": new_person_id,
            "name": name,
            "max_concurrency": max_concurrency,
            "timezone": timezone,
            "created_at": rows.ts(now),
        }

        def op(conn: Connection) -> Person:
            conn.execute(insert(persons).values(values))
            return load_person(conn, new_person_id)

        return await self.backend.write(op)

    async def get_person(self, person_id: str) -> Person:
        return await self.backend.read(lambda conn: load_person(conn, person_id))

    async def set_reach(
        self,
        person_id: str,
        *,
        quiet_start: time | None,
        quiet_end: time | None,
        digest_at: time,
    ) -> Person:
        """Set a person's quiet hours (both or neither) and digest time, local times."""
        values = {
            "quiet_start": rows.hhmm(quiet_start),
            "quiet_end": rows.hhmm(quiet_end),
            "digest_at": rows.hhmm(digest_at),
        }

        def op(conn: Connection) -> Person:
            load_person(conn, person_id)
            conn.execute(update(persons).where(persons.c.id == person_id).values(values))
            return load_person(conn, person_id)

        return await self.backend.write(op)

    async def set_timezone(self, person_id: str, timezone: str) -> Person:
        """Set the IANA time zone a person's times are shown and scheduled in."""

        def op(conn: Connection) -> Person:
            load_person(conn, person_id)
            conn.execute(update(persons).where(persons.c.id == person_id).values(timezone=timezone))
            return load_person(conn, person_id)

        return await self.backend.write(op)

    async def list_persons(self) -> list[Person]:
        query = select(persons).order_by(persons.c.created_at)
        return await self.backend.read(lambda conn: [rows.person(r) for r in conn.execute(query)])


def load_person(conn: Connection, person_id: str) -> Person:
    row = conn.execute(select(persons).where(persons.c.id == person_id)).first()
    if row is None:
        raise NotFound("person", person_id)
    return rows.person(row)
