"""Sleeping and waking: wait conditions, wake-ups, and the locks that keep a wake-up from
being lost between a task going to sleep and the thing it waits for happening."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, func, select, update

from steward.domain import Event, TaskStatus, WaitCondition
from steward.domain.task import TERMINAL_TASK_STATUSES
from steward.store import notify, rows
from steward.store.backend import Backend
from steward.store.schema import approvals, effects, events, persons, tasks

TERMINAL = [s.value for s in TERMINAL_TASK_STATUSES]
LIVE = [s.value for s in TaskStatus if s not in TERMINAL_TASK_STATUSES]


def _wait_values(cond: WaitCondition) -> dict[str, Any]:
    return {
        "status": "waiting",
        "wait": rows.dump(cond.to_json()),
        "wait_until": rows.ts_opt(cond.until),
        "wait_event": cond.event_type if cond.kind == "event" else None,
    }


def _already_satisfied(
    conn: Connection, cond: WaitCondition, task_id: str, person_id: str, now_f: float
) -> dict[str, Any] | None:
    """A wait whose condition already holds as it is registered: its children are all done, or
    a matching event arrived after ``cond.since`` (so an early reply is not lost). An event
    the task takes so is consumed, in the same transaction: no heartbeat handles it again."""
    if cond.kind == "children" and _children_done(conn, task_id):
        return {"reason": "children"}
    if cond.kind == "approval" and cond.ref is not None:
        # decided (or expired) while the task was still running: nobody will wake it later
        status = conn.execute(select(approvals.c.status).where(approvals.c.id == cond.ref)).scalar()
        if status is not None and status != "pending":
            return {"reason": "approval", "ref": cond.ref}
    if cond.kind == "effect" and cond.ref is not None:
        # resolved by the person while the task was still running
        status = conn.execute(select(effects.c.status).where(effects.c.id == cond.ref)).scalar()
        if status is not None and status != "in_doubt":
            return {"reason": "effect", "effect_id": cond.ref}
    if cond.kind == "event" and cond.since is not None:
        arrived = conn.execute(
            select(events)
            .where(
                events.c.person_id == person_id,
                events.c.type == cond.event_type,
                events.c.received_at >= rows.ts(cond.since),
            )
            .order_by(events.c.received_at)
        )
        for row in arrived:
            event = rows.event(row)
            if event.id not in cond.seen and cond.matches_event(event.type, event.payload):
                conn.execute(
                    update(events)
                    .where(events.c.id == event.id, events.c.consumed_at.is_(None))
                    .values(consumed_at=now_f)
                )
                return {"reason": "event", "event": event_summary(event)}
    return None


def event_summary(event: Event) -> dict[str, Any]:
    """What a woken task is told about the event that woke it."""
    return {
        "id": event.id,
        "type": event.type,
        "source": event.source,
        "payload": event.payload,
        "received_at": event.received_at.timestamp(),
    }


def _apply_pending_control(values: dict[str, Any], control: str | None) -> None:
    """Turn the new status in ``values`` into cancelled/paused if that was asked for."""
    status = values.get("status")
    if control == "cancel" and status not in TERMINAL:
        values["status"] = "cancelled"
    elif control == "pause" and status in ("pending", "waiting"):
        values |= {"status": "paused", "paused_from": status}


def wake_in(conn: Connection, task_id: str, wake: dict[str, Any], now_f: float) -> bool:
    res = conn.execute(
        update(tasks)
        .where(tasks.c.id == task_id, tasks.c.status == TaskStatus.WAITING.value)
        .values(
            status="pending",
            run_at=now_f,
            wake=rows.dump(wake),
            wait=None,
            wait_until=None,
            wait_event=None,
            updated_at=now_f,
        )
    )
    if res.rowcount == 1:
        Backend.announce(conn, notify.WORK)
        return True
    return False


def _children_done(conn: Connection, parent_id: str) -> bool:
    live = conn.execute(
        select(func.count()).where(tasks.c.parent_id == parent_id, tasks.c.status.in_(LIVE))
    ).scalar()
    return live == 0


def _lock_against_lost_wakeups(
    conn: Connection, cond: WaitCondition, task_id: str, person_id: str
) -> None:
    """Serialize going to sleep with what would wake the sleeper (on PostgreSQL; SQLite has
    one writer anyway). Under READ COMMITTED, a task registering a wait and a concurrent waker
    could each miss the other's uncommitted work: a child finishing locks its parent's row, and
    event routing locks the person's row, so the sleeper takes the same lock first."""
    if cond.kind in ("children", "approval", "effect"):
        conn.execute(select(tasks.c.id).where(tasks.c.id == task_id).with_for_update())
    elif cond.kind == "event":
        conn.execute(
            select(persons.c.id).where(persons.c.id == person_id).with_for_update(key_share=True)
        )


def _wake_parent_if_children_done(conn: Connection, parent_id: str, now_f: float) -> None:
    # Lock the parent whatever its status (see _lock_against_lost_wakeups): filtering on
    # 'waiting' would skip, without waiting, a parent that is just going to sleep.
    parent = conn.execute(
        select(tasks.c.status, tasks.c.wait).where(tasks.c.id == parent_id).with_for_update()
    ).first()
    if parent is None or parent.status != "waiting" or parent.wait is None:
        return
    if rows.load(parent.wait).get("kind") != "children":
        return
    if _children_done(conn, parent_id):
        wake_in(conn, parent_id, {"reason": "children"}, now_f)
