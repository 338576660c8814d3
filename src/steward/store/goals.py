"""Goals and the goal state/records activations write back into."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import Connection, insert, select, update

from steward.domain import Budget, Goal, GoalRecord, GoalStatus, check_goal_transition
from steward.domain.goal import GoalRecordKind
from steward.domain.ids import new_id
from steward.domain.runtime_reports import goal_ended
from steward.errors import NotFound
from steward.store import rows
from steward.store.backend import Backend
from steward.store.fencing import Fence, touch_fenced
from steward.store.persons import load_person
from steward.store.planning import record_report_in
from steward.store.schema import goal_records, goals, tasks, triggers
from steward.store.tasks import close_effects_of_ended

_IDLE_LIVE = ["pending", "waiting", "paused"]


class GoalRepository:
    """Goals, their state and records."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    # --- goals --------------------------------------------------------------------------

    async def create_goal(
        self,
        *,
        person_id: str,
        title: str,
        now: datetime,
        instructions: str = "",
        constraints: Sequence[str] = (),
        deadline: datetime | None = None,
        stop_condition: str = "",
        report_policy: str = "actionable",
        sources: Sequence[str] = (),
        budget: Budget | None = None,
    ) -> Goal:
        goal_id = new_id("gol")
        values: dict[str, Any] = {
            "id": goal_id,
            "person_id": person_id,
            "title": title,
            "instructions": instructions,
            "constraints": rows.dump(list(constraints)),
            "deadline": rows.ts_opt(deadline),
            "stop_condition": stop_condition,
            "report_policy": report_policy,
            "sources": rows.dump(list(sources)),
            "budget": rows.dump((budget or Budget()).to_json()),
            "status": GoalStatus.ACTIVE.value,
            "state": "{}",
            "created_at": rows.ts(now),
            "updated_at": rows.ts(now),
        }

        def op(conn: Connection) -> Goal:
            load_person(conn, person_id)
            conn.execute(insert(goals).values(values))
            return _get_goal(conn, goal_id)

        return await self.backend.write(op)

    async def get_goal(self, goal_id: str) -> Goal:
        return await self.backend.read(lambda conn: _get_goal(conn, goal_id))

    async def list_goals(
        self,
        *,
        person_id: str | None = None,
        status: Sequence[GoalStatus] | None = None,
        limit: int = 100,
    ) -> list[Goal]:
        query = select(goals).order_by(goals.c.created_at.desc()).limit(limit)
        if person_id is not None:
            query = query.where(goals.c.person_id == person_id)
        if status:
            query = query.where(goals.c.status.in_([s.value for s in status]))
        return await self.backend.read(lambda conn: [rows.goal(r) for r in conn.execute(query)])

    async def set_goal_status(self, goal_id: str, status: GoalStatus, *, now: datetime) -> Goal:
        """Change a goal's status. Ending a goal cancels its open tasks (running ones at their
        next step boundary) and disables its triggers; its records and state stay."""
        now_f = rows.ts(now)

        def op(conn: Connection) -> Goal:
            goal = _get_goal(conn, goal_id)
            check_goal_transition(goal.status, status)
            _apply_goal_status(self.backend, conn, goal_id, status, now_f)
            return _get_goal(conn, goal_id)

        return await self.backend.write(op)

    async def set_goal_budget(self, goal_id: str, budget: Budget, *, now: datetime) -> Goal:
        """Replace a goal's spend caps (a task stopped by one continues once it is answered)."""

        def op(conn: Connection) -> Goal:
            _get_goal(conn, goal_id)
            conn.execute(
                update(goals)
                .where(goals.c.id == goal_id)
                .values(budget=rows.dump(budget.to_json()), updated_at=rows.ts(now))
            )
            return _get_goal(conn, goal_id)

        return await self.backend.write(op)

    async def expire_goals(self, *, now: datetime) -> list[str]:
        """Expire live goals whose deadline has passed."""
        now_f = rows.ts(now)

        def op(conn: Connection) -> list[str]:
            due = (
                conn.execute(
                    select(goals.c.id).where(
                        goals.c.status.in_(["active", "paused"]), goals.c.deadline <= now_f
                    )
                )
                .scalars()
                .all()
            )
            for goal_id in due:
                _apply_goal_status(self.backend, conn, goal_id, GoalStatus.EXPIRED, now_f)
            return list(due)

        return await self.backend.write(op)

    async def next_deadline(self) -> datetime | None:
        from sqlalchemy import func

        query = select(func.min(goals.c.deadline)).where(goals.c.status.in_(["active", "paused"]))
        value = await self.backend.read(lambda conn: conn.execute(query).scalar())
        return rows.dt_opt(value)

    async def write_goal(
        self,
        goal_id: str,
        *,
        now: datetime,
        state: dict[str, Any] | None = None,
        record: tuple[GoalRecordKind, dict[str, Any]] | None = None,
        fence: Fence | None = None,
        lease_now: datetime | None = None,
        key: str | None = None,
    ) -> Goal:
        """Merge ``state`` keys into the goal state and/or append a record. Under a ``fence``
        when written by an activation, so a zombie cannot write into the goal. A record with a
        ``key`` is written once: a replayed step does not append it again."""
        now_f = rows.ts(now)

        def op(conn: Connection) -> Goal:
            if fence is not None:
                touch_fenced(self.backend, conn, fence, lease_now)
            goal = _get_goal(conn, goal_id)
            if state:
                conn.execute(
                    update(goals)
                    .where(goals.c.id == goal_id)
                    .values(state=rows.dump(goal.state | state), updated_at=now_f)
                )
            if record is not None:
                kind, content = record
                values = {
                    "goal_id": goal_id,
                    "task_id": fence.task_id if fence else None,
                    "kind": kind,
                    "content": rows.dump(content),
                    "created_at": now_f,
                    "key": key,
                }
                conn.execute(self.backend.insert_ignore(goal_records, values))
            return _get_goal(conn, goal_id)

        return await self.backend.write(op)

    async def list_goal_records(self, goal_id: str, *, limit: int = 500) -> list[GoalRecord]:
        query = (
            select(goal_records)
            .where(goal_records.c.goal_id == goal_id)
            .order_by(goal_records.c.id)
            .limit(limit)
        )
        return await self.backend.read(
            lambda conn: [rows.goal_record(r) for r in conn.execute(query)]
        )


