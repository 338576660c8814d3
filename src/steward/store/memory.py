"""Personal memory: records with every version kept, their sources, tombstones of forgotten
sources, embedding vectors, and lexical search (FTS5 on SQLite, tsvector on PostgreSQL)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, func, select, text, update

from steward.domain import lexicon
from steward.domain.audience import Audience
from steward.domain.memory import (
    Memory,
    MemoryKind,
    MemoryStatus,
    MemoryVersion,
    Placement,
    Source,
    SourceKind,
    Tombstone,
    closed_by,
    content_hash,
    followed_by,
    place_in_slot,
)
from steward.errors import Conflict, NotFound
from steward.store import rows
from steward.store.audit import append_in
from steward.store.backend import Backend
from steward.store.schema import (
    memories,
    memory_passes,
    memory_sources,
    memory_tombstones,
    memory_vector_epochs,
    memory_vectors,
    memory_versions,
    notifications,
)


def _values(memory: Memory) -> dict[str, Any]:
    return {
        "id": memory.id,
        "person_id": memory.person_id,
        "kind": memory.kind.value,
        "content": memory.content,
        "content_hash": content_hash(memory.content),
        "subjects": rows.dump(list(memory.subjects)),
        "lexical": _lexical(memory),
        "slot": memory.slot,
        "audience": str(memory.audience),
        "confidence": memory.confidence,
        "importance": memory.importance,
        "observed_at": rows.ts(memory.observed_at),
        "valid_from": rows.ts_opt(memory.valid_from),
        "valid_to": rows.ts_opt(memory.valid_to),
        "supersedes": memory.supersedes,
        "superseded_by": memory.superseded_by,
        "status": memory.status.value,
        "version": memory.version,
        "uses": memory.uses,
        "sources": rows.dump([s.to_dict() for s in memory.sources]),
        "created_at": rows.ts(memory.created_at),
        "updated_at": rows.ts(memory.updated_at),
    }


def _lexical(memory: Memory) -> str | None:
    """What PostgreSQL's full-text index reads of a memory when its words are not simply those
    of ``content`` and ``subjects`` (it holds a script written without spaces), else None."""
    text = f"{memory.content} {' '.join(memory.subjects)}"
    return lexicon.index_text(text) if lexicon.has_unspaced(text) else None


def _memory(data: Any) -> Memory:
    return Memory(
        id=data["id"],
        person_id=data["person_id"],
        kind=MemoryKind(data["kind"]),
        content=data["content"],
        subjects=tuple(rows.load(data["subjects"])),
        slot=data["slot"],
        audience=Audience.parse(data["audience"]),
        confidence=data["confidence"],
        importance=data["importance"],
        observed_at=rows.dt(data["observed_at"]),
        valid_from=rows.dt_opt(data["valid_from"]),
        valid_to=rows.dt_opt(data["valid_to"]),
        supersedes=data["supersedes"],
        superseded_by=data["superseded_by"],
        status=MemoryStatus(data["status"]),
        version=data["version"],
        uses=data["uses"],
        sources=tuple(Source.from_dict(s) for s in rows.load(data["sources"])),
        created_at=rows.dt(data["created_at"]),
        updated_at=rows.dt(data["updated_at"]),
    )


def memory_from_row(row: Any) -> Memory:
    return _memory(row._mapping)


class MemoryRepository:
    """Memories: writes, versions, forgetting, and the core reads."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    # --- writing ----------------------------------------------------------------------------

    async def add_memory(
        self, memory: Memory, *, actor: str, reason: str = "created"
    ) -> Memory | None:
        """Write a new memory (version 1), placed in its slot's history in the same transaction
        (:func:`place_in_slot`: the values it supersedes are closed at its start). Returns
        None, writing nothing, when one of its sources was forgotten (a tombstone stands)."""

        def op(conn: Connection) -> Memory | None:
            if _forgotten(conn, memory.person_id, memory.sources):
                return None
            placement = self._placed(conn, memory)
            written = placement.memory
            conn.execute(memories.insert(), _values(written))
            _index(conn, self.backend, written)
            _version(conn, written, actor=actor, reason=reason)
            self._close(conn, written, placement.supersedes, actor=actor)
            return written

        return await self.backend.write(op)

    async def source_forgotten(self, person_id: str, sources: Sequence[Source]) -> bool:
        """Whether any of ``sources`` was forgotten (its connection included)."""
        return await self.backend.read(lambda conn: _forgotten(conn, person_id, sources))

    async def update_memory(
        self,
        memory: Memory,
        *,
        actor: str,
        reason: str,
        expected_version: int | None = None,
        place: bool = False,
    ) -> Memory:
        """Store ``memory`` as the next version of its record. With ``expected_version``, a
        record changed meanwhile is refused (:class:`Conflict`) and nothing is written. With
        ``place`` (a memory promoted or restored), it also takes its place in its slot's
        history, as :meth:`add_memory` does, in the same transaction."""

        return await self.backend.write(
            lambda conn: self.update_in(
                conn,
                memory,
                actor=actor,
                reason=reason,
                expected_version=expected_version,
                place=place,
            )
        )

    async def record_memory_uses(self, ids: Sequence[str]) -> None:
        """Count a recall of each memory (not a new version: nothing about it changed)."""
        if not ids:
            return

        def op(conn: Connection) -> None:
            conn.execute(
                update(memories).where(memories.c.id.in_(ids)).values(uses=memories.c.uses + 1)
            )

        await self.backend.write(op)

    async def put_memory_vector(
        self, memory_id: str, *, person_id: str, model: str, vector: bytes
    ) -> None:
        def op(conn: Connection) -> None:
            conn.execute(delete(memory_vectors).where(memory_vectors.c.memory_id == memory_id))
            conn.execute(
                memory_vectors.insert().values(
                    memory_id=memory_id, person_id=person_id, model=model, vector=vector
                )
            )

        await self.backend.write(op)

    async def forget_source(
        self, person_id: str, source_key: str, *, now: datetime, actor: str
    ) -> Tombstone:
        """Purge every memory derived (even in part) from ``source_key``, every version of
        them included, and leave a tombstone so that nothing is derived from it again."""

        def op(conn: Connection) -> Tombstone:
            ids = [
                r[0]
                for r in conn.execute(
                    select(memory_sources.c.memory_id).where(
                        memory_sources.c.person_id == person_id,
                        memory_sources.c.source_key == source_key,
                    )
                )
            ]
            self._purge(conn, ids)
            existing = conn.execute(
                select(memory_tombstones).where(
                    memory_tombstones.c.person_id == person_id,
                    memory_tombstones.c.source_key == source_key,
                )
            ).first()
            purged = len(ids) + (existing.purged if existing is not None else 0)
            stone = Tombstone(person_id=person_id, source_key=source_key, at=now, purged=purged)
            values = {"at": rows.ts(now), "purged": purged}
            if existing is None:
                conn.execute(
                    memory_tombstones.insert().values(
                        person_id=person_id, source_key=source_key, **values
                    )
                )
            else:
                conn.execute(
                    update(memory_tombstones)
                    .where(
                        memory_tombstones.c.person_id == person_id,
                        memory_tombstones.c.source_key == source_key,
                    )
                    .values(values)
                )
            append_in(
                conn,
                self.backend,
                person_id=person_id,
                kind="memory_forgotten",
                actor=actor,
                data={"source": source_key, "purged": len(ids)},
                now=now,
            )
            return stone

        return await self.backend.write(op)

    # --- reading ----------------------------------------------------------------------------

    async def get_memory(self, memory_id: str) -> Memory:
        return await self.backend.read(lambda conn: load_memory(conn, memory_id))

    async def get_memories(self, ids: Sequence[str]) -> list[Memory]:
        """The memories with these ids that exist, in the order asked."""
        if not ids:
            return []

        def op(conn: Connection) -> list[Memory]:
            found = {
                r.id: memory_from_row(r)
                for r in conn.execute(select(memories).where(memories.c.id.in_(list(ids))))
            }
            return [found[i] for i in ids if i in found]

        return await self.backend.read(op)

    async def list_memories(
        self,
        *,
        person_id: str,
        statuses: Sequence[MemoryStatus] | None = None,
        kind: MemoryKind | None = None,
        slot: str | None = None,
        same_as: str | None = None,
        source_key: str | None = None,
        limit: int = 200,
        offset: int = 0,
    ) -> list[Memory]:
        """Newest first. ``same_as``: only memories whose content normalizes to the same text."""

        def op(conn: Connection) -> list[Memory]:
            query = select(memories).where(memories.c.person_id == person_id)
            if statuses is not None:
                query = query.where(memories.c.status.in_([s.value for s in statuses]))
            if kind is not None:
                query = query.where(memories.c.kind == kind.value)
            if slot is not None:
                query = query.where(memories.c.slot == slot)
            if same_as is not None:
                query = query.where(memories.c.content_hash == content_hash(same_as))
            if source_key is not None:
                query = query.where(
                    memories.c.id.in_(
                        select(memory_sources.c.memory_id).where(
                            memory_sources.c.source_key == source_key
                        )
                    )
                )
            query = query.order_by(memories.c.observed_at.desc(), memories.c.id)
            return [memory_from_row(r) for r in conn.execute(query.limit(limit).offset(offset))]

        return await self.backend.read(op)

    async def count_memories(self, *, person_id: str) -> dict[str, int]:
        def op(conn: Connection) -> dict[str, int]:
            query = (
                select(memories.c.status, func.count())
                .where(memories.c.person_id == person_id)
                .group_by(memories.c.status)
            )
            return {status: n for status, n in conn.execute(query)}

        return await self.backend.read(op)

    async def memory_history(self, memory_id: str) -> list[MemoryVersion]:
        def op(conn: Connection) -> list[MemoryVersion]:
            query = (
                select(memory_versions)
                .where(memory_versions.c.memory_id == memory_id)
                .order_by(memory_versions.c.version)
            )
            return [
                MemoryVersion(
                    memory_id=r.memory_id,
                    version=r.version,
                    memory=_memory(rows.load(r.snapshot)),
                    actor=r.actor,
                    reason=r.reason,
                    at=rows.dt(r.at),
                )
                for r in conn.execute(query)
            ]

        return await self.backend.read(op)

    async def list_tombstones(self, *, person_id: str) -> list[Tombstone]:
        def op(conn: Connection) -> list[Tombstone]:
            query = (
                select(memory_tombstones)
                .where(memory_tombstones.c.person_id == person_id)
                .order_by(memory_tombstones.c.at)
            )
            return [
                Tombstone(
                    person_id=r.person_id,
                    source_key=r.source_key,
                    at=rows.dt(r.at),
                    purged=r.purged,
                )
                for r in conn.execute(query)
            ]

        return await self.backend.read(op)

    # --- inside a transaction ---------------------------------------------------------------

    def update_in(
        self,
        conn: Connection,
        memory: Memory,
        *,
        actor: str,
        reason: str,
        expected_version: int | None = None,
        place: bool = False,
    ) -> Memory:
        """:meth:`update_memory` inside the caller's transaction."""
        current = load_memory(conn, memory.id)
        if current.person_id != memory.person_id:
            raise NotFound("memory", memory.id)
        if expected_version is not None and current.version != expected_version:
            raise Conflict(
                f"memory {memory.id} changed meanwhile (now version {current.version}, "
                f"you edited version {expected_version})"
            )
        written = replace(memory, version=current.version + 1, uses=current.uses)
        supersedes: tuple[str, ...] = ()
        if place:
            placement = self._placed(conn, written)
            written, supersedes = placement.memory, placement.supersedes
        save_memory(conn, self.backend, written, actor=actor, reason=reason)
        self._close(conn, written, supersedes, actor=actor)
        return written

    def _placed(self, conn: Connection, memory: Memory) -> Placement:
        """Where ``memory`` goes among its slot's active values as they are in this
        transaction. On PostgreSQL the slot is locked first, or two writers could each place a
        value without seeing the other's; SQLite has one writer at a time already."""
        if memory.slot is None or memory.kind is MemoryKind.EPISODE:
            return place_in_slot(memory, [])
        if self.backend.name == "postgresql":
            key = f"memory-slot:{memory.person_id}:{memory.slot}"
            conn.execute(select(func.pg_advisory_xact_lock(func.hashtext(key))))
        # the status is judged here: with it in SQL, SQLite (without statistics) picks the
        # (person, status) index and walks every active memory of the person on each write
        query = select(memories).where(
            memories.c.person_id == memory.person_id,
            memories.c.slot == memory.slot,
            memories.c.kind == memory.kind.value,
            memories.c.id != memory.id,
        )
        values = [
            memory_from_row(r) for r in conn.execute(query) if r.status == MemoryStatus.ACTIVE.value
        ]
        return place_in_slot(memory, values)

    def _close(
        self, conn: Connection, placed: Memory, supersede: Sequence[str], *, actor: str
    ) -> None:
        """End each of ``supersede`` where ``placed`` starts, and link them to it; when it was
        placed before a later value, that value now supersedes it (and starts where it ends)."""
        for old_id in supersede:
            old = load_memory(conn, old_id)
            closed = closed_by(old, placed, at=placed.updated_at)
            closed = replace(closed, version=old.version + 1)
            save_memory(
                conn, self.backend, closed, actor=actor, reason=f"superseded by {placed.id}"
            )
        if placed.superseded_by is not None:
            later = load_memory(conn, placed.superseded_by)
            if later.supersedes != placed.id:
                linked = replace(
                    followed_by(later, placed, at=placed.updated_at), version=later.version + 1
                )
                save_memory(
                    conn, self.backend, linked, actor=actor, reason=f"supersedes {placed.id}"
                )

    def _purge(self, conn: Connection, ids: Sequence[str]) -> None:
        if not ids:
            return
        purged_rows = conn.execute(
            select(
                memories.c.id, memories.c.person_id, memories.c.valid_from, memories.c.observed_at
            ).where(memories.c.id.in_(list(ids)))
        ).all()
        owners = {r.person_id for r in purged_rows}
        # where a purged memory had closed an older value, the older value is current again
        for r in purged_rows:
            start = r.valid_from if r.valid_from is not None else r.observed_at
            conn.execute(
                update(memories)
                .where(memories.c.superseded_by == r.id, memories.c.valid_to == start)
                .values(valid_to=None)
            )
        person_ids = {
            r[0]
            for r in conn.execute(
                select(memory_vectors.c.person_id).where(memory_vectors.c.memory_id.in_(list(ids)))
            )
        }
        for person_id in person_ids:
            bumped = conn.execute(
                update(memory_vector_epochs)
                .where(memory_vector_epochs.c.person_id == person_id)
                .values(epoch=memory_vector_epochs.c.epoch + 1)
            )
            if bumped.rowcount == 0:
                conn.execute(memory_vector_epochs.insert().values(person_id=person_id, epoch=1))
        if self.backend.name == "sqlite":
            for memory_id in ids:
                conn.execute(
                    text(
                        "DELETE FROM memory_fts WHERE rowid = "
                        "(SELECT fts_doc FROM memories WHERE id = :id)"
                    ),
                    {"id": memory_id},
                )
        for table, column in (
            (memory_versions, memory_versions.c.memory_id),
            (memory_sources, memory_sources.c.memory_id),
            (memory_vectors, memory_vectors.c.memory_id),
            (memories, memories.c.id),
        ):
            conn.execute(delete(table).where(column.in_(list(ids))))
        _purge_from_passes(conn, owners, set(ids))
        # a memory that superseded or was superseded by a purged one no longer points at it
        conn.execute(
            update(memories).where(memories.c.supersedes.in_(list(ids))).values(supersedes=None)
        )
        conn.execute(
            update(memories)
            .where(memories.c.superseded_by.in_(list(ids)))
            .values(superseded_by=None)
        )


