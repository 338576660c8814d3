"""The reports the runtime writes itself, in plain words and the person's time zone: a goal
ended, a task failed, a budget stopped work, an effect is in doubt. Each id derives from its
cause, so the transaction that records the cause, replayed, records the report once."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from steward.domain.channel import Importance
from steward.domain.delivery import shorten
from steward.domain.goal import GoalStatus
from steward.domain.report import Report, local_day_words, report_id

_ENDED: dict[GoalStatus, tuple[str, str, Importance]] = {
    GoalStatus.COMPLETED: ("is done", "I have stopped working on it.", "actionable"),
    GoalStatus.EXPIRED: (
        "expired",
        "Its deadline passed; I have stopped working on it.",
        "actionable",
    ),
    GoalStatus.CANCELLED: ("was cancelled", "I have stopped working on it.", "info"),
}


def goal_ended(
    *,
    person_id: str,
    goal_id: str,
    title: str,
    status: GoalStatus,
    now: datetime,
    zone: ZoneInfo,
) -> Report:
    """The final report of a goal that completed, expired or was cancelled."""
    verb, why, importance = _ENDED[status]
    return Report(
        id=report_id(f"goal-ended:{goal_id}"),
        person_id=person_id,
        goal_id=goal_id,
        origin="runtime",
        what=f"Your goal '{shorten(title, 60)}' {verb} on {local_day_words(now, zone)}",
        why=why,
        importance=importance,
        created_at=now,
    )


def task_failed(
    *,
    person_id: str,
    goal_id: str | None,
    task_id: str,
    title: str,
    error: str,
    gave_up: bool,
    now: datetime,
) -> Report:
    """A task that failed, or that was retried until Steward gave up."""
    what = f"I could not finish '{shorten(title, 60)}'"
    return Report(
        id=report_id(f"task-failed:{task_id}"),
        person_id=person_id,
        goal_id=goal_id,
        task_id=task_id,
        origin="runtime",
        what=what + (" after several tries" if gave_up else ""),
        why=f"What went wrong: {shorten(error, 200)}",
        todo="Look at the task and try it again if it still matters.",
        importance="actionable",
        created_at=now,
    )
