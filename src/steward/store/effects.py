"""Effect journal SQL: the intent is committed (durably) before a side effect, the result after."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert, select, update

from steward.domain import Effect, EffectStatus, TaskStatus
from steward.domain.ids import new_id
from steward.domain.journal import APPLIED_RESULT_UNKNOWN, check_effect_transition
from steward.domain.runtime_reports import effect_in_doubt
from steward.errors import EffectMaybeInFlight, InvalidTransition, NotFound
from steward.store import rows
from steward.store.audit import append_in
from steward.store.backend import Backend
from steward.store.fencing import Fence, lease_clock, touch_fenced
from steward.store.planning import record_report_in
from steward.store.schema import effects, tasks
from steward.store.waking import wake_in


@dataclass(kw_only=True, frozen=True)
class SendWindow:
    """An effect just marked sent, and how long its sender may still start the request."""

    effect: Effect
    """The effect as marked (with its send deadline)."""
    lease_seconds_left: float
    """Seconds from the marking statement to the lease's expiry (the stored deadline), by the
    clock leases are judged by."""


class EffectRepository:
    """Effects: the intent, sending and resolution of every outside action."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    async def plan_effect(
        self,
        fence: Fence,
        *,
        key: str,
        step_seq: int,
        tool: str,
        args: dict[str, Any],
        idempotent: bool,
        now: datetime,
        lease_now: datetime | None = None,
    ) -> Effect:
        """Record the intent, or return the journal entry an earlier attempt made for ``key``."""
        now_f = rows.ts(now)

        def op(conn: Connection) -> Effect:
            touch_fenced(self.backend, conn, fence, lease_now)
            existing = conn.execute(select(effects).where(effects.c.key == key)).first()
            if existing is not None:
                return rows.effect(existing)
            effect_id = new_id("eff")
            values = {
                "id": effect_id,
                "task_id": fence.task_id,
                "step_seq": step_seq,
                "key": key,
                "tool": tool,
                "args": rows.dump(args),
                "status": EffectStatus.PLANNED.value,
                "idempotent": idempotent,
                "attempts": 0,
                "created_at": now_f,
                "updated_at": now_f,
            }
            conn.execute(insert(effects).values(values))
            return _get_effect(conn, effect_id)

        return await self.backend.write(op, durable=True)

    async def set_effect_status(
        self,
        fence: Fence,
        effect_id: str,
        status: EffectStatus,
        *,
        now: datetime,
        result: Any = None,
        error: str | None = None,
        lease_now: datetime | None = None,
        not_sent: bool = False,
    ) -> Effect:
        """Move an effect along its status machine under the task's fence. Marking it ``sent``
        (see :meth:`mark_effect_sent`) is durable, so after a power loss it is never mistaken
        for one not yet sent. ``not_sent``: its sender knows it did not start the request (its
        send deadline passed first), so that send is not counted in ``attempts``."""
        window = await self._set_status(
            fence, effect_id, status, now, result, error, lease_now, not_sent
        )
        return window.effect

    async def mark_effect_sent(
        self, fence: Fence, effect_id: str, *, now: datetime, lease_now: datetime | None = None
    ) -> SendWindow:
        """Mark the effect ``sent`` (durably, under the fence) and set its send deadline to the
        lease's expiry. Raises :class:`EffectMaybeInFlight` for an in-doubt effect without an
        idempotency key whose earlier sender may still be sending it."""
        return await self._set_status(
            fence, effect_id, EffectStatus.SENT, now, None, None, lease_now, False
        )

    async def _set_status(
        self,
        fence: Fence,
        effect_id: str,
        status: EffectStatus,
        now: datetime,
        result: Any,
        error: str | None,
        lease_now: datetime | None,
        not_sent: bool,
    ) -> SendWindow:
        now_f = rows.ts(now)
        now_sql = lease_clock(self.backend, lease_now)

        def op(conn: Connection) -> SendWindow:
            touch_fenced(self.backend, conn, fence, lease_now)
            current = _get_effect(conn, effect_id)
            if current.task_id != fence.task_id:  # a lease on one task moves only its effects
                raise NotFound("effect", effect_id)
            check_effect_transition(current.status, status)
            values: dict[str, Any] = {"status": status.value, "updated_at": now_f}
            seconds = 0.0
            if status is EffectStatus.SENT:
                db_now, expires = conn.execute(
                    select(now_sql, tasks.c.lease_expires_at).where(tasks.c.id == fence.task_id)
                ).one()
                if current.status is EffectStatus.IN_DOUBT and not current.idempotent:
                    _refuse_while_in_flight(conn, current, float(db_now), "sent again")
                values["attempts"] = current.attempts + 1
                values["send_deadline"] = expires
                seconds = max(0.0, float(expires) - float(db_now))
            elif not_sent:
                if current.status is not EffectStatus.SENT:
                    raise InvalidTransition(f"effect {effect_id} is {current.status}, not sent")
                values["attempts"] = current.attempts - 1
            if result is not None:
                values["result"] = rows.dump(result)
            if error is not None:
                values["error"] = error
            conn.execute(update(effects).where(effects.c.id == effect_id).values(values))
            _audit_effect(conn, self.backend, current, status, f"agent:{fence.task_id}", now)
            if status is EffectStatus.IN_DOUBT and current.status is not EffectStatus.IN_DOUBT:
                # the person hears it with the cause, in the same transaction
                task = conn.execute(
                    select(tasks.c.person_id, tasks.c.goal_id).where(tasks.c.id == fence.task_id)
                ).one()
                doubt = effect_in_doubt(
                    person_id=task.person_id,
                    goal_id=task.goal_id,
                    task_id=fence.task_id,
                    effect_id=effect_id,
                    tool=current.tool,
                    attempt=current.attempts,
                    now=now,
                )
                record_report_in(conn, self.backend, doubt)
            return SendWindow(effect=_get_effect(conn, effect_id), lease_seconds_left=seconds)

        return await self.backend.write(op, durable=status is EffectStatus.SENT)

    async def resolve_effect(
        self,
        effect_id: str,
        *,
        applied: bool,
        now: datetime,
        result: Any = None,
        note: str = "",
        lease_now: datetime | None = None,
    ) -> Effect:
        """The person (or a reconciler) decides an in-doubt effect.

        Applied: it succeeded, with ``result`` as the service's answer, or, without one,
        :data:`APPLIED_RESULT_UNKNOWN`. Not applied: back to ``planned``, so the task sends it
        when it resumes, or ``abandoned`` if the task has ended (it stays ended); refused with
        :class:`EffectMaybeInFlight` until the effect's send deadline has passed. A task
        waiting on the effect wakes; the audit log records the decision."""
        now_f = rows.ts(now)
        now_sql = lease_clock(self.backend, lease_now)

        def op(conn: Connection) -> Effect:
            current = _get_effect(conn, effect_id)
            # lock the task first, as every fenced effect write does (and as a task going to
            # sleep on this effect does: no lost wake-up)
            task = conn.execute(
                select(tasks.c.status, tasks.c.wait, now_sql)
                .where(tasks.c.id == current.task_id)
                .with_for_update()
            ).one()
            current = _get_effect(conn, effect_id)  # as of the lock
            if current.status is not EffectStatus.IN_DOUBT:
                # a 'sent' effect is in flight with a live worker: not the person's to decide
                raise InvalidTransition(
                    f"effect {effect_id} is {current.status}; only in-doubt effects are resolved"
                )
            task_status = TaskStatus(task.status)
            if applied:
                new = EffectStatus.SUCCEEDED
            else:
                _refuse_while_in_flight(conn, current, float(task[2]), "decided as not applied")
                new = EffectStatus.ABANDONED if task_status.terminal else EffectStatus.PLANNED
            check_effect_transition(current.status, new)
            values: dict[str, Any] = {
                "status": new.value,
                "error": note or ("confirmed applied" if applied else "confirmed not applied"),
                "updated_at": now_f,
            }
            if applied:
                values["result"] = rows.dump(APPLIED_RESULT_UNKNOWN if result is None else result)
            conn.execute(update(effects).where(effects.c.id == effect_id).values(values))
            if (
                task_status is TaskStatus.WAITING
                and (rows.load(task.wait) or {}).get("ref") == effect_id
            ):
                wake_in(conn, current.task_id, {"reason": "effect", "effect_id": effect_id}, now_f)
            decision = {
                "resolution": "applied" if applied else "not applied",
                "result_known": result is not None,
                "task_status": task_status.value,
            }
            _audit_effect(conn, self.backend, current, new, "person", now, decision)
            return _get_effect(conn, effect_id)

        return await self.backend.write(op)

    async def get_effect(self, effect_id: str) -> Effect:
        def op(conn: Connection) -> Effect:
            row = conn.execute(select(effects).where(effects.c.id == effect_id)).first()
            if row is None:
                raise NotFound("effect", effect_id)
            return rows.effect(row)

        return await self.backend.read(op)

    async def get_effect_by_key(self, key: str) -> Effect | None:
        def op(conn: Connection) -> Effect | None:
            row = conn.execute(select(effects).where(effects.c.key == key)).first()
            return None if row is None else rows.effect(row)

        return await self.backend.read(op)

    async def list_effects(
        self,
        *,
        task_id: str | None = None,
        status: EffectStatus | None = None,
        person_id: str | None = None,
        limit: int = 1000,
    ) -> list[Effect]:
        query = select(effects).order_by(effects.c.created_at).limit(limit)
        if task_id is not None:
            query = query.where(effects.c.task_id == task_id)
        if status is not None:
            query = query.where(effects.c.status == status.value)
        if person_id is not None:
            query = query.where(
                effects.c.task_id.in_(select(tasks.c.id).where(tasks.c.person_id == person_id))
            )
        return await self.backend.read(lambda conn: [rows.effect(r) for r in conn.execute(query)])


