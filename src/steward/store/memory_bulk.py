"""Writing memories in bulk (an imported history): a chunk of new memories, or of changes to
stored ones, in one transaction, by the same rules as one write (:mod:`steward.store.memory`),
and what a bulk writer needs to know beforehand (the person's live statements, in one read)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from sqlalchemy import Connection, bindparam, delete, func, select, text, update

from steward.domain.audience import Audience
from steward.domain.memory import Memory, MemoryKind, MemoryStatus
from steward.errors import NotFound
from steward.store import rows
from steward.store.backend import Backend
from steward.store.memory import (
    MemoryRepository,
    _index,
    _values,
    _version,
    blocking_keys,
    fts_row,
    version_row,
)
from steward.store.schema import (
    memories,
    memory_sources,
    memory_tombstones,
    memory_vectors,
    memory_versions,
)


@dataclass(kw_only=True, frozen=True)
class Statement:
    """A live memory as a bulk writer sees it: enough to tell a repeat, not the whole record."""

    id: str
    """The memory."""
    content: str
    """What it says."""
    audience: Audience
    """Who may hear it (a repeat must be for the same audience)."""
    status: MemoryStatus
    """Active or candidate."""
    valid_from: datetime | None
    """From when it is true."""
    valid_to: datetime | None
    """Until when it was true."""


@dataclass(kw_only=True, frozen=True)
class Change:
    """A stored memory's next version, as a bulk writer changes it (a repeat's sources)."""

    memory: Memory
    """The memory as it is to be."""
    reason: str
    """Why, for its history."""
    place: bool = False
    """It became active: it takes its place in its slot's history."""


class MemoryBulkRepository:
    """Memories written in chunks, one transaction each."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.records = MemoryRepository(backend)

    async def live_statements(self, *, person_id: str) -> list[Statement]:
        """The person's active and candidate memories, oldest first."""

        def op(conn: Connection) -> list[Statement]:
            query = (
                select(
                    memories.c.id,
                    memories.c.content,
                    memories.c.audience,
                    memories.c.status,
                    memories.c.valid_from,
                    memories.c.valid_to,
                )
                .where(
                    memories.c.person_id == person_id,
                    memories.c.status.in_(
                        [MemoryStatus.ACTIVE.value, MemoryStatus.CANDIDATE.value]
                    ),
                )
                .order_by(memories.c.observed_at, memories.c.id)
            )
            audiences: dict[str, Audience] = {}
            found = []
            for r in conn.execute(query):
                audience = audiences.get(r.audience) or audiences.setdefault(
                    r.audience, Audience.parse(r.audience)
                )
                found.append(
                    Statement(
                        id=r.id,
                        content=r.content,
                        audience=audience,
                        status=MemoryStatus(r.status),
                        valid_from=rows.dt_opt(r.valid_from),
                        valid_to=rows.dt_opt(r.valid_to),
                    )
                )
            return found

        return await self.backend.read(op)

    async def forgotten_keys(self, *, person_id: str) -> set[str]:
        """Every source key the person forgot."""

        def op(conn: Connection) -> set[str]:
            query = select(memory_tombstones.c.source_key).where(
                memory_tombstones.c.person_id == person_id
            )
            return set(conn.execute(query).scalars())

        return await self.backend.read(op)

    async def add_memories(
        self, batch: Sequence[Memory], *, actor: str, reason: str = "created"
    ) -> list[Memory | None]:
        """Write new memories (version 1 each) in one transaction, as
        :meth:`MemoryRepository.add_memory` writes one: each placed in its slot's history in
        the order given (a later one of the same slot sees the earlier), versions and sources
        recorded, indexed. One is None, not written, when one of its sources was forgotten."""
        if not batch:
            return []

        def op(conn: Connection) -> list[Memory | None]:
            owners = {m.person_id for m in batch}
            keys = {k for m in batch for k in blocking_keys(m.sources)}
            stones = set(
                conn.execute(
                    select(memory_tombstones.c.source_key).where(
                        memory_tombstones.c.person_id.in_(owners),
                        memory_tombstones.c.source_key.in_(keys),
                    )
                ).scalars()
            )
            sqlite = self.backend.name == "sqlite"
            # full-text rows numbered once for the chunk, not by a max() per row
            doc = (
                conn.execute(select(func.coalesce(func.max(memories.c.fts_doc), 0))).scalar_one()
                if sqlite
                else 0
            )
            written: list[Memory | None] = []
            plain: list[Memory] = []
            docs: list[int] = []
            for memory in batch:
                if stones & set(blocking_keys(memory.sources)):
                    written.append(None)
                    continue
                doc += 1
                numbered = {"fts_doc": doc} if sqlite else {}
                if not _slotted(memory):
                    # placed nowhere: written together below
                    plain.append(memory)
                    docs.append(doc)
                    written.append(memory)
                    continue
                placement = self.records._placed(conn, memory)
                placed = placement.memory
                conn.execute(memories.insert(), _values(placed) | numbered)
                _index(conn, self.backend, placed)
                _version(conn, placed, actor=actor, reason=reason)
                self.records._close(conn, placed, placement.supersedes, actor=actor)
                written.append(placed)
            if plain:
                _insert_plain(conn, plain, docs if sqlite else None, actor=actor, reason=reason)
            return written

        return await self.backend.write(op)

    async def change_memories(self, changes: Sequence[Change], *, actor: str) -> list[Memory]:
        """Store each change as the next version of its memory, in one transaction (as
        :meth:`MemoryRepository.update_memory` does one)."""
        if not changes:
            return []

        def op(conn: Connection) -> list[Memory]:
            ids = [c.memory.id for c in changes]
            current = {
                r.id: r
                for r in conn.execute(
                    select(
                        memories.c.id,
                        memories.c.person_id,
                        memories.c.version,
                        memories.c.uses,
                        memories.c.content,
                        memories.c.subjects,
                    ).where(memories.c.id.in_(ids))
                )
            }
            written: list[Memory] = []
            plain: list[tuple[Memory, str]] = []
            for change in changes:
                memory, row = change.memory, current.get(change.memory.id)
                if (
                    change.place
                    or row is None
                    or row.content != memory.content
                    or rows.load(row.subjects) != list(memory.subjects)
                ):
                    # placed in a slot, or indexed anew: one at a time, as one update is
                    written.append(
                        self.records.update_in(
                            conn, memory, actor=actor, reason=change.reason, place=change.place
                        )
                    )
                    continue
                if row.person_id != memory.person_id:
                    raise NotFound("memory", memory.id)
                memory = replace(memory, version=row.version + 1, uses=row.uses)
                plain.append((memory, change.reason))
                written.append(memory)
            if plain:
                _save_plain(conn, plain, actor=actor)
            return written

        return await self.backend.write(op)

    async def put_memory_vectors(
        self, vectors: Sequence[tuple[Memory, bytes]], *, model: str
    ) -> None:
        """Each memory's vector of ``model``, in one transaction."""
        if not vectors:
            return

        def op(conn: Connection) -> None:
            ids = [m.id for m, _ in vectors]
            conn.execute(delete(memory_vectors).where(memory_vectors.c.memory_id.in_(ids)))
            conn.execute(
                memory_vectors.insert(),
                [
                    {"memory_id": m.id, "person_id": m.person_id, "model": model, "vector": v}
                    for m, v in vectors
                ],
            )

        await self.backend.write(op)


