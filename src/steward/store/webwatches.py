"""Web watches: the watched pages, their claims under lease, their checks and readings.

Due watches are claimed in batches (:meth:`WebWatchRepository.claim_due`): one transaction
takes up to ``limit`` of them under a lease, so ten thousand watches cost a claim per batch,
not a lease per watch, and two processes never check the same watch at once. A check's result
— the new state, a reading when the value changed, and its event when it matters — is stored
in one transaction (:meth:`~WebWatchRepository.record_check`), fenced by the claim: a process
that lost its lease records nothing, and an event's dedupe key is the claim's number, so a
check recorded twice is one event.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import ColumnElement, Connection, case, delete, func, insert, or_, select, update

from steward.domain import Event, Trigger
from steward.domain.webwatch import (
    MAX_READINGS,
    WEB_CHANGED,
    Condition,
    Extract,
    Extractor,
    Reading,
    Value,
    WebWatch,
)
from steward.errors import NotFound
from steward.store import rows
from steward.store.backend import Backend
from steward.store.fencing import lease_clock
from steward.store.persons import load_person
from steward.store.schedule import _trigger_values, insert_event
from steward.store.schema import goals, triggers, web_readings, web_watches

MAX_ERROR = 500
"""Characters of a failure kept for the person's view."""


@dataclass(kw_only=True, frozen=True)
class CheckResult:
    """What one check of a claimed watch found, to be stored at once."""

    at: datetime
    """When the page was read."""
    next_check_at: datetime
    """When the watch is due again."""
    value: Value
    """The value read (the last one again when the page was not modified)."""
    matched: bool
    """Whether the conditions hold now."""
    changed: bool
    """Whether the value differs from the last one (a reading is stored)."""
    etag: str | None
    """The page's validators, sent with the next check."""
    last_modified: str | None
    """The page's Last-Modified."""
    event: dict[str, Any] | None = None
    """The ``web.changed`` event's payload, when the check matters."""