def _get_effect(conn: Connection, effect_id: str) -> Effect:
    row = conn.execute(select(effects).where(effects.c.id == effect_id)).first()
    if row is None:
        raise NotFound("effect", effect_id)
    return rows.effect(row)


def _refuse_while_in_flight(conn: Connection, effect: Effect, db_now: float, what: str) -> None:
    """Raise :class:`EffectMaybeInFlight` while the effect's last sender may still send it."""
    deadline = conn.execute(
        select(effects.c.send_deadline).where(effects.c.id == effect.id)
    ).scalar()
    if deadline is None or db_now > deadline:
        return
    when = rows.dt(deadline)
    left = deadline - db_now
    raise EffectMaybeInFlight(
        f"{effect.tool} (effect {effect.id}) may still be on its way: the worker that sent it "
        f"may still be sending it until {when:%Y-%m-%d %H:%M:%S} UTC. It can be "
        f"{what} from then on (in {math.ceil(left)} s); recording that it happened is "
        "possible now.",
        not_before=when,
        seconds_left=left,
    )


def _audit_effect(
    conn: Connection,
    backend: Backend,
    effect: Effect,
    status: EffectStatus,
    actor: str,
    now: datetime,
    extra: dict[str, Any] | None = None,
) -> None:
    """Record an effect's step in the audit log (its tool and key, never its arguments: they
    may carry what the person would not want copied around)."""
    person_id = conn.execute(select(tasks.c.person_id).where(tasks.c.id == effect.task_id)).scalar()
    append_in(
        conn,
        backend,
        person_id=person_id,
        kind="effect",
        actor=actor,
        data={"effect": effect.id, "tool": effect.tool, "key": effect.key, "status": status.value}
        | (extra or {}),
        now=now,
    )
