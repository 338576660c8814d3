"""The append-only, hash-chained audit log.

One chain for everyone, in ``seq`` order; a person's view is the chain filtered to their
entries. Rows are only ever inserted: no statement in the store updates or deletes them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, Select, func, insert, literal, select

from steward.domain import AuditEntry
from steward.domain.auditchain import (
    GENESIS,
    AuditVerdict,
    canonical_json,
    entry_hash,
    normalize,
    verify,
)
from steward.domain.authority import AuditFilter
from steward.errors import UsageError
from steward.store import rows
from steward.store.backend import Backend
from steward.store.schema import audit_log, tasks

_CHAIN_LOCK = 0x5354_5741_5244_A0D1
"""PostgreSQL advisory lock key that stands for "the head of the audit chain"."""

_MAX_KIND = audit_log.c.kind.type.length  # type: ignore[attr-defined]
_MAX_ACTOR = audit_log.c.actor.type.length  # type: ignore[attr-defined]


class AuditRepository:
    """The hash-chained audit log."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    async def append_audit(
        self,
        *,
        person_id: str | None,
        kind: str,
        actor: str,
        data: dict[str, Any],
        now: datetime,
    ) -> AuditEntry:
        """Append one entry, chained to the last one, in a transaction of its own."""

        def op(conn: Connection) -> AuditEntry:
            return append_in(
                conn, self.backend, person_id=person_id, kind=kind, actor=actor, data=data, now=now
            )

        return await self.backend.write(op)

    async def list_audit(
        self, *, person_id: str | None = None, after_seq: int = 0, limit: int = 500
    ) -> list[AuditEntry]:
        """Entries after ``after_seq`` in chain order: one person's, or (None) everyone's."""
        query = (
            select(audit_log)
            .where(audit_log.c.seq > after_seq)
            .order_by(audit_log.c.seq)
            .limit(limit)
        )
        if person_id is not None:
            query = query.where(audit_log.c.person_id == person_id)
        return await self.backend.read(lambda conn: [_entry(r) for r in conn.execute(query)])

    async def list_recent_audit(
        self,
        *,
        person_id: str | None = None,
        before_seq: int | None = None,
        limit: int = 200,
        only: AuditFilter | None = None,
    ) -> list[AuditEntry]:
        """Entries before ``before_seq`` (None: from the newest), newest first: one person's,
        or (None) everyone's; with ``only``, those it lets through (a page's cursor is the
        last entry's seq, so paging filtered entries returns each exactly once)."""
        query = select(audit_log).order_by(audit_log.c.seq.desc()).limit(limit)
        if before_seq is not None:
            query = query.where(audit_log.c.seq < before_seq)
        if person_id is not None:
            query = query.where(audit_log.c.person_id == person_id)
        if only is not None:
            query = _filtered(query, only)
        return await self.backend.read(lambda conn: [_entry(r) for r in conn.execute(query)])

    async def verify_audit(self, *, page_size: int = 1000) -> AuditVerdict:
        """Verify the whole chain from its first entry, a page at a time. The chain is global
        (entries of all persons link to each other), so there is no per-person verification."""
        verdict: AuditVerdict | None = None
        after = 0
        while True:
            page = await self.list_audit(after_seq=after, limit=page_size)
            verdict = verify(page, resume=verdict)
            if not verdict.ok or len(page) < page_size:
                return verdict
            after = page[-1].seq


def _filtered(query: Select[Any], only: AuditFilter) -> Select[Any]:
    if only.kind:
        query = query.where(audit_log.c.kind == only.kind)
    if only.tool:
        # the data is canonical JSON (sorted keys, no whitespace): the tool's field, exactly
        needle = canonical_json({"tool": only.tool})[1:-1]
        escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        query = query.where(audit_log.c.data.like(f"%{escaped}%", escape="\\"))
    if only.goal_id:
        # what the goal's tasks' agents did, and what was decided about them
        agents = select(literal("agent:") + tasks.c.id).where(tasks.c.goal_id == only.goal_id)
        query = query.where(audit_log.c.actor.in_(agents))
    if only.since is not None:
        query = query.where(audit_log.c.at >= rows.ts(only.since))
    if only.until is not None:
        query = query.where(audit_log.c.at < rows.ts(only.until))
    return query


def append_in(
    conn: Connection,
    backend: Backend,
    *,
    person_id: str | None,
    kind: str,
    actor: str,
    data: dict[str, Any],
    now: datetime,
) -> AuditEntry:
    """Append one entry inside the caller's transaction, so that it commits (or rolls back)
    with the change it records. ``data`` must hold no secret value.

    Appends are serialized: each one reads the head of the chain and inserts ``seq + 1``
    linked to its hash, and two appenders reading the same head would fork the chain (the
    primary key on ``seq`` would then reject one of them, failing its whole transaction).
    SQLite has a single writer at a time (``BEGIN IMMEDIATE``), which serializes them already.
    On PostgreSQL, a transaction-scoped advisory lock does, across every process and
    connection pool: the head is read after the lock is granted, and at READ COMMITTED that
    read sees the previous holder's entry, committed before its lock was released. Row locks
    could not do this: there is no row yet for the next seq to lock. The lock is held until
    commit, so call this as the last statement of a transaction.
    """
    if len(kind) > _MAX_KIND or len(actor) > _MAX_ACTOR:
        raise UsageError(
            f"audit kind is at most {_MAX_KIND} and actor {_MAX_ACTOR} characters: "
            f"{kind!r}, {actor!r}"
        )
    body = normalize(data)
    at_f = rows.ts(now)
    # hash the instant as it will read back from the float column, not the caller's datetime
    at = rows.dt(at_f)
    if backend.name == "postgresql":
        conn.execute(select(func.pg_advisory_xact_lock(_CHAIN_LOCK)))
    head = conn.execute(
        select(audit_log.c.seq, audit_log.c.hash).order_by(audit_log.c.seq.desc()).limit(1)
    ).first()
    seq, prev_hash = (1, GENESIS) if head is None else (head.seq + 1, head.hash)
    digest = entry_hash(prev_hash, seq, person_id, at, kind, actor, body)
    conn.execute(
        insert(audit_log).values(
            seq=seq,
            person_id=person_id,
            at=at_f,
            kind=kind,
            actor=actor,
            data=canonical_json(body),
            prev_hash=prev_hash,
            hash=digest,
        )
    )
    return AuditEntry(
        seq=seq,
        person_id=person_id,
        at=at,
        kind=kind,
        actor=actor,
        data=body,
        prev_hash=prev_hash,
        hash=digest,
    )


def _entry(row: Row[Any]) -> AuditEntry:
    m = row._mapping
    return AuditEntry(
        seq=m["seq"],
        person_id=m["person_id"],
        at=rows.dt(m["at"]),
        kind=m["kind"],
        actor=m["actor"],
        data=rows.load(m["data"]),
        prev_hash=m["prev_hash"],
        hash=m["hash"],
    )
