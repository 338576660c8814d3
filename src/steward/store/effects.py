"""Effect journal SQL: the intent is committed (durably) before a side effect, the result after."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert, select, update

from steward.domain import Effect, EffectStatus
from steward.domain.ids import new_id
from steward.domain.journal import check_effect_transition
from steward.errors import InvalidTransition, NotFound
from steward.store import rows
from steward.store.audit import append_in
from steward.store.backend import Backend
from steward.store.schema import effects, tasks
from steward.store.tasks import Fence, TaskQueries
from steward.store.waking import _wake


class EffectQueries(TaskQueries):
    backend: Backend

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
            self._touch_fenced(conn, fence, lease_now)
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
    ) -> Effect:
        """Move an effect along its status machine under the task's fence. Marking it ``sent``
        is durable, so after a power loss it is never mistaken for one not yet sent."""
        now_f = rows.ts(now)

        def op(conn: Connection) -> Effect:
            self._touch_fenced(conn, fence, lease_now)
            current = _get_effect(conn, effect_id)
            if current.task_id != fence.task_id:  # a lease on one task moves only its effects
                raise NotFound("effect", effect_id)
            check_effect_transition(current.status, status)
            values: dict[str, Any] = {"status": status.value, "updated_at": now_f}
            if status is EffectStatus.SENT:
                values["attempts"] = current.attempts + 1
            if result is not None:
                values["result"] = rows.dump(result)
            if error is not None:
                values["error"] = error
            conn.execute(update(effects).where(effects.c.id == effect_id).values(values))
            if status is not EffectStatus.PLANNED:
                _audit_effect(conn, self.backend, current, status, f"agent:{fence.task_id}", now)
            return _get_effect(conn, effect_id)

        return await self.backend.write(op, durable=status is EffectStatus.SENT)

    async def resolve_effect(
        self, effect_id: str, *, applied: bool, now: datetime, note: str = ""
    ) -> Effect:
        """The person decides an in-doubt effect: it happened (``applied``) or it did not (back
        to ``planned``, so the task sends it when it resumes). The waiting task wakes."""
        now_f = rows.ts(now)

        def op(conn: Connection) -> Effect:
            current = _get_effect(conn, effect_id)
            if current.status is not EffectStatus.IN_DOUBT:
                # a 'sent' effect is in flight with a live worker: not the person's to decide
                raise InvalidTransition(
                    f"effect {effect_id} is {current.status}; only in-doubt effects are resolved"
                )
            new = EffectStatus.SUCCEEDED if applied else EffectStatus.PLANNED
            check_effect_transition(current.status, new)
            conn.execute(
                update(effects)
                .where(effects.c.id == effect_id)
                .values(
                    status=new.value,
                    error=note or ("confirmed applied" if applied else "confirmed not applied"),
                    updated_at=now_f,
                )
            )
            # lock the task as one going to sleep on this effect does (no lost wake-up)
            task = conn.execute(
                select(tasks.c.status, tasks.c.wait)
                .where(tasks.c.id == current.task_id)
                .with_for_update()
            ).first()
            if (
                task is not None
                and task.status == "waiting"
                and (rows.load(task.wait) or {}).get("ref") == effect_id
            ):
                _wake(conn, current.task_id, {"reason": "effect", "effect_id": effect_id}, now_f)
            _audit_effect(conn, self.backend, current, new, "person", now)
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


def _audit_effect(
    conn: Connection,
    backend: Backend,
    effect: Effect,
    status: EffectStatus,
    actor: str,
    now: datetime,
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
        data={"effect": effect.id, "tool": effect.tool, "key": effect.key, "status": status.value},
        now=now,
    )
