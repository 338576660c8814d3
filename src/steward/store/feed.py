"""The feed (:class:`~steward.domain.feed.FeedEntry`): appended inside the transaction of the
change it reports, read by seq."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, insert, select

from steward.domain.feed import FeedEntry
from steward.store import rows
from steward.store.backend import Backend
from steward.store.schema import feed

MAX_SUMMARY = 300


def append_feed(
    conn: Connection,
    backend: Backend,
    *,
    person_id: str,
    at: datetime,
    kind: str,
    summary: str,
    goal_id: str | None = None,
    task_id: str | None = None,
    ref: str | None = None,
    data: dict[str, Any] | None = None,
) -> None:
    """Add an entry in the caller's transaction.

    A reader resumes after the last seq it saw, so one person's entries must commit in seq
    order. SQLite has one writer at a time. On PostgreSQL a sequence hands out numbers at insert
    and two transactions may commit in the other order, so appends for one person are
    serialized by a transaction-scoped advisory lock taken before the number is drawn and held
    to commit. Call this last in a transaction (an audit append, whose lock is global, may
    follow it; nothing else should, so that the lock is held briefly and never waited on in the
    other order)."""
    if backend.name == "postgresql":
        conn.execute(select(func.pg_advisory_xact_lock(func.hashtext(f"feed:{person_id}"))))
    short = summary if len(summary) <= MAX_SUMMARY else summary[: MAX_SUMMARY - 1] + "…"
    conn.execute(
        insert(feed).values(
            person_id=person_id,
            at=rows.ts(at),
            kind=kind,
            goal_id=goal_id,
            task_id=task_id,
            ref=ref,
            summary=short,
            data=rows.dump(data or {}),
        )
    )


class FeedRepository:
    """The activity feed."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    async def feed_since(
        self,
        *,
        person_id: str,
        after_seq: int = 0,
        goal_id: str | None = None,
        limit: int = 500,
    ) -> list[FeedEntry]:
        """The person's entries after ``after_seq`` (of one goal, with ``goal_id``), oldest
        first."""

        def op(conn: Connection) -> list[FeedEntry]:
            query = select(feed).where(feed.c.person_id == person_id, feed.c.seq > after_seq)
            if goal_id is not None:
                query = query.where(feed.c.goal_id == goal_id)
            query = query.order_by(feed.c.seq).limit(limit)
            return [_entry(r) for r in conn.execute(query)]

        return await self.backend.read(op)

    async def feed_head(self, *, person_id: str) -> int:
        """The person's newest seq (0 when the feed is empty)."""

        def op(conn: Connection) -> int:
            query = select(func.coalesce(func.max(feed.c.seq), 0)).where(
                feed.c.person_id == person_id
            )
            return int(conn.execute(query).scalar_one())

        return await self.backend.read(op)


def _entry(row: Any) -> FeedEntry:
    return FeedEntry(
        seq=row.seq,
        person_id=row.person_id,
        at=rows.dt(row.at),
        kind=row.kind,
        summary=row.summary,
        goal_id=row.goal_id,
        task_id=row.task_id,
        ref=row.ref,
        data=rows.load(row.data),
    )