class WebWatchRepository:
    """Watched pages: set-up, claims, checks, readings."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    async def create(self, watch: WebWatch, trigger: Trigger | None = None) -> WebWatch:
        """Store a new watch and, when it wakes a goal, that goal's event trigger: both or
        neither. The goal must be the person's."""
        values = _values(watch)

        def op(conn: Connection) -> WebWatch:
            load_person(conn, watch.person_id)
            if watch.goal_id is not None:
                owner = conn.execute(
                    select(goals.c.person_id).where(goals.c.id == watch.goal_id)
                ).scalar()
                if owner != watch.person_id:
                    raise NotFound("goal", watch.goal_id)
            if trigger is not None:
                conn.execute(insert(triggers).values(_trigger_values(trigger)))
            conn.execute(insert(web_watches).values(values))
            return _get(conn, watch.id)

        return await self.backend.write(op)

    async def get(self, watch_id: str) -> WebWatch:
        return await self.backend.read(lambda conn: _get(conn, watch_id))

    async def list_for(self, person_id: str | None) -> list[WebWatch]:
        """One person's watches (None: everyone's), oldest first."""
        query = select(web_watches).order_by(web_watches.c.created_at, web_watches.c.id)
        if person_id is not None:
            query = query.where(web_watches.c.person_id == person_id)
        return await self.backend.read(lambda conn: [_watch(r) for r in conn.execute(query)])

    async def set_enabled(self, watch_id: str, *, enabled: bool, now: datetime) -> WebWatch:
        """Pause or resume a watch and its goal trigger; resumed, it is checked at once."""

        def op(conn: Connection) -> WebWatch:
            watch = _get(conn, watch_id)
            changes: dict[str, Any] = {"enabled": enabled}
            if enabled and not watch.enabled:
                changes["next_check_at"] = rows.ts(now)
            conn.execute(update(web_watches).where(web_watches.c.id == watch_id).values(changes))
            if watch.trigger_id is not None:
                conn.execute(
                    update(triggers)
                    .where(triggers.c.id == watch.trigger_id)
                    .values(enabled=enabled)
                )
            return _get(conn, watch_id)

        return await self.backend.write(op)

    async def delete(self, watch_id: str) -> WebWatch:
        """Remove a watch with its readings; its goal trigger is disabled (its firings stay
        in the goal's history)."""

        def op(conn: Connection) -> WebWatch:
            watch = _get(conn, watch_id)
            conn.execute(delete(web_readings).where(web_readings.c.watch_id == watch_id))
            conn.execute(delete(web_watches).where(web_watches.c.id == watch_id))
            if watch.trigger_id is not None:
                conn.execute(
                    update(triggers).where(triggers.c.id == watch.trigger_id).values(enabled=False)
                )
            return watch

        return await self.backend.write(op)

    # --- claims and checks --------------------------------------------------------------

    async def claim_due(
        self,
        *,
        holder: str,
        now: datetime,
        limit: int,
        lease_seconds: float,
        lease_now: datetime | None = None,
    ) -> list[WebWatch]:
        """Take up to ``limit`` enabled watches due by ``now`` and not leased to another
        process, earliest first, leased to ``holder`` for ``lease_seconds``. Each claim
        counts in :attr:`WebWatch.checks`."""
        lease_sql = lease_clock(self.backend, lease_now)
        due = _due(rows.ts(now), lease_sql)

        def op(conn: Connection) -> list[WebWatch]:
            ids = [
                r[0]
                for r in conn.execute(
                    self.backend.lock_rows(
                        select(web_watches.c.id)
                        .where(due)
                        .order_by(web_watches.c.next_check_at)
                        .limit(limit)
                    )
                )
            ]
            if not ids:
                return []
            claimed = conn.execute(
                update(web_watches)
                .where(web_watches.c.id.in_(ids), due)
                .values(
                    lease_holder=holder,
                    lease_expires_at=lease_sql + lease_seconds,
                    checks=web_watches.c.checks + 1,
                )
                .returning(*web_watches.c)
            ).all()
            return sorted((_watch(r) for r in claimed), key=lambda w: w.next_check_at)

        return await self.backend.write(op)

    async def next_due(self) -> datetime | None:
        """When the earliest enabled watch is due (a leased one: not before its lease ends),
        or None without any."""
        return await self.backend.read(lambda conn: rows.dt_opt(conn.execute(_NEXT_DUE).scalar()))

    async def record_check(
        self, watch: WebWatch, *, holder: str, result: CheckResult
    ) -> tuple[Event, bool] | None:
        """Store a claimed watch's check: its new state, a reading when the value changed,
        and its event when it matters, in one transaction. Returns the event and whether it
        was new (None without one). A watch no longer claimed by ``holder`` under this claim
        (its lease lapsed and another process took it, or it was removed) records nothing."""
        value = _dump_value(result.value)
        state: dict[str, Any] = {
            "checked_at": rows.ts(result.at),
            "next_check_at": rows.ts(result.next_check_at),
            "value": value,
            "matched": result.matched,
            "etag": result.etag,
            "last_modified": result.last_modified,
            "failures": 0,
            "last_error": None,
            "lease_holder": None,
            "lease_expires_at": None,
        }
        if result.changed or watch.value is None:
            state["changed_at"] = rows.ts(result.at)

        def op(conn: Connection) -> tuple[Event, bool] | None:
            if not _fenced_update(conn, watch, holder, state):
                return None
            if result.changed or watch.value is None:
                _add_reading(conn, watch.id, result.at, value)
            if result.event is None:
                return None
            return insert_event(
                self.backend,
                conn,
                person_id=watch.person_id,
                type=WEB_CHANGED,
                source=f"watch:{watch.id}",
                dedupe_key=f"web:{watch.id}:{watch.checks}",
                payload=result.event,
                now=result.at,
            )

        return await self.backend.write(op)

    async def record_failure(
        self, watch: WebWatch, *, holder: str, error: str, retry_at: datetime
    ) -> int | None:
        """Count a failed check of a claimed watch and hold it until ``retry_at``; returns
        the failures in a row (None: no longer claimed, nothing recorded)."""
        failures = watch.failures + 1
        state = {
            "failures": failures,
            "last_error": error[:MAX_ERROR],
            "next_check_at": rows.ts(retry_at),
            "lease_holder": None,
            "lease_expires_at": None,
        }

        def op(conn: Connection) -> int | None:
            return failures if _fenced_update(conn, watch, holder, state) else None

        return await self.backend.write(op)

    async def release(self, watch_ids: Sequence[str], *, holder: str) -> None:
        """Give back claims not checked (the process is stopping): due again at once."""

        def op(conn: Connection) -> None:
            conn.execute(
                update(web_watches)
                .where(web_watches.c.id.in_(list(watch_ids)), web_watches.c.lease_holder == holder)
                .values(lease_holder=None, lease_expires_at=None)
            )

        if watch_ids:
            await self.backend.write(op)

    async def readings(self, watch_id: str, *, limit: int = MAX_READINGS) -> list[Reading]:
        """The watch's values over time, oldest first (the latest ``limit``)."""
        query = (
            select(web_readings)
            .where(web_readings.c.watch_id == watch_id)
            .order_by(web_readings.c.id.desc())
            .limit(limit)
        )

        def op(conn: Connection) -> list[Reading]:
            found = [
                Reading(watch_id=watch_id, at=rows.dt(r.at), value=_load_value(r.value))
                for r in conn.execute(query)
            ]
            return found[::-1]

        return await self.backend.read(op)


