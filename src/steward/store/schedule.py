"""Scheduling SQL: triggers and their firings (heartbeat checks and daily budgets in
``store.heartbeats``), the event inbox, leader leases, pruning."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, func, insert, select, update

from steward.domain import Event, Firing, FiringStatus, Trigger, TriggerKind
from steward.domain.ids import firing_id, new_id
from steward.domain.task import WaitCondition, payload_matches
from steward.domain.trigger import TriggerBudget
from steward.errors import NotFound
from steward.store import notify, rows
from steward.store.backend import Backend
from steward.store.fencing import lease_clock
from steward.store.heartbeats import budget_stop, check_heartbeat, record_beat
from steward.store.persons import load_person
from steward.store.schema import (
    activations,
    effects,
    events,
    feed,
    firings,
    follow_ups,
    goals,
    leases,
    persons,
    steps,
    tasks,
    triggers,
)
from steward.store.tasks import task_values
from steward.store.waking import TERMINAL, event_summary, wake_in

_LIVE_TRIGGER = triggers.c.enabled.is_(True) & (
    triggers.c.goal_id.is_(None)
    | triggers.c.goal_id.in_(select(goals.c.id).where(goals.c.status == "active"))
)
"""Triggers that may fire: switched on, and without a goal or with an active one."""


class ScheduleRepository:
    """Triggers, their firings and events; the scheduler lease; pruning history."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    # --- triggers -----------------------------------------------------------------------

    async def create_trigger(self, trigger: Trigger) -> Trigger:
        values = _trigger_values(trigger)

        def op(conn: Connection) -> Trigger:
            load_person(conn, trigger.person_id)
            if trigger.goal_id is not None:
                owner = conn.execute(
                    select(goals.c.person_id).where(goals.c.id == trigger.goal_id)
                ).scalar()
                if owner != trigger.person_id:
                    raise NotFound("goal", trigger.goal_id)
            conn.execute(insert(triggers).values(values))
            return _get_trigger(conn, trigger.id)

        return await self.backend.write(op)

    async def get_trigger(self, trigger_id: str) -> Trigger:
        return await self.backend.read(lambda conn: _get_trigger(conn, trigger_id))

    async def list_triggers(
        self, *, person_id: str | None = None, goal_id: str | None = None, limit: int = 500
    ) -> list[Trigger]:
        query = select(triggers).order_by(triggers.c.created_at).limit(limit)
        if person_id is not None:
            query = query.where(triggers.c.person_id == person_id)
        if goal_id is not None:
            query = query.where(triggers.c.goal_id == goal_id)
        return await self.backend.read(lambda conn: [rows.trigger(r) for r in conn.execute(query)])

    async def set_trigger_enabled(
        self, trigger_id: str, *, enabled: bool, next_fire_at: datetime | None, now: datetime
    ) -> Trigger:
        """Switch a trigger on or off. Switching it on ends a budget pause (its first
        firing checks the budget again), so the pause cannot later pull it back in time, and
        a heartbeat looks at events from now on: what came while it was off is old news."""
        values: dict[str, Any] = {"enabled": enabled, "next_fire_at": rows.ts_opt(next_fire_at)}
        if enabled:
            values["paused_until"] = None
            values["last_beat_at"] = rows.ts(now)

        def op(conn: Connection) -> Trigger:
            _get_trigger(conn, trigger_id)
            conn.execute(update(triggers).where(triggers.c.id == trigger_id).values(values))
            return _get_trigger(conn, trigger_id)

        return await self.backend.write(op)

    async def due_triggers(self, *, now: datetime, limit: int = 500) -> list[Trigger]:
        query = (
            select(triggers)
            .where(_LIVE_TRIGGER, triggers.c.next_fire_at <= rows.ts(now))
            .order_by(triggers.c.next_fire_at)
            .limit(limit)
        )
        return await self.backend.read(lambda conn: [rows.trigger(r) for r in conn.execute(query)])

    async def next_trigger_time(self, *, person_id: str | None = None) -> datetime | None:
        """The next firing: of anyone's trigger, or of one person's."""
        # the same triggers due_triggers hands out: one of a paused goal is not due, and
        # counting it would wake the scheduler over and over for nothing
        query = select(func.min(triggers.c.next_fire_at)).where(_LIVE_TRIGGER)
        if person_id is not None:
            query = query.where(triggers.c.person_id == person_id)
        value = await self.backend.read(lambda conn: conn.execute(query).scalar())
        return rows.dt_opt(value)

    async def apply_firings(
        self,
        trigger: Trigger,
        plan: Sequence[tuple[datetime, FiringStatus]],
        *,
        next_fire_at: datetime | None,
        now: datetime,
    ) -> list[str]:
        """Record a trigger's due firings (fired or missed) and create a task for each fired
        one, then move its schedule on — all in one transaction, and only if nobody else
        handled this schedule slot first. Returns the created task ids."""
        return await self.apply_many_firings([(trigger, plan, next_fire_at)], now=now)

    async def apply_many_firings(
        self,
        items: Sequence[tuple[Trigger, Sequence[tuple[datetime, FiringStatus]], datetime | None]],
        *,
        now: datetime,
    ) -> list[str]:
        """:meth:`apply_firings` for many triggers in one transaction (one commit per scheduler
        tick, not per trigger). Each trigger is still guarded on its own schedule slot."""
        now_f = rows.ts(now)

        def op(conn: Connection) -> list[str]:
            created: list[str] = []
            for trigger, plan, next_fire_at in items:
                created += self._apply_firings(conn, trigger, plan, next_fire_at, now_f)
            return created

        return await self.backend.write(op)

    def _apply_firings(
        self,
        conn: Connection,
        trigger: Trigger,
        plan: Sequence[tuple[datetime, FiringStatus]],
        next_fire_at: datetime | None,
        now_f: float,
    ) -> list[str]:
        last = max((rows.ts(t) for t, _ in plan), default=rows.ts_opt(trigger.last_fire_at))
        moved = conn.execute(
            update(triggers)
            .where(
                triggers.c.id == trigger.id,
                triggers.c.enabled.is_(True),
                triggers.c.next_fire_at == rows.ts_opt(trigger.next_fire_at),
            )
            .values(next_fire_at=rows.ts_opt(next_fire_at), last_fire_at=last)
        )
        if moved.rowcount != 1:
            return []
        if trigger.kind is TriggerKind.HEARTBEAT:
            return self._beat(conn, trigger, max(t for t, _ in plan), now_f) if plan else []
        created: list[str] = []
        for when, status in plan:
            task_id = _record_firing(
                self.backend,
                conn,
                trigger,
                firing_id(trigger.id, rows.ts(when)),
                when,
                status,
                {"fired_for": when.isoformat()},
                now_f,
            )
            if task_id is not None:
                created.append(task_id)
        return created

    def _beat(self, conn: Connection, trigger: Trigger, when: datetime, now_f: float) -> list[str]:
        """One heartbeat: the check in the store; a task only if it found something. Times
        missed in downtime collapse into this one check, which sees everything since the last."""
        findings = check_heartbeat(conn, trigger, now_f)
        task_id = None
        if findings is not None:
            task_id = _record_firing(
                self.backend,
                conn,
                trigger,
                firing_id(trigger.id, rows.ts(when)),
                when,
                FiringStatus.FIRED,
                {"fired_for": when.isoformat(), "event": findings.to_input()},
                now_f,
            )
        record_beat(conn, trigger, findings, task_id, now_f)
        return [task_id] if task_id is not None else []

    async def resume_trigger(self, trigger: Trigger, *, next_fire_at: datetime | None) -> bool:
        """End a budget pause: put the trigger back on its schedule. False if another
        scheduler moved it first."""

        def op(conn: Connection) -> bool:
            moved = conn.execute(
                update(triggers)
                .where(
                    triggers.c.id == trigger.id,
                    triggers.c.paused_until == rows.ts_opt(trigger.paused_until),
                    triggers.c.next_fire_at == rows.ts_opt(trigger.next_fire_at),
                )
                .values(paused_until=None, next_fire_at=rows.ts_opt(next_fire_at))
            )
            return bool(moved.rowcount == 1)

        return await self.backend.write(op)

    async def set_trigger_budget(
        self, trigger_id: str, *, budget: TriggerBudget | None, next_fire_at: datetime | None
    ) -> Trigger:
        """Change a trigger's daily budget. It lifts today's pause: the next firing checks
        the new budget."""

        def op(conn: Connection) -> Trigger:
            _get_trigger(conn, trigger_id)
            conn.execute(
                update(triggers)
                .where(triggers.c.id == trigger_id)
                .values(
                    budget=rows.dump(budget.to_json()) if budget is not None else None,
                    paused_until=None,
                    next_fire_at=rows.ts_opt(next_fire_at),
                )
            )
            return _get_trigger(conn, trigger_id)

        return await self.backend.write(op)

    async def list_firings(self, trigger_id: str, *, limit: int = 1000) -> list[Firing]:
        query = (
            select(firings)
            .where(firings.c.trigger_id == trigger_id)
            .order_by(firings.c.scheduled_for)
            .limit(limit)
        )
        return await self.backend.read(lambda conn: [rows.firing(r) for r in conn.execute(query)])

    # --- events -------------------------------------------------------------------------

    async def add_event(
        self,
        *,
        person_id: str,
        type: str,
        source: str,
        dedupe_key: str,
        payload: dict[str, Any],
        now: datetime,
    ) -> tuple[Event, bool]:
        """Store an event once per ``dedupe_key``. Returns the stored event and whether this
        delivery was the first."""

        def op(conn: Connection) -> tuple[Event, bool]:
            return insert_event(
                self.backend,
                conn,
                person_id=person_id,
                type=type,
                source=source,
                dedupe_key=dedupe_key,
                payload=payload,
                now=now,
            )

        return await self.backend.write(op)

    async def route_events(self, *, now: datetime, limit: int = 200) -> int:
        """Deliver unrouted events: wake tasks waiting for a matching event and fire matching
        event triggers (one firing per trigger and event, by deterministic id)."""
        now_f = rows.ts(now)

        def op(conn: Connection) -> int:
            batch = conn.execute(
                self.backend.lock_rows(
                    select(events)
                    .where(events.c.routed_at.is_(None))
                    .order_by(events.c.received_at)
                    .limit(limit)
                )
            ).all()
            for row in batch:
                event = rows.event(row)
                summary = event_summary(event)
                # the lock a task going to sleep on an event takes too (no lost wake-up)
                conn.execute(
                    select(persons.c.id)
                    .where(persons.c.id == event.person_id)
                    .with_for_update(key_share=True)
                )
                waiters = conn.execute(
                    select(tasks.c.id, tasks.c.wait).where(
                        tasks.c.person_id == event.person_id,
                        tasks.c.wait_event == event.type,
                        tasks.c.status == "waiting",
                    )
                ).all()
                taken = False
                for task_id, wait in waiters:
                    try:
                        condition = WaitCondition.from_json(rows.load(wait))
                    except (KeyError, TypeError, ValueError):
                        continue  # a damaged row must not stop routing for everyone else
                    if condition.matches_event(event.type, event.payload):
                        taken |= wake_in(
                            conn, task_id, {"reason": "event", "event": summary}, now_f
                        )
                for trow in conn.execute(
                    select(triggers).where(
                        triggers.c.person_id == event.person_id,
                        triggers.c.kind == TriggerKind.EVENT.value,
                        triggers.c.spec == event.type,
                        triggers.c.enabled.is_(True),
                        # paused for today: its budget is spent (a flood stops here, unrecorded)
                        triggers.c.paused_until.is_(None) | (triggers.c.paused_until <= now_f),
                    )
                ):
                    trigger = rows.trigger(trow)
                    if payload_matches(trigger.match, event.payload):
                        taken |= (
                            _record_firing(
                                self.backend,
                                conn,
                                trigger,
                                f"fir_{trigger.id}_{event.id}",
                                event.received_at,
                                FiringStatus.FIRED,
                                {"event": summary},
                                now_f,
                            )
                            is not None
                        )
                conn.execute(
                    update(events)
                    .where(events.c.id == event.id)
                    # a waiting task may have taken it before it was routed: that stays
                    .values(routed_at=now_f, consumed_at=now_f if taken else events.c.consumed_at)
                )
            return len(batch)

        return await self.backend.write(op)

    async def list_events(self, *, person_id: str | None = None, limit: int = 200) -> list[Event]:
        query = select(events).order_by(events.c.received_at.desc()).limit(limit)
        if person_id is not None:
            query = query.where(events.c.person_id == person_id)
        return await self.backend.read(lambda conn: [rows.event(r) for r in conn.execute(query)])

    # --- leader lease -------------------------------------------------------------------

    async def acquire_lease(
        self, name: str, *, holder: str, ttl_seconds: float, lease_now: datetime | None = None
    ) -> int | None:
        """Take or renew the named lease. Returns its epoch if ``holder`` now holds it."""
        now_sql = lease_clock(self.backend, lease_now)

        def op(conn: Connection) -> int | None:
            conn.execute(
                self.backend.insert_ignore(
                    leases, {"name": name, "holder": holder, "epoch": 0, "expires_at": 0.0}
                )
            )
            row = conn.execute(
                self.backend.lock_for_update(
                    select(leases.c.holder, leases.c.epoch, leases.c.expires_at < now_sql).where(
                        leases.c.name == name
                    )
                )
            ).one()
            current_holder, epoch, expired = row
            if current_holder != holder and not expired:
                return None
            new_epoch = epoch if current_holder == holder and not expired else epoch + 1
            conn.execute(
                update(leases)
                .where(leases.c.name == name)
                .values(holder=holder, epoch=new_epoch, expires_at=now_sql + ttl_seconds)
            )
            return int(new_epoch)

        return await self.backend.write(op)

    async def release_lease(self, name: str, *, holder: str) -> None:
        def op(conn: Connection) -> None:
            conn.execute(
                update(leases)
                .where(leases.c.name == name, leases.c.holder == holder)
                .values(expires_at=0.0)
            )

        await self.backend.write(op)

    # --- history ------------------------------------------------------------------------

    async def prune_history(self, *, before: datetime) -> dict[str, int]:
        """Delete tasks that finished before ``before`` with their activations, steps and
        effects, and routed events, firings, feed entries and done follow-ups older than that.
        Goals and their records stay."""
        cutoff = rows.ts(before)

        def op(conn: Connection) -> dict[str, int]:
            old = (
                select(tasks.c.id)
                .where(tasks.c.status.in_(TERMINAL), tasks.c.finished_at < cutoff)
                .scalar_subquery()
            )
            counts = {
                "steps": conn.execute(delete(steps).where(steps.c.task_id.in_(old))).rowcount,
                "effects": conn.execute(delete(effects).where(effects.c.task_id.in_(old))).rowcount,
                "activations": conn.execute(
                    delete(activations).where(activations.c.task_id.in_(old))
                ).rowcount,
            }
            counts["tasks"] = conn.execute(
                delete(tasks).where(tasks.c.status.in_(TERMINAL), tasks.c.finished_at < cutoff)
            ).rowcount
            counts["events"] = conn.execute(
                delete(events).where(events.c.routed_at < cutoff)
            ).rowcount
            counts["firings"] = conn.execute(
                delete(firings).where(firings.c.recorded_at < cutoff)
            ).rowcount
            counts["feed entries"] = conn.execute(delete(feed).where(feed.c.at < cutoff)).rowcount
            counts["follow-ups"] = conn.execute(
                delete(follow_ups).where(follow_ups.c.done_at < cutoff)
            ).rowcount
            return counts

        return await self.backend.write(op)