def _purge_from_passes(conn: Connection, owners: set[str], purged: set[str]) -> None:
    """Consolidation diffs quote memories, and a held pass's review notification quotes its
    diff: what was forgotten leaves them too."""
    query = select(memory_passes.c.id, memory_passes.c.diff).where(
        memory_passes.c.person_id.in_(owners)
    )
    for row in conn.execute(query).all():
        diff = rows.load(row.diff)
        kept = [op for op in diff["operations"] if not purged & set(op["memory_ids"])]
        if len(kept) == len(diff["operations"]):
            continue
        diff["operations"] = kept
        conn.execute(
            update(memory_passes).where(memory_passes.c.id == row.id).values(diff=rows.dump(diff))
        )
        conn.execute(
            update(notifications)
            .where(notifications.c.ref == row.id, notifications.c.kind == "memory_review")
            .values(
                body="Part of this pass quoted a memory you have since forgotten; see "
                "`steward memory passes` for what remains of it."
            )
        )


def blocking_keys(sources: Sequence[Source]) -> list[str]:
    """The source keys whose tombstone forbids deriving from ``sources``: their own, and for an
    item of a connection or of a bulk import, the whole connection's or import's (forgotten
    with it)."""
    keys = [s.key for s in sources]
    keys += [
        f"{s.kind}:{s.ref.split('/')[0]}"
        for s in sources
        if s.kind in (SourceKind.CONNECTOR, SourceKind.IMPORT) and "/" in s.ref
    ]
    return keys