_NEXT_DUE = select(
    func.min(
        case(
            (
                web_watches.c.lease_expires_at > web_watches.c.next_check_at,
                web_watches.c.lease_expires_at,
            ),
            else_=web_watches.c.next_check_at,
        )
    )
).where(web_watches.c.enabled.is_(True))
"""When the earliest enabled watch may be claimed (a leased one: when its lease ends)."""


def _due(now: float, lease_sql: ColumnElement[float]) -> ColumnElement[bool]:
    return (
        web_watches.c.enabled.is_(True)
        & (web_watches.c.next_check_at <= now)
        & or_(web_watches.c.lease_expires_at.is_(None), web_watches.c.lease_expires_at < lease_sql)
    )


def _fenced_update(conn: Connection, watch: WebWatch, holder: str, state: dict[str, Any]) -> bool:
    """Apply ``state`` if ``holder`` still holds this claim of the watch (its lease may have
    lapsed unnoticed: nobody else took it meanwhile, so its check still counts)."""
    done = conn.execute(
        update(web_watches)
        .where(
            web_watches.c.id == watch.id,
            web_watches.c.lease_holder == holder,
            web_watches.c.checks == watch.checks,
        )
        .values(state)
    )
    return bool(done.rowcount)


def _add_reading(conn: Connection, watch_id: str, at: datetime, value: str) -> None:
    conn.execute(insert(web_readings).values(watch_id=watch_id, at=rows.ts(at), value=value))
    oldest_kept = conn.execute(
        select(web_readings.c.id)
        .where(web_readings.c.watch_id == watch_id)
        .order_by(web_readings.c.id.desc())
        .offset(MAX_READINGS - 1)
        .limit(1)
    ).scalar()
    if oldest_kept is not None:
        conn.execute(
            delete(web_readings).where(
                web_readings.c.watch_id == watch_id, web_readings.c.id < oldest_kept
            )
        )


def _get(conn: Connection, watch_id: str) -> WebWatch:
    row = conn.execute(select(web_watches).where(web_watches.c.id == watch_id)).first()
    if row is None:
        raise NotFound("watch", watch_id)
    return _watch(row)


def _values(watch: WebWatch) -> dict[str, Any]:
    return {
        "id": watch.id,
        "person_id": watch.person_id,
        "goal_id": watch.goal_id,
        "trigger_id": watch.trigger_id,
        "name": watch.name,
        "url": watch.url,
        "extract": rows.dump({"how": watch.extract.how.value, "expr": watch.extract.expr}),
        "conditions": rows.dump([c.to_json() for c in watch.conditions]),
        "interval_seconds": watch.interval_seconds,
        "jitter_seconds": watch.jitter_seconds,
        "enabled": watch.enabled,
        "created_at": rows.ts(watch.created_at),
        "next_check_at": rows.ts(watch.next_check_at),
        "checked_at": rows.ts_opt(watch.checked_at),
        "changed_at": rows.ts_opt(watch.changed_at),
        "value": None if watch.value is None else _dump_value(watch.value),
        "matched": watch.matched,
        "etag": watch.etag,
        "last_modified": watch.last_modified,
        "failures": watch.failures,
        "last_error": watch.last_error,
        "checks": watch.checks,
    }


def _watch(row: Any) -> WebWatch:
    m = row._mapping
    extract = rows.load(m["extract"])
    return WebWatch(
        id=m["id"],
        person_id=m["person_id"],
        goal_id=m["goal_id"],
        trigger_id=m["trigger_id"],
        name=m["name"],
        url=m["url"],
        extract=Extract(how=Extractor(extract["how"]), expr=extract["expr"]),
        conditions=tuple(Condition.from_json(c) for c in rows.load(m["conditions"])),
        interval_seconds=m["interval_seconds"],
        jitter_seconds=m["jitter_seconds"],
        enabled=bool(m["enabled"]),
        created_at=rows.dt(m["created_at"]),
        next_check_at=rows.dt(m["next_check_at"]),
        checked_at=rows.dt_opt(m["checked_at"]),
        changed_at=rows.dt_opt(m["changed_at"]),
        value=None if m["value"] is None else _load_value(m["value"]),
        matched=bool(m["matched"]),
        etag=m["etag"],
        last_modified=m["last_modified"],
        failures=m["failures"],
        last_error=m["last_error"],
        checks=m["checks"],
    )


def _dump_value(value: Value) -> str:
    return rows.dump(
        {
            "text": value.text,
            "number": None if value.number is None else str(value.number),
            "currency": value.currency,
        }
    )


def _load_value(text: str) -> Value:
    data = rows.load(text)
    number = data.get("number")
    return Value(
        text=data.get("text"),
        number=None if number is None else Decimal(number),
        currency=data.get("currency"),
    )