def _record_firing(
    backend: Backend,
    conn: Connection,
    trigger: Trigger,
    fid: str,
    when: datetime,
    status: FiringStatus,
    extra_input: dict[str, Any],
    now_f: float,
) -> str | None:
    """Insert a firing by deterministic id; if new and fired, create its task. A firing that
    already exists (a double fire) creates nothing."""
    # RETURNING, not rowcount: drivers report -1 for INSERT rowcounts (psycopg here).
    inserted = conn.execute(
        backend.insert_ignore(
            firings,
            {
                "id": fid,
                "trigger_id": trigger.id,
                "scheduled_for": rows.ts(when),
                "recorded_at": now_f,
                "status": status.value,
            },
        ).returning(firings.c.id)
    ).first()
    if inserted is None or status is not FiringStatus.FIRED:
        return None
    if budget_stop(backend, conn, trigger, now_f):
        conn.execute(
            update(firings).where(firings.c.id == fid).values(status=FiringStatus.PAUSED.value)
        )
        return None
    if trigger.paused_until is not None:  # an event trigger's pause ended with its day
        conn.execute(update(triggers).where(triggers.c.id == trigger.id).values(paused_until=None))
    spec = trigger.task
    values = task_values(
        replace(spec, input=spec.input | extra_input),
        person_id=trigger.person_id,
        goal_id=trigger.goal_id,
        parent_id=None,
        trigger_id=trigger.id,
        run_at=rows.dt(now_f),
        now=rows.dt(now_f),
    )
    values["wake"] = rows.dump({"reason": "event" if "event" in extra_input else "timer"})
    conn.execute(insert(tasks).values(values))
    Backend.announce(conn, notify.WORK)
    conn.execute(update(firings).where(firings.c.id == fid).values(task_id=values["id"]))
    task_id: str = values["id"]
    return task_id


