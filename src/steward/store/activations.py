"""Activation SQL: what one claimed run of a task commits (its step checkpoints, the outcome that
ends it) and the records read back from it (a task's steps, a goal's activations and spend).

Every write here is fenced (see :mod:`steward.store.tasks`): a worker that lost its lease gets
:class:`~steward.errors.LeaseLost` and changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    ClauseElement,
    ColumnElement,
    Connection,
    bindparam,
    func,
    insert,
    select,
    update,
)

from steward.domain import Activation, Task, TaskStatus
from steward.domain.outcome import Fail, Outcome, Wait
from steward.domain.runtime_reports import goal_budget_reached, task_failed
from steward.errors import LeaseLost
from steward.store import notify, rows
from steward.store.backend import Backend
from steward.store.feed import append_feed
from steward.store.fencing import Fence, fenced, hold
from steward.store.planning import record_report_in
from steward.store.schema import activations, goals, steps, tasks
from steward.store.tasks import close_effects_of_ended, load_task
from steward.store.waking import (
    TERMINAL,
    _already_satisfied,
    _apply_pending_control,
    _lock_against_lost_wakeups,
    _wait_values,
    _wake_parent_if_children_done,
)


@dataclass(kw_only=True, frozen=True)
class FinalStep:
    """A step committed together with the outcome it decided."""

    seq: int
    """Its number (one past the last committed step)."""
    kind: str
    """Step kind."""
    output: Any
    """Step output."""
    state: dict[str, Any]
    """Handler state after it."""


def usage_sum(conn: Connection, where: ColumnElement[bool]) -> tuple[float, float]:
    """The model tokens and cost recorded on the activations ``where`` picks (usage is JSON
    per activation, so it is summed here rather than in SQL)."""
    tokens = cost = 0.0
    for (usage,) in conn.execute(
        select(activations.c.usage).where(where, activations.c.usage != "{}")
    ):
        spent = rows.load(usage)
        tokens += float(spent.get("tokens", 0.0))
        cost += float(spent.get("cost_usd", 0.0))
    return tokens, cost


class ActivationRepository:
    """Activations: the steps a claimed task checkpoints and the outcome that ends it."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    # --- checkpoints --------------------------------------------------------------------

    async def checkpoint(
        self,
        fence: Fence,
        *,
        seq: int,
        kind: str,
        output: Any,
        state: dict[str, Any],
        now: datetime,
        lease_now: datetime | None = None,
        usage: dict[str, float] | None = None,
    ) -> str | None:
        """Commit step ``seq`` and the handler state after it, in one fenced transaction.

        ``usage`` (the activation's running totals, when a model call changed them) is saved
        with the step, so spend is accounted for even if the worker dies before the end.
        Returns a pending control request (``cancel``/``pause``) for the caller to honour.
        """
        params = {
            "task_id": fence.task_id,
            "epoch": fence.epoch,
            "seq": seq,
            "prev_seq": seq - 1,
            "state": rows.dump(state),
            "now": rows.ts(now),
            "activation_id": fence.activation_id,
            "kind": kind,
            "output": rows.dump(output),
        }
        simulated = lease_now is not None
        if simulated:
            params["lease_now"] = rows.ts(lease_now)  # type: ignore[arg-type]
        task_update = self.backend.prepared(
            f"checkpoint-update-{simulated}", lambda: self._checkpoint_update(simulated)
        )
        step_insert = self.backend.prepared("checkpoint-insert", _checkpoint_insert)

        def op(conn: Connection) -> str | None:
            row = task_update.run(conn, params).fetchone()
            if row is None:
                raise LeaseLost(fence.task_id, fence.epoch)
            hold(conn, fence, lease_now, row[3])
            step_insert.run(conn, params)
            if usage is not None:
                conn.execute(
                    update(activations)
                    .where(activations.c.id == fence.activation_id)
                    .values(usage=rows.dump(usage))
                )
            _feed_step(conn, self.backend, fence.task_id, seq, kind, now, row[1], row[2])
            control: str | None = row[0]
            return control

        return await self.backend.write(op)

    def _checkpoint_update(self, simulated: bool) -> ClauseElement:
        now_sql = bindparam("lease_now") if simulated else self.backend.db_now()
        return (
            update(tasks)
            .where(
                tasks.c.id == bindparam("task_id"),
                tasks.c.epoch == bindparam("epoch"),
                tasks.c.status == TaskStatus.RUNNING.value,
                tasks.c.lease_expires_at >= now_sql,
                tasks.c.step_seq == bindparam("prev_seq"),
            )
            .values(
                step_seq=bindparam("seq"),
                state=bindparam("state"),
                wake=None,
                updated_at=bindparam("now"),
            )
            .returning(
                tasks.c.control, tasks.c.person_id, tasks.c.goal_id, tasks.c.lease_expires_at
            )
        )

    # --- ending an activation -----------------------------------------------------------

    async def finish_activation(
        self,
        fence: Fence,
        outcome: Outcome,
        *,
        now: datetime,
        steps_taken: int,
        usage: dict[str, Any] | None = None,
        lease_now: datetime | None = None,
        final_step: FinalStep | None = None,
    ) -> Task:
        """Apply ``outcome`` to the task, release the lease and close the activation.

        ``final_step`` is the step that decided the outcome: it commits in the same
        transaction, so a crash can never leave a decided step without its outcome (the next
        activation would otherwise run the task past its end)."""
        now_f = rows.ts(now)

        def op(conn: Connection) -> Task:
            # locked: a cancel or pause asked for between this read and the update below
            # would otherwise be overwritten (control is cleared with the outcome)
            query = select(
                tasks.c.attempts,
                tasks.c.max_attempts,
                tasks.c.parent_id,
                tasks.c.person_id,
                tasks.c.control,
                tasks.c.wake,
                tasks.c.goal_id,
                tasks.c.title,
                tasks.c.kind,
                tasks.c.lease_expires_at,
            ).where(fenced(self.backend, fence, lease_now))
            current = conn.execute(self.backend.lock_for_update(query)).first()
            if current is None:
                raise LeaseLost(fence.task_id, fence.epoch)
            attempts, max_attempts, parent_id, person_id, control, old_wake = current[:6]
            goal_id, title, task_kind, expires = current[6:]
            hold(conn, fence, lease_now, expires)
            if final_step is not None:
                step_params = {
                    "task_id": fence.task_id,
                    "epoch": fence.epoch,
                    "seq": final_step.seq,
                    "prev_seq": final_step.seq - 1,
                    "state": rows.dump(final_step.state),
                    "now": now_f,
                    "activation_id": fence.activation_id,
                    "kind": final_step.kind,
                    "output": rows.dump(final_step.output),
                }
                if lease_now is not None:
                    step_params["lease_now"] = rows.ts(lease_now)
                update_step = self.backend.prepared(
                    f"checkpoint-update-{lease_now is not None}",
                    lambda: self._checkpoint_update(lease_now is not None),
                )
                if update_step.run(conn, step_params).fetchone() is None:
                    raise LeaseLost(fence.task_id, fence.epoch)
                self.backend.prepared("checkpoint-insert", _checkpoint_insert).run(
                    conn, step_params
                )
            values: dict[str, Any] = {
                "lease_owner": None,
                "lease_expires_at": None,
                "control": None,
                "updated_at": now_f,
            }
            label: str = outcome.kind
            match outcome.kind:
                case "succeed":
                    values |= {"status": "succeeded", "result": rows.dump(outcome.result)}
                case "fail":
                    values |= {"status": "failed", "error": outcome.reason}
                case "retry":
                    values["attempts"] = attempts + 1
                    values["error"] = outcome.reason
                    if attempts + 1 >= max_attempts:
                        values["status"] = "dead_lettered"
                        values["error"] = f"gave up after {attempts + 1} attempts: {outcome.reason}"
                        label = "dead_lettered"
                    else:
                        values |= {
                            "status": "pending",
                            # via datetime, so the stored float reads back as the same
                            # microsecond-precise time and is claimable exactly then
                            "run_at": rows.ts(
                                rows.dt(now_f) + timedelta(seconds=outcome.delay_seconds)
                            ),
                            # keep what woke it (an event), so the retried step still sees it
                            "wake": rows.dump(_rewoken(old_wake, "retry")),
                        }
                case "wait":
                    cond = outcome.condition
                    values |= _wait_values(cond)
                    _lock_against_lost_wakeups(conn, cond, fence.task_id, person_id)
                    wake = _already_satisfied(conn, cond, fence.task_id, person_id, now_f)
                    if wake is not None:
                        values |= {"status": "pending", "run_at": now_f, "wake": rows.dump(wake)}
                case "requeue":
                    # keep what woke it: a step cut off before its checkpoint still sees it
                    wake = _rewoken(old_wake, outcome.reason)
                    if outcome.cut_offs:
                        wake["cut_offs"] = outcome.cut_offs
                    values |= {
                        "status": "pending",
                        "run_at": rows.ts(
                            rows.dt(now_f) + timedelta(seconds=outcome.delay_seconds)
                        ),
                        "wake": rows.dump(wake),
                    }
                case "stop":
                    if outcome.control == "cancel":
                        values["status"] = "cancelled"
                    else:
                        values |= {"status": "paused", "paused_from": "pending"}
                    label = values["status"]
            # A cancel/pause asked for while the activation ran that it ended without reaching
            # a step boundary (a step raised, it yielded, it went to sleep): honour it now.
            _apply_pending_control(values, control)
            if values.get("status") in TERMINAL:
                values["finished_at"] = now_f
            conn.execute(update(tasks).where(tasks.c.id == fence.task_id).values(values))
            if values.get("status") == "pending":
                Backend.announce(conn, notify.WORK)
            conn.execute(
                update(activations)
                .where(activations.c.id == fence.activation_id)
                .values(
                    ended_at=now_f,
                    outcome=label,
                    steps=steps_taken,
                    usage=rows.dump(usage or {}),
                )
            )
            if values.get("status") in TERMINAL:
                close_effects_of_ended(conn, [fence.task_id], values["status"], now_f)
                if parent_id is not None:
                    _wake_parent_if_children_done(conn, parent_id, now_f)
            ended = load_task(conn, fence.task_id)
            # the feed last: its lock is taken after every row lock of the transaction
            if final_step is not None:
                _feed_step(
                    conn,
                    self.backend,
                    fence.task_id,
                    final_step.seq,
                    final_step.kind,
                    now,
                    person_id,
                    goal_id,
                )
            append_feed(
                conn,
                self.backend,
                person_id=person_id,
                at=now,
                kind=f"task.{ended.status.value}",
                summary=f"{ended.status.value}: {title or task_kind}"
                + (f" ({ended.error})" if ended.error and ended.status.value != "pending" else ""),
                goal_id=goal_id,
                task_id=fence.task_id,
                data={"outcome": label, "steps": steps_taken},
            )
            overrun = outcome.budget if isinstance(outcome, Fail | Wait) else None
            failed_for_good = ended.status in (TaskStatus.FAILED, TaskStatus.DEAD_LETTERED)
            if overrun is not None and goal_id is not None:
                # the goal's budget stopped it: said once per goal and cap, with the stop
                goal_title = conn.execute(
                    select(goals.c.title).where(goals.c.id == goal_id)
                ).scalar_one()
                stopped = goal_budget_reached(
                    person_id=person_id,
                    goal_id=goal_id,
                    task_id=fence.task_id,
                    title=goal_title,
                    overrun=overrun,
                    now=now,
                )
                record_report_in(conn, self.backend, stopped)
            elif failed_for_good and parent_id is None:
                failed = task_failed(
                    person_id=person_id,
                    goal_id=goal_id,
                    task_id=fence.task_id,
                    title=title or task_kind,
                    error=ended.error or "",
                    gave_up=ended.status == TaskStatus.DEAD_LETTERED,
                    now=now,
                )
                record_report_in(conn, self.backend, failed)
            return ended

        return await self.backend.write(op)

    # --- what activations recorded ------------------------------------------------------

    async def list_steps(self, task_id: str, *, after: int = 0, limit: int = 1000) -> list[Any]:
        query = (
            select(steps)
            .where(steps.c.task_id == task_id, steps.c.seq > after)
            .order_by(steps.c.seq)
            .limit(limit)
        )
        return await self.backend.read(lambda conn: [rows.step(r) for r in conn.execute(query)])

    async def list_activations(
        self, *, task_id: str | None = None, goal_id: str | None = None, limit: int = 200
    ) -> list[Activation]:
        query = select(activations).order_by(activations.c.started_at).limit(limit)
        if task_id is not None:
            query = query.where(activations.c.task_id == task_id)
        if goal_id is not None:
            query = query.where(activations.c.goal_id == goal_id)
        return await self.backend.read(
            lambda conn: [rows.activation(r) for r in conn.execute(query)]
        )

    async def goal_usage(self, goal_id: str) -> dict[str, float]:
        """What a goal has spent: activations, steps, the model tokens and cost recorded, and
        the seconds its finished activations ran."""

        def op(conn: Connection) -> dict[str, float]:
            n_act, n_steps, seconds = conn.execute(
                select(
                    func.count(),
                    func.coalesce(func.sum(activations.c.steps), 0),
                    func.coalesce(func.sum(activations.c.ended_at - activations.c.started_at), 0.0),
                ).where(activations.c.goal_id == goal_id)
            ).one()
            tokens, cost = usage_sum(conn, activations.c.goal_id == goal_id)
            return {
                "activations": n_act,
                "steps": n_steps,
                "cost_usd": cost,
                "tokens": tokens,
                "seconds": float(seconds),
            }

        return await self.backend.read(op)

    async def usage_by_goal(self, person_id: str) -> dict[str, dict[str, float]]:
        """:meth:`goal_usage` of every goal of a person, in one read (a page listing goals
        asks once, not once per goal)."""
        of_person = activations.c.goal_id.in_(
            select(goals.c.id).where(goals.c.person_id == person_id)
        )

        def op(conn: Connection) -> dict[str, dict[str, float]]:
            found: dict[str, dict[str, float]] = {
                goal_id: {
                    "activations": 0,
                    "steps": 0,
                    "cost_usd": 0.0,
                    "tokens": 0.0,
                    "seconds": 0.0,
                }
                for (goal_id,) in conn.execute(
                    select(goals.c.id).where(goals.c.person_id == person_id)
                )
            }
            for goal_id, n_act, n_steps, seconds in conn.execute(
                select(
                    activations.c.goal_id,
                    func.count(),
                    func.coalesce(func.sum(activations.c.steps), 0),
                    func.coalesce(func.sum(activations.c.ended_at - activations.c.started_at), 0.0),
                )
                .where(of_person)
                .group_by(activations.c.goal_id)
            ):
                found[goal_id] |= {
                    "activations": n_act,
                    "steps": n_steps,
                    "seconds": float(seconds),
                }
            for goal_id, usage in conn.execute(
                select(activations.c.goal_id, activations.c.usage).where(
                    of_person, activations.c.usage != "{}"
                )
            ):
                spent = rows.load(usage)
                found[goal_id]["tokens"] += float(spent.get("tokens", 0.0))
                found[goal_id]["cost_usd"] += float(spent.get("cost_usd", 0.0))
            return found

        return await self.backend.read(op)


