"""Ids by their first characters: a person types a short prefix of an id the CLI showed."""

from __future__ import annotations

from sqlalchemy import Table, select

from steward.store.backend import Backend
from steward.store.schema import goals, tasks, triggers

TABLES: dict[str, Table] = {"gol": goals, "tsk": tasks, "trg": triggers}
"""The tables whose ids may be shortened, by the kind prefix their ids start with."""


class IdRepository:
    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    async def starting_with(
        self, kind: str, prefix: str, *, person_id: str | None, limit: int
    ) -> list[str]:
        """Up to ``limit`` ids of ``kind``'s table that start with ``prefix`` (``person_id``'s
        only, unless None), in order."""
        table = TABLES[kind]
        query = (
            select(table.c.id)
            .where(table.c.id.startswith(prefix, autoescape=True))
            .order_by(table.c.id)
            .limit(limit)
        )
        if person_id is not None:
            query = query.where(table.c.person_id == person_id)
        return await self.backend.read(lambda conn: list(conn.execute(query).scalars()))