def _trigger_values(trigger: Trigger) -> dict[str, Any]:
    return {
        "id": trigger.id,
        "person_id": trigger.person_id,
        "goal_id": trigger.goal_id,
        "name": trigger.name,
        "kind": trigger.kind.value,
        "spec": trigger.spec,
        "timezone": trigger.timezone,
        "match": rows.dump(trigger.match),
        "task": rows.dump(trigger.task.to_json()),
        "enabled": trigger.enabled,
        "missed_policy": trigger.missed_policy.value,
        "missed_cap": trigger.missed_cap,
        "grace_seconds": trigger.grace_seconds,
        "next_fire_at": rows.ts_opt(trigger.next_fire_at),
        "last_fire_at": rows.ts_opt(trigger.last_fire_at),
        "created_at": rows.ts(trigger.created_at),
        "watch": rows.dump(list(trigger.watch)),
        "active_hours": rows.dump(trigger.active_hours.to_json()) if trigger.active_hours else None,
        "budget": rows.dump(trigger.budget.to_json()) if trigger.budget else None,
        "paused_until": rows.ts_opt(trigger.paused_until),
        "idle_beats": trigger.idle_beats,
        "last_beat_at": rows.ts_opt(trigger.last_beat_at),
    }


def _get_trigger(conn: Connection, trigger_id: str) -> Trigger:
    row = conn.execute(select(triggers).where(triggers.c.id == trigger_id)).first()
    if row is None:
        raise NotFound("trigger", trigger_id)
    return rows.trigger(row)


def insert_event(
    backend: Backend,
    conn: Connection,
    *,
    person_id: str,
    type: str,
    source: str,
    dedupe_key: str,
    payload: dict[str, Any],
    now: datetime,
) -> tuple[Event, bool]:
    """Store an event once per person and ``dedupe_key`` in ``conn``'s transaction: the
    stored event, and whether this delivery was the first."""
    values = {
        "id": new_id("evt"),
        "person_id": person_id,
        "type": type,
        "source": source,
        "dedupe_key": dedupe_key,
        "payload": rows.dump(payload),
        "received_at": rows.ts(now),
    }
    load_person(conn, person_id)
    conn.execute(backend.insert_ignore(events, values))
    row = conn.execute(
        select(events).where(events.c.person_id == person_id, events.c.dedupe_key == dedupe_key)
    ).one()
    stored = rows.event(row)
    first = stored.id == values["id"]
    if first:
        Backend.announce(conn, notify.EVENTS)
    return stored, first