def _forgotten(conn: Connection, person_id: str, sources: Sequence[Source]) -> bool:
    found = conn.execute(
        select(memory_tombstones.c.source_key).where(
            memory_tombstones.c.person_id == person_id,
            memory_tombstones.c.source_key.in_(blocking_keys(sources)),
        )
    ).first()
    return found is not None


def load_memory(conn: Connection, memory_id: str) -> Memory:
    row = conn.execute(select(memories).where(memories.c.id == memory_id)).first()
    if row is None:
        raise NotFound("memory", memory_id)
    return memory_from_row(row)


def save_memory(
    conn: Connection, backend: Backend, memory: Memory, *, actor: str, reason: str
) -> None:
    """Write a new version of ``memory`` over its record, indexed and kept in its history."""
    values = _values(memory)
    conn.execute(update(memories).where(memories.c.id == memory.id).values(values))
    _index(conn, backend, memory)
    _version(conn, memory, actor=actor, reason=reason)


def _version(conn: Connection, memory: Memory, *, actor: str, reason: str) -> None:
    conn.execute(memory_versions.insert(), version_row(memory, actor=actor, reason=reason))


def version_row(memory: Memory, *, actor: str, reason: str) -> dict[str, Any]:
    """The history row of ``memory`` as it is now."""
    values = _values(memory)
    return {
        "memory_id": memory.id,
        "version": memory.version,
        "person_id": memory.person_id,
        "snapshot": rows.dump(values),
        "actor": actor,
        "reason": reason,
        "at": values["updated_at"],
    }