def _get_goal(conn: Connection, goal_id: str) -> Goal:
    row = conn.execute(select(goals).where(goals.c.id == goal_id)).first()
    if row is None:
        raise NotFound("goal", goal_id)
    return rows.goal(row)


def _apply_goal_status(
    backend: Backend, conn: Connection, goal_id: str, status: GoalStatus, now_f: float
) -> None:
    conn.execute(
        update(goals).where(goals.c.id == goal_id).values(status=status.value, updated_at=now_f)
    )
    if not status.terminal:
        return
    cancelled = conn.execute(
        update(tasks)
        .where(tasks.c.goal_id == goal_id, tasks.c.status.in_(_IDLE_LIVE))
        .values(
            status="cancelled", finished_at=now_f, updated_at=now_f, error=f"goal {status.value}"
        )
        .returning(tasks.c.id)
    ).scalars()
    close_effects_of_ended(conn, list(cancelled), "cancelled", now_f)
    conn.execute(
        update(tasks)
        .where(tasks.c.goal_id == goal_id, tasks.c.status == "running")
        .values(control="cancel", updated_at=now_f)
    )
    conn.execute(
        update(triggers)
        .where(triggers.c.goal_id == goal_id)
        .values(enabled=False, next_fire_at=None)
    )
    # the final report, in the same transaction as the end it reports (the feed lock last)
    goal = _get_goal(conn, goal_id)
    person = load_person(conn, goal.person_id)
    final = goal_ended(
        person_id=goal.person_id,
        goal_id=goal_id,
        title=goal.title,
        status=status,
        now=rows.dt(now_f),
        zone=ZoneInfo(person.timezone),
    )
    record_report_in(conn, backend, final)
