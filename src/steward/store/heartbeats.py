"""Heartbeat and budget SQL: follow-ups, the heartbeat's pre-check (no model), and what a
trigger's tasks used today, with the pause and the one notice when a daily budget is spent.

The functions taking a ``conn`` run inside the scheduler's transaction (``store.schedule``):
a check, the task it starts and the follow-ups it consumes commit together or not at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, select, update

from steward.domain import Notification, Trigger
from steward.domain.followup import FollowUp
from steward.domain.report import Report, report_id
from steward.domain.trigger import TriggerSpend, local_day, watches_event
from steward.errors import NotFound, TooMany
from steward.store import rows
from steward.store.activations import usage_sum
from steward.store.backend import Backend
from steward.store.fencing import Fence, touch_fenced
from steward.store.inbox import insert_notification
from steward.store.planning import record_report_in
from steward.store.schema import activations, events, follow_ups, goals, tasks, triggers
from steward.store.waking import event_summary

MAX_FOUND_EVENTS = 20
"""Events a heartbeat hands its task (the count says if there were more)."""


@dataclass(kw_only=True, frozen=True)
class Findings:
    """What a heartbeat's check found for its goal."""

    follow_ups: list[FollowUp]
    """Follow-ups that fell due and nobody acted on yet."""
    events: list[dict[str, Any]]
    """Summaries of unhandled events for the goal, oldest first (at most MAX_FOUND_EVENTS)."""
    more_events: int
    """How many further events there were."""

    def to_input(self) -> dict[str, Any]:
        """The ``event`` of the task it starts: the model begins with what was found (events
        are others' text; the task context says so)."""
        return {
            "type": "heartbeat",
            "follow_ups": [
                {"due_at": f.due_at.isoformat(), "note": f.note} for f in self.follow_ups
            ],
            "events": self.events,
            "more_events": self.more_events,
        }


MAX_FOLLOW_UPS_PER_TASK = 20
"""Follow-ups one task may set: a looping model cannot fill the goal with them."""


def _too_many(conn: Connection, follow_up: FollowUp) -> bool:
    """Whether this (new) follow-up is one more than its task may set."""
    if conn.execute(select(follow_ups.c.id).where(follow_ups.c.id == follow_up.id)).first():
        return False  # a replay: stored already
    count = conn.execute(
        select(func.count()).where(follow_ups.c.task_id == follow_up.task_id)
    ).scalar_one()
    return int(count) >= MAX_FOLLOW_UPS_PER_TASK


_open = follow_ups.c.done_at.is_(None) | follow_ups.c.done_task_id.in_(
    select(tasks.c.id).where(tasks.c.status.in_(["failed", "cancelled"]))
)
"""Follow-ups still to act on: never handed over, or handed to a heartbeat task that failed or
was cancelled (so it did not act on them: the next beat hands them over again)."""


class HeartbeatRepository:
    """Follow-ups of goals and what triggers spent today."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    async def add_follow_up(
        self, follow_up: FollowUp, *, fence: Fence | None = None, lease_now: datetime | None = None
    ) -> FollowUp:
        """Store a follow-up once per id (a replayed step adds nothing)."""

        def op(conn: Connection) -> FollowUp:
            if fence is not None:
                touch_fenced(self.backend, conn, fence, lease_now)
            owner = conn.execute(
                select(goals.c.person_id).where(goals.c.id == follow_up.goal_id)
            ).scalar()
            if owner != follow_up.person_id:
                raise NotFound("goal", follow_up.goal_id)
            if follow_up.task_id is not None and _too_many(conn, follow_up):
                raise TooMany(
                    f"a task can set at most {MAX_FOLLOW_UPS_PER_TASK} follow-ups; "
                    "fold what is left into one of them"
                )
            conn.execute(
                self.backend.insert_ignore(
                    follow_ups,
                    {
                        "id": follow_up.id,
                        "person_id": follow_up.person_id,
                        "goal_id": follow_up.goal_id,
                        "task_id": follow_up.task_id,
                        "due_at": rows.ts(follow_up.due_at),
                        "note": follow_up.note,
                        "created_at": rows.ts(follow_up.created_at),
                        "done_at": None,
                        "done_task_id": None,
                    },
                )
            )
            row = conn.execute(select(follow_ups).where(follow_ups.c.id == follow_up.id)).one()
            return rows.follow_up(row)

        return await self.backend.write(op)

    async def list_follow_ups(
        self, goal_id: str, *, pending: bool = False, latest: bool = False, limit: int = 200
    ) -> list[FollowUp]:
        """A goal's follow-ups, soonest due first; ``latest``: the ``limit`` due last."""
        order = follow_ups.c.due_at.desc() if latest else follow_ups.c.due_at
        query = (
            select(follow_ups)
            .where(follow_ups.c.goal_id == goal_id)
            .order_by(order, follow_ups.c.id)
            .limit(limit)
        )
        if pending:
            query = query.where(_open)
        return await self.backend.read(
            lambda conn: [rows.follow_up(r) for r in conn.execute(query)]
        )

    async def spend_today(self, trigger: Trigger, *, now: datetime) -> TriggerSpend:
        """What the tasks ``trigger`` started today (in its zone) have used so far."""
        start, _ = local_day(trigger.timezone, now)
        return await self.backend.read(lambda conn: spend_since(conn, trigger.id, rows.ts(start)))


