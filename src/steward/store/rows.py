"""Row ↔ domain conversion. Times are epoch floats in the database, aware datetimes outside."""

from __future__ import annotations

import json
from datetime import UTC, datetime, time
from typing import Any

from sqlalchemy import Row

from steward.domain import (
    Activation,
    Approval,
    ApprovalPreview,
    ApprovalStatus,
    Artifact,
    Budget,
    Effect,
    EffectStatus,
    Event,
    Firing,
    FiringStatus,
    Goal,
    GoalRecord,
    GoalStatus,
    MissedPolicy,
    Notification,
    Person,
    Step,
    Task,
    TaskSpec,
    TaskStatus,
    Trigger,
    TriggerKind,
    WaitCondition,
)
from steward.domain.delivery import Delivery, DeliveryStatus, Message
from steward.domain.followup import FollowUp
from steward.domain.report import Report, ReportState
from steward.domain.roles import Role
from steward.domain.trigger import ActiveHours, TriggerBudget


def ts(value: datetime) -> float:
    return value.timestamp()


def ts_opt(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def dt(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)


def dt_opt(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=str)


def load(value: str | None) -> Any:
    return None if value is None else json.loads(value)


def _roles(value: str | None) -> dict[str, Role] | None:
    """An approval's stored argument roles (None: the tool declared none)."""
    loaded = load(value)
    return None if loaded is None else {name: Role(role) for name, role in loaded.items()}


def preview_json(value: ApprovalPreview | None) -> str | None:
    """An approval's preview as stored (None: its tool showed nothing beside the summary)."""
    if value is None:
        return None
    return dump(
        {
            "picture": value.picture,
            "picture_sha256": value.picture_sha256,
            "facts": [list(fact) for fact in value.facts],
        }
    )


def _preview(value: str | None) -> ApprovalPreview | None:
    loaded = load(value)
    if loaded is None:
        return None
    return ApprovalPreview(
        picture=loaded.get("picture"),
        picture_sha256=loaded.get("picture_sha256"),
        facts=tuple((str(label), str(text)) for label, text in loaded.get("facts", ())),
    )


def person(row: Row[Any]) -> Person:
    m = row._mapping
    return Person(
        id=m["id"],
        name=m["name"],
        max_concurrency=m["max_concurrency"],
        timezone=m["timezone"],
        created_at=dt(m["created_at"]),
        quiet_start=clock_time(m["quiet_start"]),
        quiet_end=clock_time(m["quiet_end"]),
        digest_at=clock_time(m["digest_at"]) or time(18, 0),
    )


def clock_time(value: str | None) -> time | None:
    """A local "HH:MM" as stored, or None."""
    return None if value is None else time.fromisoformat(value)


def hhmm(value: time | None) -> str | None:
    return None if value is None else value.strftime("%H:%M")


def goal(row: Row[Any]) -> Goal:
    m = row._mapping
    return Goal(
        id=m["id"],
        person_id=m["person_id"],
        title=m["title"],
        instructions=m["instructions"],
        constraints=load(m["constraints"]),
        deadline=dt_opt(m["deadline"]),
        stop_condition=m["stop_condition"],
        report_policy=m["report_policy"],
        sources=load(m["sources"]),
        budget=Budget.from_json(load(m["budget"])),
        status=GoalStatus(m["status"]),
        state=load(m["state"]),
        created_at=dt(m["created_at"]),
        updated_at=dt(m["updated_at"]),
    )


def goal_record(row: Row[Any]) -> GoalRecord:
    m = row._mapping
    return GoalRecord(
        id=m["id"],
        goal_id=m["goal_id"],
        task_id=m["task_id"],
        kind=m["kind"],
        content=load(m["content"]),
        created_at=dt(m["created_at"]),
    )


def task(row: Row[Any]) -> Task:
    m = row._mapping
    wait = load(m["wait"])
    return Task(
        id=m["id"],
        person_id=m["person_id"],
        goal_id=m["goal_id"],
        parent_id=m["parent_id"],
        kind=m["kind"],
        title=m["title"],
        input=load(m["input"]),
        status=TaskStatus(m["status"]),
        priority=m["priority"],
        attempts=m["attempts"],
        max_attempts=m["max_attempts"],
        run_at=dt(m["run_at"]),
        wait=WaitCondition.from_json(wait) if wait else None,
        state=load(m["state"]),
        step_seq=m["step_seq"],
        epoch=m["epoch"],
        lease_owner=m["lease_owner"],
        lease_expires_at=dt_opt(m["lease_expires_at"]),
        result=load(m["result"]),
        error=m["error"],
        trigger_id=m["trigger_id"],
        created_at=dt(m["created_at"]),
        updated_at=dt(m["updated_at"]),
        finished_at=dt_opt(m["finished_at"]),
    )


def activation(row: Row[Any]) -> Activation:
    m = row._mapping
    return Activation(
        id=m["id"],
        task_id=m["task_id"],
        goal_id=m["goal_id"],
        reason=m["reason"],
        worker=m["worker"],
        epoch=m["epoch"],
        started_at=dt(m["started_at"]),
        ended_at=dt_opt(m["ended_at"]),
        outcome=m["outcome"],
        steps=m["steps"],
        usage=load(m["usage"]),
    )


def step(row: Row[Any]) -> Step:
    m = row._mapping
    return Step(
        task_id=m["task_id"],
        seq=m["seq"],
        activation_id=m["activation_id"],
        kind=m["kind"],
        output=load(m["output"]),
        created_at=dt(m["created_at"]),
    )


def effect(row: Row[Any]) -> Effect:
    m = row._mapping
    return Effect(
        id=m["id"],
        task_id=m["task_id"],
        step_seq=m["step_seq"],
        key=m["key"],
        tool=m["tool"],
        args=load(m["args"]),
        status=EffectStatus(m["status"]),
        idempotent=bool(m["idempotent"]),
        result=load(m["result"]),
        error=m["error"],
        attempts=m["attempts"],
        created_at=dt(m["created_at"]),
        updated_at=dt(m["updated_at"]),
        send_deadline=dt_opt(m["send_deadline"]),
    )


def trigger(row: Row[Any]) -> Trigger:
    m = row._mapping
    return Trigger(
        id=m["id"],
        person_id=m["person_id"],
        goal_id=m["goal_id"],
        name=m["name"],
        kind=TriggerKind(m["kind"]),
        spec=m["spec"],
        timezone=m["timezone"],
        match=load(m["match"]),
        task=TaskSpec.from_json(load(m["task"])),
        enabled=bool(m["enabled"]),
        missed_policy=MissedPolicy(m["missed_policy"]),
        missed_cap=m["missed_cap"],
        grace_seconds=m["grace_seconds"],
        next_fire_at=dt_opt(m["next_fire_at"]),
        last_fire_at=dt_opt(m["last_fire_at"]),
        created_at=dt(m["created_at"]),
        watch=tuple(load(m["watch"])),
        active_hours=ActiveHours.from_json(load(m["active_hours"])) if m["active_hours"] else None,
        budget=TriggerBudget.from_json(load(m["budget"])) if m["budget"] else None,
        paused_until=dt_opt(m["paused_until"]),
        idle_beats=m["idle_beats"],
        last_beat_at=dt_opt(m["last_beat_at"]),
    )


def follow_up(row: Row[Any]) -> FollowUp:
    m = row._mapping
    return FollowUp(
        id=m["id"],
        person_id=m["person_id"],
        goal_id=m["goal_id"],
        task_id=m["task_id"],
        due_at=dt(m["due_at"]),
        note=m["note"],
        created_at=dt(m["created_at"]),
        done_at=dt_opt(m["done_at"]),
        done_task_id=m["done_task_id"],
    )


def firing(row: Row[Any]) -> Firing:
    m = row._mapping
    return Firing(
        id=m["id"],
        trigger_id=m["trigger_id"],
        scheduled_for=dt(m["scheduled_for"]),
        recorded_at=dt(m["recorded_at"]),
        status=FiringStatus(m["status"]),
        task_id=m["task_id"],
    )


def event(row: Row[Any]) -> Event:
    m = row._mapping
    return Event(
        id=m["id"],
        person_id=m["person_id"],
        type=m["type"],
        source=m["source"],
        dedupe_key=m["dedupe_key"],
        payload=load(m["payload"]),
        received_at=dt(m["received_at"]),
        routed_at=dt_opt(m["routed_at"]),
    )


def approval(row: Row[Any]) -> Approval:
    m = row._mapping
    return Approval(
        id=m["id"],
        person_id=m["person_id"],
        task_id=m["task_id"],
        goal_id=m["goal_id"],
        step_seq=m["step_seq"],
        tool=m["tool"],
        args=load(m["args"]),
        args_hash=m["args_hash"],
        reason=m["reason"],
        scopes=tuple(load(m["scopes"])),
        roles=_roles(m["roles"]),
        status=ApprovalStatus(m["status"]),
        decided_by=m["decided_by"],
        note=m["note"],
        created_at=dt(m["created_at"]),
        expires_at=dt_opt(m["expires_at"]),
        decided_at=dt_opt(m["decided_at"]),
        summary=m["summary"] or "",
        preview=_preview(m["preview"]),
    )


def notification(row: Row[Any]) -> Notification:
    m = row._mapping
    return Notification(
        id=m["id"],
        person_id=m["person_id"],
        kind=m["kind"],
        title=m["title"],
        body=m["body"],
        task_id=m["task_id"],
        goal_id=m["goal_id"],
        ref=m["ref"],
        created_at=dt(m["created_at"]),
        read_at=dt_opt(m["read_at"]),
    )


def artifact(row: Row[Any]) -> Artifact:
    m = row._mapping
    return Artifact(
        id=m["id"],
        person_id=m["person_id"],
        task_id=m["task_id"],
        name=m["name"],
        path=m["path"],
        size=m["size"],
        sha256=m["sha256"],
        media_type=m["media_type"],
        created_at=dt(m["created_at"]),
    )


def report(row: Row[Any]) -> Report:
    m = row._mapping
    return Report(
        id=m["id"],
        person_id=m["person_id"],
        goal_id=m["goal_id"],
        task_id=m["task_id"],
        origin=m["origin"],
        what=m["what"],
        why=m["why"],
        todo=m["todo"],
        importance=m["importance"],
        created_at=dt(m["created_at"]),
        state=ReportState(m["state"]),
        hold_until=dt_opt(m["hold_until"]),
        read_at=dt_opt(m["read_at"]),
    )


def delivery(row: Row[Any]) -> Delivery:
    m = row._mapping
    return Delivery(
        id=m["id"],
        person_id=m["person_id"],
        channel_id=m["channel_id"],
        ref=m["ref"],
        key=m["key"],
        message=Message(**json.loads(m["message"])),
        status=DeliveryStatus(m["status"]),
        attempts=m["attempts"],
        next_attempt_at=dt(m["next_attempt_at"]),
        error=m["error"],
        created_at=dt(m["created_at"]),
        updated_at=dt(m["updated_at"]),
    )
