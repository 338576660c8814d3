"""The reports the runtime writes itself, in plain words and the person's time zone: a goal
ended, a task failed, a budget stopped work, an effect is in doubt. Each id derives from its
cause, so the transaction that records the cause, replayed, records the report once."""

from __future__ import annotations

import re
from datetime import datetime
from zoneinfo import ZoneInfo

from steward.domain.channel import Importance
from steward.domain.delivery import shorten
from steward.domain.goal import GoalStatus, Overrun
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


_GAVE_UP = re.compile(r"^gave up after \d+ attempts?:\s*")
_EXCEPTION = re.compile(r"^(?:[A-Za-z_]\w*\.)*([A-Z]\w*)(?::|$)")
_ID = re.compile(r"\b[a-z]{2,4}_[0-9a-z]{8,}\b")
_INSIDE = "something went wrong inside Steward"
_KINDS = (
    (("timeout", "timedout"), "it took too long"),
    (
        ("connect", "unavailable", "network", "oserror", "http", "socket", "dns"),
        "a service it needed could not be reached",
    ),
    (("budget",), "it reached its spending limit"),
)
REASON_CHARS = 100
"""A failure's reason, at most."""


def plain_reason(error: str) -> str:
    """A task's raw error as a short reason in words: an exception becomes what kind of
    trouble it was, a structure or a traceback "something went wrong inside Steward", ids
    "another task"; a reason already in words stays, cut at a word."""
    text = _GAVE_UP.sub("", " ".join(error.split())).strip()
    exception = _EXCEPTION.match(text)
    if exception is not None or text.startswith("Traceback"):
        name = (exception.group(1) if exception else text).lower()
        return next((words for keys, words in _KINDS if any(k in name for k in keys)), _INSIDE)
    if "task kind" in text:
        return "Steward does not know how to do this kind of work"
    if not text or any(mark in text for mark in "{}[]<>"):
        return _INSIDE
    return shorten(_ID.sub("another task", text), REASON_CHARS)


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
    """A task that failed, or that was retried until Steward gave up: which task stopped and
    why, in words (the raw error stays in the task's timeline)."""
    return Report(
        id=report_id(f"task-failed:{task_id}"),
        person_id=person_id,
        goal_id=goal_id,
        task_id=task_id,
        origin="runtime",
        what=f"The task '{shorten(title, 60)}' stopped: {plain_reason(error)}",
        why="I tried several times before giving up." if gave_up else "",
        todo="Look at the task and try it again if it still matters.",
        importance="actionable",
        created_at=now,
    )


def effect_in_doubt(
    *,
    person_id: str,
    goal_id: str | None,
    task_id: str,
    effect_id: str,
    tool: str,
    attempt: int,
    now: datetime,
) -> Report:
    """An action that may or may not have happened: the person must hear it now."""
    action = tool.replace("_", " ").replace(".", " ")
    return Report(
        id=report_id(f"effect-in-doubt:{effect_id}:{attempt}"),
        person_id=person_id,
        goal_id=goal_id,
        task_id=task_id,
        origin="runtime",
        what=f"I am not sure whether '{action}' went through",
        why="The connection broke while it was being done; doing it again could do it twice.",
        todo="Check whether it happened, then tell me on the dashboard (Inbox).",
        importance="urgent",
        created_at=now,
    )


def _budget_words(overrun: Overrun) -> str:
    """The cap as the person set it: ``$3.00``, ``8000 tokens``, ``40 minutes of work``."""
    cap = overrun.cap
    match overrun.measure:
        case "cost_usd":
            return f"${cap:.2f}"
        case "seconds":
            if cap >= 3600 and cap % 3600 == 0:
                hours = cap / 3600
                return f"{hours:g} hour{'s' if hours != 1 else ''} of work"
            minutes = cap / 60
            return f"{minutes:g} minute{'s' if minutes != 1 else ''} of work"
        case "activations":
            return f"{cap:g} run{'s' if cap != 1 else ''}"
        case measure:
            return f"{cap:g} {measure if cap != 1 else measure[:-1]}"


def goal_budget_reached(
    *,
    person_id: str,
    goal_id: str,
    task_id: str,
    title: str,
    overrun: Overrun,
    now: datetime,
) -> Report:
    """A goal's budget stopped its work. Once per goal and cap: its tasks stopped by the same
    cap, and a replayed stop, report it once; a raised cap reached again reports again."""
    return Report(
        id=report_id(f"goal-budget:{goal_id}:{overrun.measure}:{overrun.cap!r}"),
        person_id=person_id,
        goal_id=goal_id,
        task_id=task_id,
        origin="runtime",
        what=f"Your goal '{shorten(title, 60)}' reached its budget of {_budget_words(overrun)}",
        why="I stopped working on it.",
        todo="Raise the budget to continue.",
        importance="actionable",
        created_at=now,
    )


SUBJECT_CHARS = 60
"""The most of an unverified message's subject a report quotes."""


def unverified_mail(*, person_id: str, message_key: str, subject: str, now: datetime) -> Report:
    """A message to the agent's mailbox that names the person as its sender but did not prove
    it: they hear it once per message (``message_key`` names it). Its subject is anyone's text:
    cut short, on one line, and kept inside its quotes."""
    printable = "".join(c if c.isprintable() else " " for c in subject).replace('"', "'")
    quoted = shorten(printable, SUBJECT_CHARS) or "(none)"
    return Report(
        id=report_id(f"unverified-mail:{message_key}"),
        person_id=person_id,
        origin="runtime",
        what=(
            f'A message that claims to be from you (subject "{quoted}") arrived at the '
            "agent's mailbox but could not be verified as yours, so I did not act on it"
        ),
        why=(
            "It could not be verified as yours, so I did not act on it: anyone can write your "
            "address as a message's sender, and this one lacked the proof your mail provider "
            "gives the mail you send."
        ),
        todo=(
            "If you wrote it, send it again from your usual mail account; if not, someone "
            "tried to speak as you and nothing came of it."
        ),
        importance="actionable",
        created_at=now,
    )