def spend_since(conn: Connection, trigger_id: str, since: float) -> TriggerSpend:
    started = select(tasks.c.id).where(
        tasks.c.trigger_id == trigger_id, tasks.c.created_at >= since
    )
    runs = conn.execute(select(func.count()).select_from(started.subquery())).scalar_one()
    tokens, cost = usage_sum(conn, activations.c.task_id.in_(started.scalar_subquery()))
    return TriggerSpend(runs=int(runs), tokens=int(tokens), cost_usd=cost)


def budget_stop(backend: Backend, conn: Connection, trigger: Trigger, now_f: float) -> bool:
    """Whether ``trigger`` may not start another task today. When its budget is spent, pause
    it until the next local midnight (a timer trigger's next firing moves there; the scheduler
    puts it back on its schedule then) and tell the person, once per trigger and day."""
    if trigger.budget is None:
        return False
    now = rows.dt(now_f)
    start, resume = local_day(trigger.timezone, now)
    spend = spend_since(conn, trigger.id, rows.ts(start))
    spent = trigger.budget.spent_by(spend)
    if spent is None:
        return False
    values: dict[str, Any] = {"paused_until": rows.ts(resume)}
    if trigger.next_fire_at is not None:
        values["next_fire_at"] = rows.ts(resume)
    conn.execute(update(triggers).where(triggers.c.id == trigger.id).values(values))
    pause = f"{trigger.id}_{round(rows.ts(resume))}_{spend.runs}"
    insert_notification(
        backend,
        conn,
        Notification(
            # once per pause: a raised (or lowered) budget spent again the same day is a
            # new pause with a new run count, and says so again
            id=f"ntf_budget_{pause}",
            person_id=trigger.person_id,
            kind="budget",
            title=f"'{trigger.name}' stopped for today: it used {spent}.",
            body=(
                "It resumes at midnight — or raise its budget to let it run again today "
                "(steward trigger budget)."
            ),
            goal_id=trigger.goal_id,
            created_at=now,
        ),
    )
    stopped = Report(
        id=report_id(f"budget:{pause}"),
        person_id=trigger.person_id,
        goal_id=trigger.goal_id,
        origin="runtime",
        what=f"'{trigger.name}' stopped for today: it used {spent}",
        why="It resumes at midnight.",
        todo="Raise its budget if it should run again today.",
        importance="actionable",
        created_at=now,
    )
    record_report_in(conn, backend, stopped)
    return True


def check_heartbeat(conn: Connection, trigger: Trigger, now_f: float) -> Findings | None:
    """The heartbeat's pre-check, without a model: the goal's follow-ups that are due, and the
    events routed since its last check that nothing else took (no waiting task woke on them,
    no event trigger fired for them) and that are for the goal — of a type it watches, or
    naming the goal in their payload (``goal_id``). None when there is nothing to do."""
    assert trigger.goal_id is not None  # the service refuses a heartbeat without a goal
    due = [
        rows.follow_up(r)
        for r in conn.execute(
            select(follow_ups)
            .where(
                follow_ups.c.goal_id == trigger.goal_id,
                _open,
                follow_ups.c.due_at <= now_f,
            )
            .order_by(follow_ups.c.due_at)
        )
    ]
    since = rows.ts(trigger.last_beat_at or trigger.created_at)
    found: list[dict[str, Any]] = []
    for row in conn.execute(
        select(events)
        .where(
            events.c.person_id == trigger.person_id,
            # routing runs after the triggers in a scheduler tick: what it routes at the
            # moment of one check is seen by the next
            events.c.routed_at >= since,
            events.c.routed_at < now_f,
            events.c.consumed_at.is_(None),
        )
        .order_by(events.c.routed_at)
    ):
        event = rows.event(row)
        if watches_event(trigger.watch, event.type) or (
            event.payload.get("goal_id") == trigger.goal_id
        ):
            found.append(event_summary(event))
    if not due and not found:
        return None
    return Findings(
        follow_ups=due,
        events=found[:MAX_FOUND_EVENTS],
        more_events=max(0, len(found) - MAX_FOUND_EVENTS),
    )


def record_beat(
    conn: Connection,
    trigger: Trigger,
    findings: Findings | None,
    task_id: str | None,
    now_f: float,
) -> None:
    """After a check: count an idle one, or mark what the started task took over. A check
    whose task the budget stopped changes nothing, so the next check finds the same."""
    if findings is None:
        conn.execute(
            update(triggers)
            .where(triggers.c.id == trigger.id)
            .values(idle_beats=triggers.c.idle_beats + 1, last_beat_at=now_f)
        )
        return
    if task_id is None:
        return
    conn.execute(update(triggers).where(triggers.c.id == trigger.id).values(last_beat_at=now_f))
    if findings.follow_ups:
        conn.execute(
            update(follow_ups)
            .where(follow_ups.c.id.in_([f.id for f in findings.follow_ups]))
            .values(done_at=now_f, done_task_id=task_id)
        )
