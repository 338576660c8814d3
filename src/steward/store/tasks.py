"""Task lifecycle SQL: create, claim under lease, control, wake-up sweeps, reaping.

Writes made on behalf of a running task are fenced (:mod:`steward.store.fencing`). What a
claimed task commits as it runs (its steps, its outcome) is in :mod:`steward.store.activations`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Connection,
    Select,
    func,
    insert,
    or_,
    select,
    true,
    update,
)

from steward.domain import Activation, EffectStatus, Task, TaskSpec, TaskStatus
from steward.domain.ids import new_id
from steward.domain.outcome import Claim
from steward.domain.report import Report
from steward.domain.runtime_reports import task_failed
from steward.domain.task import TaskRequest
from steward.domain.wake import wake_from_json
from steward.errors import InvalidTransition, LeaseLost, NotFound
from steward.store import notify, rows
from steward.store.backend import Backend
from steward.store.feed import append_feed
from steward.store.fencing import Fence, fenced, lease_clock, touch_fenced
from steward.store.planning import record_report_in
from steward.store.schema import activations, effects, goals, persons, tasks
from steward.store.waking import (
    TERMINAL,
    _already_satisfied,
    _apply_pending_control,
    _lock_against_lost_wakeups,
    _wake_parent_if_children_done,
    wake_in,
)


class TaskRepository:
    """Tasks: creation, claims under lease, control requests, wake-up sweeps, reaping."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    # --- create and read ----------------------------------------------------------------

    async def create_task(
        self,
        spec: TaskSpec,
        *,
        person_id: str,
        now: datetime,
        goal_id: str | None = None,
        parent_id: str | None = None,
        trigger_id: str | None = None,
        run_at: datetime | None = None,
        task_id: str | None = None,
        fence: Fence | None = None,
        lease_now: datetime | None = None,
    ) -> Task:
        """Create a task. With ``fence`` (a running task spawning a subtask) the write is fenced
        and a given ``task_id`` that already exists is returned as is, so a replayed step does
        not spawn twice."""
        values = task_values(
            spec,
            person_id=person_id,
            goal_id=goal_id,
            parent_id=parent_id,
            trigger_id=trigger_id,
            run_at=run_at or now,
            now=now,
        )
        if task_id is not None:
            values["id"] = task_id

        def op(conn: Connection) -> Task:
            if fence is not None:
                touch_fenced(self.backend, conn, fence, lease_now)
                if task_id is not None:
                    existing = conn.execute(select(tasks).where(tasks.c.id == task_id)).first()
                    if existing is not None:
                        return rows.task(existing)
            _check_owner(conn, person_id, [goal_id])
            return self._insert(conn, values, now=now)

        return await self.backend.write(op)

    async def create_tasks(
        self, requests: Sequence[TaskRequest], *, person_id: str, now: datetime
    ) -> list[Task]:
        """Create every task of ``requests`` in one transaction: all of them, or (a goal that
        is not the person's) none."""

        def op(conn: Connection) -> list[Task]:
            _check_owner(conn, person_id, [r.goal_id for r in requests])
            return [
                self._insert(
                    conn,
                    task_values(
                        r.spec,
                        person_id=person_id,
                        goal_id=r.goal_id,
                        parent_id=None,
                        trigger_id=None,
                        run_at=r.run_at or now,
                        now=now,
                    ),
                    now=now,
                )
                for r in requests
            ]

        return await self.backend.write(op)

    def _insert(self, conn: Connection, values: dict[str, Any], *, now: datetime) -> Task:
        """Write one task's row, wake the workers, and tell the person's feed."""
        conn.execute(insert(tasks).values(values))
        Backend.announce(conn, notify.WORK)
        created = load_task(conn, values["id"])
        append_feed(
            conn,
            self.backend,
            person_id=created.person_id,
            at=now,
            kind="task.created",
            summary=f"task created: {created.title or created.kind}",
            goal_id=created.goal_id,
            task_id=created.id,
            data={
                "kind": created.kind,
                "parent_id": created.parent_id,
                "trigger_id": created.trigger_id,
            },
        )
        return created

    async def get_task(self, task_id: str) -> Task:
        return await self.backend.read(lambda conn: load_task(conn, task_id))

    async def list_tasks(
        self,
        *,
        person_id: str | None = None,
        goal_id: str | None = None,
        status: Sequence[TaskStatus] | None = None,
        kind: str | None = None,
        parent_id: str | None = None,
        limit: int = 100,
    ) -> list[Task]:
        """Newest first, filtered by every criterion given."""
        query = select(tasks).order_by(tasks.c.created_at.desc()).limit(limit)
        if person_id is not None:
            query = query.where(tasks.c.person_id == person_id)
        if goal_id is not None:
            query = query.where(tasks.c.goal_id == goal_id)
        if kind is not None:
            query = query.where(tasks.c.kind == kind)
        if parent_id is not None:
            query = query.where(tasks.c.parent_id == parent_id)
        if status:
            query = query.where(tasks.c.status.in_([s.value for s in status]))
        return await self.backend.read(lambda conn: [rows.task(r) for r in conn.execute(query)])

    async def count_tasks(self, *, person_id: str | None = None) -> dict[str, int]:
        """Tasks by status: everyone's, or one person's."""
        query = select(tasks.c.status, func.count()).group_by(tasks.c.status)
        if person_id is not None:
            query = query.where(tasks.c.person_id == person_id)
        return await self.backend.read(
            lambda conn: {status: n for status, n in conn.execute(query).all()}
        )

    # --- claim and lease ----------------------------------------------------------------

    async def claim_tasks(
        self,
        *,
        worker: str,
        limit: int,
        lease_seconds: float,
        now: datetime,
        lease_now: datetime | None = None,
        skip_kinds: Collection[str] = (),
    ) -> list[Claim]:
        """Take up to ``limit`` due tasks, honouring each person's concurrency limit and
        skipping tasks of goals that are not active, and tasks of ``skip_kinds`` (kinds this
        worker cannot run: they wait for one that can)."""
        backend = self.backend
        now_f = rows.ts(now)
        skipped = sorted(skip_kinds)

        def op(conn: Connection) -> list[Claim]:
            candidates = conn.execute(
                backend.lock_rows(
                    select(tasks.c.id, tasks.c.person_id)
                    .where(tasks.c.status == TaskStatus.PENDING.value, tasks.c.run_at <= now_f)
                    .where(tasks.c.kind.not_in(skipped) if skipped else true())
                    .where(
                        or_(
                            tasks.c.goal_id.is_(None),
                            tasks.c.goal_id.in_(
                                select(goals.c.id).where(goals.c.status == "active")
                            ),
                        )
                    )
                    .where(tasks.c.person_id.not_in(_persons_at_limit()))
                    .order_by(tasks.c.priority.desc(), tasks.c.run_at)
                    .limit(limit * 4)
                )
            ).all()
            if not candidates:
                return []
            people = sorted({person for _, person in candidates})
            capacity: dict[str, int] = dict(
                conn.execute(
                    backend.lock_for_update(
                        select(persons.c.id, persons.c.max_concurrency).where(
                            persons.c.id.in_(people)
                        )
                    )
                ).all()
            )
            running = conn.execute(
                select(tasks.c.person_id, func.count())
                .where(tasks.c.status == TaskStatus.RUNNING.value, tasks.c.person_id.in_(people))
                .group_by(tasks.c.person_id)
            ).all()
            for person_id, count in running:
                capacity[person_id] -= count
            claims: list[Claim] = []
            expires = lease_clock(self.backend, lease_now) + lease_seconds
            for task_id, person_id in candidates:
                if len(claims) >= limit:
                    break
                if capacity.get(person_id, 0) <= 0:
                    continue
                row = conn.execute(
                    update(tasks)
                    .where(tasks.c.id == task_id, tasks.c.status == TaskStatus.PENDING.value)
                    .values(
                        status=TaskStatus.RUNNING.value,
                        epoch=tasks.c.epoch + 1,
                        lease_owner=worker,
                        lease_expires_at=expires,
                        control=None,
                        updated_at=now_f,
                    )
                    .returning(*tasks.c)
                ).first()
                if row is None:
                    continue
                capacity[person_id] -= 1
                task = rows.task(row)
                wake = rows.load(row._mapping["wake"]) or {}
                reason = wake.get("reason") or ("created" if task.step_seq == 0 else "resumed")
                activation = Activation(
                    id=new_id("act"),
                    task_id=task.id,
                    goal_id=task.goal_id,
                    reason=reason,
                    worker=worker,
                    epoch=task.epoch,
                    started_at=now,
                )
                conn.execute(
                    insert(activations).values(
                        id=activation.id,
                        task_id=task.id,
                        goal_id=task.goal_id,
                        reason=reason,
                        worker=worker,
                        epoch=task.epoch,
                        started_at=now_f,
                        steps=0,
                        usage="{}",
                    )
                )
                claims.append(Claim(task=task, activation=activation, wake=wake_from_json(wake)))
            return claims

        return await backend.write(op)

    async def renew_lease(
        self, fence: Fence, *, lease_seconds: float, lease_now: datetime | None = None
    ) -> str | None:
        """Extend the lease; returns the pending control request (``cancel``/``pause``) if
        any. Raises LeaseLost if the lease is gone."""
        now_sql = lease_clock(self.backend, lease_now)

        def op(conn: Connection) -> str | None:
            # the old lease, checked again at commit
            touch_fenced(self.backend, conn, fence, lease_now)
            row = conn.execute(
                update(tasks)
                .where(fenced(self.backend, fence, lease_now))
                .values(lease_expires_at=now_sql + lease_seconds)
                .returning(tasks.c.control)
            ).first()
            if row is None:
                raise LeaseLost(fence.task_id, fence.epoch)
            control: str | None = row[0]
            return control

        return await self.backend.write(op)

    # --- control from outside -----------------------------------------------------------

    async def request_control(self, task_id: str, control: str, *, now: datetime) -> Task:
        """Cancel, pause or resume a task. Idle tasks change at once; a running task is asked
        to stop at its next step boundary."""
        now_f = rows.ts(now)

        def op(conn: Connection) -> Task:
            # locked: a claim or an activation's end committed between this read and the
            # write below would otherwise be overwritten (a running task marked cancelled)
            conn.execute(
                self.backend.lock_for_update(select(tasks.c.id).where(tasks.c.id == task_id))
            )
            task = load_task(conn, task_id)
            values: dict[str, Any] = {"updated_at": now_f}
            status = task.status
            if control == "cancel":
                if status.terminal:
                    raise InvalidTransition(f"task {task_id} already {status}")
                if status is TaskStatus.RUNNING:
                    values["control"] = "cancel"
                else:
                    values |= {"status": "cancelled", "finished_at": now_f}
            elif control == "pause":
                if status in (TaskStatus.PENDING, TaskStatus.WAITING):
                    values |= {"status": "paused", "paused_from": status.value}
                elif status is TaskStatus.RUNNING:
                    values["control"] = "pause"
                else:
                    raise InvalidTransition(f"task {task_id} is {status}; cannot pause it")
            elif control == "resume":
                if status is TaskStatus.PAUSED:
                    back = conn.execute(
                        select(tasks.c.paused_from).where(tasks.c.id == task_id)
                    ).scalar()
                    values |= {"status": back or "pending", "paused_from": None}
                    if back != "waiting":
                        values |= {"run_at": now_f, "wake": rows.dump({"reason": "resumed"})}
                    elif task.wait is not None:
                        # what it waits for may have happened while it was paused (wakers
                        # only wake waiting tasks): check as when it first went to sleep
                        _lock_against_lost_wakeups(conn, task.wait, task_id, task.person_id)
                        wake = _already_satisfied(conn, task.wait, task_id, task.person_id, now_f)
                        if wake is not None:
                            values |= {
                                "status": "pending",
                                "run_at": now_f,
                                "wake": rows.dump(wake),
                                "wait": None,
                                "wait_until": None,
                                "wait_event": None,
                            }
                elif status is TaskStatus.RUNNING:
                    values["control"] = None
                else:
                    raise InvalidTransition(f"task {task_id} is {status}; only paused resume")
            else:
                raise InvalidTransition(f"unknown control {control!r}")
            conn.execute(update(tasks).where(tasks.c.id == task_id).values(values))
            if values.get("status") == "pending":
                Backend.announce(conn, notify.WORK)
            if values.get("status") == "cancelled":
                close_effects_of_ended(conn, [task_id], "cancelled", now_f)
                if task.parent_id:
                    _wake_parent_if_children_done(conn, task.parent_id, now_f)
            changed = load_task(conn, task_id)
            done = "asked" if changed.status is task.status else str(changed.status)
            append_feed(
                conn,
                self.backend,
                person_id=task.person_id,
                at=now,
                kind=f"task.{control}",
                summary=f"{control} {done}: {task.title or task.kind}",
                goal_id=task.goal_id,
                task_id=task_id,
                data={"status": changed.status.value},
            )
            return changed

        return await self.backend.write(op)

    async def wake_task(self, task_id: str, wake: dict[str, Any], *, now: datetime) -> bool:
        """Make a waiting task runnable (its condition was met). False if it was not waiting."""
        now_f = rows.ts(now)

        def op(conn: Connection) -> bool:
            return wake_in(conn, task_id, wake, now_f)

        return await self.backend.write(op)

    # --- what the scheduler sweeps ------------------------------------------------------

    async def wake_due_waits(self, *, now: datetime, limit: int = 1000) -> int:
        """Wake waiting tasks whose time (or timeout) has come."""
        now_f = rows.ts(now)

        def op(conn: Connection) -> int:
            due = conn.execute(
                self.backend.lock_rows(
                    select(tasks.c.id, tasks.c.wait)
                    .where(tasks.c.status == TaskStatus.WAITING.value, tasks.c.wait_until <= now_f)
                    .limit(limit)
                )
            ).all()
            woken = 0
            for task_id, wait in due:
                kind = rows.load(wait)["kind"]
                reason = "timer" if kind == "until" else "timeout"
                woken += wake_in(conn, task_id, {"reason": reason}, now_f)
            return woken

        return await self.backend.write(op)

    async def reap_expired_leases(
        self, *, now: datetime, lease_now: datetime | None = None, limit: int = 1000
    ) -> list[str]:
        """Re-queue running tasks whose lease lapsed (their worker died or hung). A lost lease
        counts as a failed attempt, so a task that kills its worker every time ends dead-lettered
        instead of looping. Returns the ids re-queued or dead-lettered."""
        now_f = rows.ts(now)
        now_sql = lease_clock(self.backend, lease_now)

        def op(conn: Connection) -> list[str]:
            expired = conn.execute(
                self.backend.lock_rows(
                    select(
                        tasks.c.id,
                        tasks.c.epoch,
                        tasks.c.attempts,
                        tasks.c.max_attempts,
                        tasks.c.control,
                        tasks.c.parent_id,
                        tasks.c.wake,
                        tasks.c.person_id,
                        tasks.c.goal_id,
                        tasks.c.title,
                        tasks.c.kind,
                    )
                    .where(
                        tasks.c.status == TaskStatus.RUNNING.value,
                        tasks.c.lease_expires_at < now_sql,
                    )
                    .limit(limit)
                )
            ).all()
            gave_up: list[Report] = []
            for row in expired:
                task_id, epoch, attempts, max_attempts, control, parent_id, wake = row[:7]
                values: dict[str, Any] = {
                    "attempts": attempts + 1,
                    "lease_owner": None,
                    "lease_expires_at": None,
                    "updated_at": now_f,
                    "error": "worker lost its lease",
                }
                if attempts + 1 >= max_attempts:
                    values |= {
                        "status": "dead_lettered",
                        "finished_at": now_f,
                        "error": f"gave up after {attempts + 1} attempts: worker lost its lease",
                    }
                else:
                    values |= {
                        "status": "pending",
                        "run_at": now_f,
                        # keep what woke it (an event, an answer): no step has consumed it yet
                        "wake": rows.dump((rows.load(wake) or {}) | {"reason": "recovered"}),
                    }
                _apply_pending_control(values, control)
                if values["status"] in TERMINAL:
                    values["finished_at"] = now_f
                conn.execute(
                    update(tasks)
                    .where(tasks.c.id == task_id, tasks.c.epoch == epoch)
                    .values(values)
                )
                if values["status"] == "pending":
                    Backend.announce(conn, notify.WORK)
                conn.execute(
                    update(activations)
                    .where(
                        activations.c.task_id == task_id,
                        activations.c.epoch == epoch,
                        activations.c.ended_at.is_(None),
                    )
                    .values(ended_at=now_f, outcome="lost")
                )
                if values["status"] in TERMINAL:
                    close_effects_of_ended(conn, [task_id], values["status"], now_f)
                    if parent_id is not None:
                        _wake_parent_if_children_done(conn, parent_id, now_f)
                if values["status"] == "dead_lettered" and parent_id is None:
                    gave_up.append(
                        task_failed(
                            person_id=row.person_id,
                            goal_id=row.goal_id,
                            task_id=task_id,
                            title=row.title or row.kind,
                            error="the work kept stopping before it could finish",
                            gave_up=True,
                            now=rows.dt(now_f),
                        )
                    )
            for report in gave_up:  # the feed last
                record_report_in(conn, self.backend, report)
            return [row[0] for row in expired]

        return await self.backend.write(op)

    async def next_run_time(self) -> datetime | None:
        """Earliest ``run_at`` of a pending task (what workers wait for)."""
        query = select(func.min(tasks.c.run_at)).where(tasks.c.status == "pending")
        return rows.dt_opt(await self.backend.read(lambda conn: conn.execute(query).scalar()))

    async def next_wait_time(self, *, person_id: str | None = None) -> datetime | None:
        """Earliest wake time of a timed wait (what the scheduler waits for): everyone's, or
        one person's."""
        query = select(func.min(tasks.c.wait_until)).where(tasks.c.status == "waiting")
        if person_id is not None:
            query = query.where(tasks.c.person_id == person_id)
        return rows.dt_opt(await self.backend.read(lambda conn: conn.execute(query).scalar()))


