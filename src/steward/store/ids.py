"""Ids by their first characters, and objects by the names people gave them: what a person
types in place of a whole id."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement, FromClause, select

from steward.store.backend import Backend
from steward.store.schema import (
    api_tokens,
    approvals,
    channels,
    connections,
    effects,
    goals,
    grants,
    memories,
    memory_passes,
    rules,
    skills,
    tasks,
    triggers,
    web_watches,
)


@dataclass(frozen=True, kw_only=True)
class IdKind:
    """Where the objects of one kind of id live, whose they are, and what they are called."""

    source: FromClause
    """The table (or join) their rows are read from."""
    id: ColumnElement[str]
    """Their id column."""
    person: ColumnElement[str]
    """The column naming the person they belong to (the owning task's, for an effect)."""
    name: ColumnElement[str] | None = None
    """The name (or title) the person gave them; None: they have none."""


KINDS: dict[str, IdKind] = {
    "gol": IdKind(source=goals, id=goals.c.id, person=goals.c.person_id, name=goals.c.title),
    "tsk": IdKind(source=tasks, id=tasks.c.id, person=tasks.c.person_id),
    "trg": IdKind(
        source=triggers, id=triggers.c.id, person=triggers.c.person_id, name=triggers.c.name
    ),
    "apr": IdKind(source=approvals, id=approvals.c.id, person=approvals.c.person_id),
    # an effect has no person of its own: it is its task's
    "eff": IdKind(
        source=effects.join(tasks, effects.c.task_id == tasks.c.id),
        id=effects.c.id,
        person=tasks.c.person_id,
    ),
    "mem": IdKind(source=memories, id=memories.c.id, person=memories.c.person_id),
    "mps": IdKind(source=memory_passes, id=memory_passes.c.id, person=memory_passes.c.person_id),
    "skl": IdKind(source=skills, id=skills.c.id, person=skills.c.person_id, name=skills.c.name),
    "chn": IdKind(
        source=channels, id=channels.c.id, person=channels.c.person_id, name=channels.c.name
    ),
    "con": IdKind(
        source=connections,
        id=connections.c.id,
        person=connections.c.person_id,
        name=connections.c.name,
    ),
    "tok": IdKind(
        source=api_tokens, id=api_tokens.c.id, person=api_tokens.c.person_id, name=api_tokens.c.name
    ),
    "grt": IdKind(source=grants, id=grants.c.id, person=grants.c.person_id),
    "rul": IdKind(source=rules, id=rules.c.id, person=rules.c.person_id),
    "wch": IdKind(
        source=web_watches,
        id=web_watches.c.id,
        person=web_watches.c.person_id,
        name=web_watches.c.name,
    ),
}
"""The kinds of id a person may shorten, by the prefix their ids start with."""


class IdRepository:
    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    async def starting_with(
        self, kind: str, prefix: str, *, person_id: str | None, limit: int
    ) -> list[str]:
        """Up to ``limit`` ids of ``kind`` that start with ``prefix`` (``person_id``'s only,
        unless None), in order."""
        of = KINDS[kind]
        query = (
            select(of.id)
            .select_from(of.source)
            .where(of.id.startswith(prefix, autoescape=True))
            .order_by(of.id)
            .limit(limit)
        )
        if person_id is not None:
            query = query.where(of.person == person_id)
        return await self.backend.read(lambda conn: list(conn.execute(query).scalars()))

    async def names(self, kind: str, *, person_id: str | None) -> list[tuple[str, str]]:
        """Every named object of ``kind`` (``person_id``'s only, unless None) as (id, name),
        in id order: names are compared by the caller, ignoring case as Python does (SQLite's
        ``lower`` knows ASCII only)."""
        of = KINDS[kind]
        if of.name is None:
            return []
        query = select(of.id, of.name).select_from(of.source).where(of.name != "").order_by(of.id)
        if person_id is not None:
            query = query.where(of.person == person_id)
        return await self.backend.read(
            lambda conn: [(row[0], row[1]) for row in conn.execute(query)]
        )