def _slotted(memory: Memory) -> bool:
    """Whether it takes a place in a slot's history (see :func:`place_in_slot`)."""
    return (
        memory.slot is not None
        and memory.kind is not MemoryKind.EPISODE
        and memory.status is MemoryStatus.ACTIVE
    )


def _insert_plain(
    conn: Connection,
    batch: Sequence[Memory],
    docs: Sequence[int] | None,
    *,
    actor: str,
    reason: str,
) -> None:
    """New memories without a place in a slot: each statement run once for all of them."""
    values = [_values(m) for m in batch]
    if docs is not None:
        values = [v | {"fts_doc": d} for v, d in zip(values, docs, strict=True)]
    conn.execute(memories.insert(), values)
    conn.execute(
        memory_sources.insert(),
        [
            {"memory_id": m.id, "source_key": key, "person_id": m.person_id}
            for m in batch
            for key in sorted({s.key for s in m.sources})
        ],
    )
    conn.execute(
        memory_versions.insert(), [version_row(m, actor=actor, reason=reason) for m in batch]
    )
    if docs is not None:
        params = [fts_row(d, m) for m, d in zip(batch, docs, strict=True)]
        # the columns are fts_row's own, whatever it indexes (``doc`` is the rowid)
        columns = [k for k in params[0] if k != "doc"]
        conn.execute(
            text(
                f"INSERT OR REPLACE INTO memory_fts (rowid, {', '.join(columns)}) "
                f"VALUES (:doc, {', '.join(':' + c for c in columns)})"
            ),
            params,
        )


def _save_plain(conn: Connection, changed: Sequence[tuple[Memory, str]], *, actor: str) -> None:
    """New versions of memories whose indexed text (content, subjects) is unchanged, each
    statement run once for all of them: the record, its new source keys, its history."""
    values = [_values(m) for m, _ in changed]
    conn.execute(
        update(memories).where(memories.c.id == bindparam("_id")),
        [{k: v for k, v in row.items() if k != "id"} | {"_id": row["id"]} for row in values],
    )
    ids = [m.id for m, _ in changed]
    indexed = {
        (r.memory_id, r.source_key)
        for r in conn.execute(
            select(memory_sources.c.memory_id, memory_sources.c.source_key).where(
                memory_sources.c.memory_id.in_(ids)
            )
        )
    }
    keys = [
        {"memory_id": m.id, "source_key": key, "person_id": m.person_id}
        for m, _ in changed
        for key in sorted({s.key for s in m.sources})
        if (m.id, key) not in indexed
    ]
    if keys:
        conn.execute(memory_sources.insert(), keys)
    conn.execute(
        memory_versions.insert(),
        [version_row(m, actor=actor, reason=reason) for m, reason in changed],
    )