# --- shared transaction pieces ----------------------------------------------------------


def _persons_at_limit() -> Select[Any]:
    """Persons already running max_concurrency tasks: their due tasks are not candidates, so
    they cannot crowd everybody else out of a claim."""
    busy = tasks.alias("busy")
    running = (
        select(func.count())
        .select_from(busy)
        .where(busy.c.person_id == persons.c.id, busy.c.status == TaskStatus.RUNNING.value)
        .scalar_subquery()
    )
    return select(persons.c.id).where(persons.c.max_concurrency <= running)


def load_task(conn: Connection, task_id: str) -> Task:
    row = conn.execute(select(tasks).where(tasks.c.id == task_id)).first()
    if row is None:
        raise NotFound("task", task_id)
    return rows.task(row)


def close_effects_of_ended(
    conn: Connection, task_ids: Sequence[str] | Select[Any], ended: str, now_f: float
) -> None:
    """Every transaction that ends a task (any terminal status) calls this once it has.

    An ended task never runs again, so it will neither learn the outcome of an effect it sent
    without recording the answer, nor send one it only planned. The first go in doubt, where
    the person sees and decides them (``effect list --in-doubt``); the second are closed as
    ``abandoned``. A send deadline stays as it was: a worker that lost this task may still be
    sending until then, and deciding "not applied" waits for it."""
    said = ended.replace("_", "-")
    mine = effects.c.task_id.in_(task_ids)
    conn.execute(
        update(effects)
        .where(mine, effects.c.status == EffectStatus.SENT.value)
        .values(
            status=EffectStatus.IN_DOUBT.value,
            error=f"outcome unknown: the task ended ({said}) before its answer was recorded",
            updated_at=now_f,
        )
    )
    conn.execute(
        update(effects)
        .where(mine, effects.c.status == EffectStatus.PLANNED.value)
        .values(
            status=EffectStatus.ABANDONED.value,
            error=f"not sent: the task ended ({said}) first",
            updated_at=now_f,
        )
    )


