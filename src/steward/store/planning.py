"""Planning what reaches the person, inside the caller's transaction: a report is stored with
its placement and its deliveries at once, an approval or a question with its deliveries, so a
crash can neither lose nor double them (every id and key derives from its cause)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime
from zoneinfo import ZoneInfo

from sqlalchemy import Connection, func, select

from steward.domain import Notification, Person
from steward.domain.channel import Channel, MessageKind
from steward.domain.delivery import DeliveryStatus, Message, report_message
from steward.domain.report import (
    Placement,
    Reach,
    Report,
    ReportState,
    local_midnight,
    place,
    quiet_ends,
)
from steward.store import rows
from steward.store.backend import Backend
from steward.store.channels import enabled_channels
from steward.store.feed import append_feed
from steward.store.persons import load_person
from steward.store.schema import deliveries, goals, reports

_STATE = {
    Placement.NOW: ReportState.PENDING,
    Placement.HOLD: ReportState.HELD,
    Placement.DIGEST: ReportState.DIGEST,
    Placement.DROP: ReportState.DROPPED,
}


def reach_of(person: Person) -> Reach:
    """When a person may be reached."""
    return Reach(
        zone=ZoneInfo(person.timezone),
        quiet_start=person.quiet_start,
        quiet_end=person.quiet_end,
        digest_at=person.digest_at,
    )


def record_report_in(conn: Connection, backend: Backend, report: Report) -> Report:
    """Store ``report`` placed by its goal's policy, with its deliveries when it goes out now
    or after quiet hours. A report whose id exists already is returned as stored, unchanged."""
    existing = conn.execute(select(reports).where(reports.c.id == report.id)).first()
    if existing is not None:
        return rows.report(existing)
    person = load_person(conn, report.person_id)
    goal = None
    if report.goal_id is not None:
        goal = conn.execute(
            select(goals.c.title, goals.c.report_policy).where(goals.c.id == report.goal_id)
        ).first()
    reach = reach_of(person)
    decision = place(
        policy=None if goal is None else goal.report_policy,
        importance=report.importance,
        reach=reach,
        now=report.created_at,
        origin=report.origin,
        urgent_today=_agent_urgent_since(conn, report, local_midnight(reach, report.created_at)),
    )
    channels = enabled_channels(conn, person.id)
    state = _STATE[decision.placement]
    if state in (ReportState.PENDING, ReportState.HELD) and not channels:
        state = ReportState.DROPPED
    hold = decision.at if state in (ReportState.HELD, ReportState.DIGEST) else None
    conn.execute(
        reports.insert().values(
            id=report.id,
            person_id=report.person_id,
            goal_id=report.goal_id,
            task_id=report.task_id,
            origin=report.origin,
            what=report.what,
            why=report.why,
            todo=report.todo,
            importance=decision.importance,
            created_at=rows.ts(report.created_at),
            state=state.value,
            hold_until=rows.ts_opt(hold),
            read_at=None,
        )
    )
    stored = rows.report(conn.execute(select(reports).where(reports.c.id == report.id)).one())
    if state in (ReportState.PENDING, ReportState.HELD):
        message = report_message(stored, goal_title=None if goal is None else goal.title)
        plan_in(
            conn, backend, person_id=person.id, channels=channels, message=message,
            ref=report.id, at=decision.at, now=report.created_at,
        )  # fmt: skip
    append_feed(
        conn,
        backend,
        person_id=person.id,
        at=report.created_at,
        kind="report",
        summary=report.what,
        goal_id=report.goal_id,
        task_id=report.task_id,
        ref=report.id,
        data={"importance": report.importance, "origin": report.origin},
    )
    return stored


def _agent_urgent_since(conn: Connection, report: Report, since: datetime) -> int:
    """The agent's urgent reports of ``report``'s goal (or of the person's work without a
    goal) made since ``since``; 0 for anything else than an agent's urgent report."""
    if report.origin != "agent" or report.importance != "urgent":
        return 0
    same_goal = (
        reports.c.goal_id.is_(None)
        if report.goal_id is None
        else reports.c.goal_id == report.goal_id
    )
    query = select(func.count()).where(
        reports.c.person_id == report.person_id,
        same_goal,
        reports.c.origin == "agent",
        reports.c.importance == "urgent",
        reports.c.created_at >= rows.ts(since),
    )
    return int(conn.execute(query).scalar() or 0)


def plan_waiting_in(conn: Connection, backend: Backend, item: Notification) -> None:
    """Plan the deliveries of an approval or question just raised: to the channel the person
    last used, or to every enabled channel when they have used none yet; after quiet hours."""
    channels = enabled_channels(conn, item.person_id)
    used = [c for c in channels if c.last_used_at is not None]
    if used:
        channels = [max(used, key=lambda c: (c.last_used_at, c.id))]
    if not channels:
        return
    person = load_person(conn, item.person_id)
    kind: MessageKind = "approval" if item.kind == "approval" else "question"
    message = Message(
        kind=kind,
        title=item.title,
        body=item.body,
        importance="actionable",
        link=f"/inbox/{item.ref}" if kind == "approval" and item.ref else "/inbox",
        ref=item.ref or item.id,
        goal_id=item.goal_id,
    )
    at = quiet_ends(reach_of(person), item.created_at)
    plan_in(
        conn, backend, person_id=item.person_id, channels=channels, message=message,
        ref=item.ref or item.id, at=at, now=item.created_at,
    )  # fmt: skip


def plan_in(
    conn: Connection,
    backend: Backend,
    *,
    person_id: str,
    channels: Sequence[Channel],
    message: Message,
    ref: str,
    at: datetime,
    now: datetime,
) -> None:
    """One delivery of ``message`` per channel, due at ``at``; planned once per key."""
    if channels:
        backend.note_planned(conn)
    for channel in channels:
        key = f"{ref}:{channel.id}"
        conn.execute(
            backend.insert_ignore(
                deliveries,
                {
                    "id": "dlv_" + hashlib.sha256(key.encode()).hexdigest()[:26],
                    "person_id": person_id,
                    "channel_id": channel.id,
                    "ref": ref,
                    "kind": message.kind,
                    "key": key,
                    "message": rows.dump(asdict(message)),
                    "status": DeliveryStatus.PLANNED.value,
                    "attempts": 0,
                    "next_attempt_at": rows.ts(at),
                    "lease_holder": None,
                    "lease_expires_at": None,
                    "error": None,
                    "created_at": rows.ts(now),
                    "updated_at": rows.ts(now),
                },
            )
        )