# --- shared transaction pieces ----------------------------------------------------------


def _checkpoint_insert() -> ClauseElement:
    return insert(steps).values(
        task_id=bindparam("task_id"),
        seq=bindparam("seq"),
        activation_id=bindparam("activation_id"),
        kind=bindparam("kind"),
        output=bindparam("output"),
        created_at=bindparam("now"),
    )


def _feed_step(
    conn: Connection,
    backend: Backend,
    task_id: str,
    seq: int,
    kind: str,
    now: datetime,
    person_id: str,
    goal_id: str | None,
) -> None:
    """A step in the feed: which, and of what kind (its output stays in the journal: read it
    with the task's steps)."""
    append_feed(
        conn,
        backend,
        person_id=person_id,
        at=now,
        kind="step",
        summary=f"step {seq}: {kind}",
        goal_id=goal_id,
        task_id=task_id,
        ref=str(seq),
        data={"seq": seq, "kind": kind},
    )


def _rewoken(old_wake: Any, reason: str) -> dict[str, Any]:
    """What woke the task, to run it again for ``reason`` (a count of cut-offs in a row is
    dropped: the caller sets it again if this is one more)."""
    wake: dict[str, Any] = dict(rows.load(old_wake) or {})
    wake.pop("cut_offs", None)
    return wake | {"reason": reason}