def task_values(
    spec: TaskSpec,
    *,
    person_id: str,
    goal_id: str | None,
    parent_id: str | None,
    trigger_id: str | None,
    run_at: datetime,
    now: datetime,
) -> dict[str, Any]:
    """The row of a new pending task."""
    return {
        "id": new_id("tsk"),
        "person_id": person_id,
        "goal_id": goal_id,
        "parent_id": parent_id,
        "trigger_id": trigger_id,
        "kind": spec.kind,
        "title": spec.title or spec.kind,
        "input": rows.dump(spec.input),
        "status": TaskStatus.PENDING.value,
        "priority": spec.priority,
        "attempts": 0,
        "max_attempts": spec.max_attempts,
        "run_at": rows.ts(run_at),
        "state": "{}",
        "step_seq": 0,
        "epoch": 0,
        "created_at": rows.ts(now),
        "updated_at": rows.ts(now),
    }


def _check_owner(conn: Connection, person_id: str, goal_ids: Sequence[str | None]) -> None:
    """Refuse (:class:`NotFound`) a person that does not exist, or a goal not theirs."""
    if conn.execute(select(persons.c.id).where(persons.c.id == person_id)).first() is None:
        raise NotFound("person", person_id)
    named = {g for g in goal_ids if g is not None}
    if named:
        theirs = set(
            conn.execute(
                select(goals.c.id).where(goals.c.id.in_(named), goals.c.person_id == person_id)
            ).scalars()
        )
        missing = sorted(named - theirs)
        if missing:
            raise NotFound("goal", missing[0])