def _index(conn: Connection, backend: Backend, memory: Memory) -> None:
    """Keep the source index (and SQLite's full-text table) in step with the record. The
    index keeps the sources of every version, not only the current one's: forgetting a
    source must find each record any version of which came from it."""
    indexed = set(
        conn.execute(
            select(memory_sources.c.source_key).where(memory_sources.c.memory_id == memory.id)
        ).scalars()
    )
    keys = sorted({s.key for s in memory.sources} - indexed)
    if keys:
        conn.execute(
            memory_sources.insert(),
            [
                {"memory_id": memory.id, "source_key": k, "person_id": memory.person_id}
                for k in keys
            ],
        )
    if backend.name == "sqlite":
        # the full-text row's rowid is the record's fts_doc, so it is found without a scan
        doc = conn.execute(
            select(memories.c.fts_doc).where(memories.c.id == memory.id)
        ).scalar_one()
        if doc is None:
            doc = conn.execute(
                select(func.coalesce(func.max(memories.c.fts_doc), 0) + 1)
            ).scalar_one()
            conn.execute(update(memories).where(memories.c.id == memory.id).values(fts_doc=doc))
        conn.execute(
            text(
                "INSERT OR REPLACE INTO memory_fts (rowid, content, subjects) "
                "VALUES (:doc, :content, :subjects)"
            ),
            fts_row(doc, memory),
        )


def fts_row(doc: int, memory: Memory) -> dict[str, Any]:
    """The parameters of a memory's full-text row on SQLite (``doc`` is its rowid): what the
    lexical search indexes of it. Every writer (one memory or a batch) goes through this."""
    return {
        "doc": doc,
        "content": lexicon.index_text(memory.content),
        "subjects": lexicon.index_text(" ".join(memory.subjects)),
    }
