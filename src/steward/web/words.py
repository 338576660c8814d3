"""What the dashboard shows, in the person's words: times in their zone (relative where that
reads naturally), money with sensible precision, titles cut at a word, statuses and waits as
sentences, and arguments with their secrets masked."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from steward.domain.task import WaitCondition

MASK = "•••• (hidden)"
"""What a secret argument value shows instead of itself."""
_SECRET_NAME = re.compile(
    r"authorization|api[_-]?key|token|secret|password|passwd|cookie|credential|signature",
    re.IGNORECASE,
)
_VAULT_REF = re.compile(r"\{\{\s*(?:secret|vault)[^}]*\}\}|\$\{?(?:secret|vault)[:.][^\s}]+\}?")


def zone(name: str | None) -> ZoneInfo:
    """The person's zone (an unknown name reads as UTC rather than failing a page)."""
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def when(value: datetime | None, tz: ZoneInfo, now: datetime) -> str:
    """``value`` in the person's zone: "in 2 hours", "3 minutes ago", "yesterday 18:04",
    "Thursday 10:00", "4 Dec 2026 09:30"; "—" for none."""
    if value is None:
        return "—"
    local, today = value.astimezone(tz), now.astimezone(tz)
    delta = value - now
    seconds = abs(delta.total_seconds())
    if seconds < 45:
        return "just now" if delta.total_seconds() <= 0 else "in a moment"
    if seconds < 3 * 3600:
        amount = round(seconds / 60)
        unit = "minute" if amount < 60 else "hour"
        if amount >= 60:
            amount = round(seconds / 3600)
        said = f"{amount} {unit}{'s' if amount != 1 else ''}"
        return f"in {said}" if delta.total_seconds() > 0 else f"{said} ago"
    clock = local.strftime("%H:%M")
    days = (local.date() - today.date()).days
    if days == 0:
        return f"today {clock}"
    if days == -1:
        return f"yesterday {clock}"
    if days == 1:
        return f"tomorrow {clock}"
    if -6 <= days <= 6:
        return f"{'last ' if days < 0 else ''}{local.strftime('%A')} {clock}"
    if local.year == today.year:
        return f"{local.day} {local.strftime('%b')} {clock}"
    return f"{local.day} {local.strftime('%b %Y')} {clock}"


def exact(value: datetime | None, tz: ZoneInfo) -> str:
    """The full time in the person's zone, with the zone's name (for a tooltip)."""
    if value is None:
        return ""
    return value.astimezone(tz).strftime("%Y-%m-%d %H:%M %Z")


def money(value: float) -> str:
    """ "$0.42", "less than $0.01", "$0" — never "$0.0000"."""
    if value <= 0:
        return "$0"
    if value < 0.005:
        return "less than $0.01"
    return f"${value:,.2f}"


def cut(text: str | None, most: int = 60) -> str:
    """``text`` shortened at a word boundary, with an ellipsis when cut."""
    text = " ".join((text or "").split())
    if len(text) <= most:
        return text
    head = text[: most - 1]
    space = head.rfind(" ")
    if space >= most // 2:
        head = head[:space]
    return head.rstrip(" ,;:.-—") + "…"


STATUS_WORDS = {
    "pending": "about to start",
    "running": "working",
    "waiting": "waiting",
    "paused": "paused",
    "succeeded": "done",
    "failed": "failed",
    "cancelled": "cancelled",
    "dead_lettered": "gave up",
    "active": "active",
    "completed": "completed",
    "expired": "expired",
    "approved": "approved",
    "denied": "denied",
    "enabled": "on",
    "disabled": "off",
    "planned": "planned",
    "sent": "sent, no answer yet",
    "in_doubt": "unknown whether it happened",
    "abandoned": "abandoned",
    "allow": "allowed",
    "ask": "asked you",
    "deny": "refused",
    "handoff": "handed to you",
    "said_no": "stopped: you said no",
}
"""Each status as the person reads it."""
BAD = frozenset(
    {"failed", "cancelled", "dead_lettered", "denied", "expired", "abandoned", "deny", "said_no"}
)
"""Outcomes shown as failures, never as a success."""


def status_words(value: object) -> str:
    key = str(getattr(value, "value", value))
    return STATUS_WORDS.get(key, key.replace("_", " "))


def status_class(value: object) -> str:
    """The CSS class of a status: ``bad`` (failures, refusals, denials), ``good``, ``wait``."""
    key = str(getattr(value, "value", value))
    if key in BAD:
        return "bad"
    if key in ("succeeded", "completed", "approved", "active", "enabled", "running"):
        return "good"
    return "wait"


def waits_for(wait: WaitCondition | None, status: object, tz: ZoneInfo, now: datetime) -> str:
    """What a waiting task waits for, as a sentence ("waits until Thursday 10:00", "waits for
    a new e-mail from dana@…"); empty unless the task is waiting."""
    if wait is None or str(getattr(status, "value", status)) != "waiting":
        return ""
    timeout = f", at most until {when(wait.until, tz, now)}" if wait.until else ""
    if wait.kind == "until":
        return f"waits until {when(wait.until, tz, now)}"
    if wait.kind == "approval":
        return "waits for your approval" + timeout
    if wait.kind == "input":
        return "waits for your answer" + timeout
    if wait.kind == "children":
        return "waits for its sub-tasks to finish" + timeout
    if wait.kind == "effect":
        return "waits for you to say whether an action happened"
    return f"waits for {_event_words(wait.event_type, wait.match)}{timeout}"


_EVENT_NOUNS = {
    "email.received": "a new e-mail",
    "mail.received": "a new e-mail",
    "calendar.changed": "a calendar change",
    "calendar.event": "a calendar event",
    "webhook": "a webhook call",
    "web.changed": "a change on a watched page",
}


def _event_words(event_type: str | None, match: Mapping[str, Any]) -> str:
    noun = _EVENT_NOUNS.get(event_type or "", f"a {event_type or 'matching'} event")
    said = []
    for key, want in match.items():
        if isinstance(want, dict) and len(want) == 1:
            ((op, arg),) = want.items()
            shown = {
                "contains": f"containing “{arg}”",
                "endswith": f"ending in “{arg}”",
                "in": f"one of {', '.join(map(str, arg)) if isinstance(arg, list) else arg}",
            }.get(op, str(arg))
            said.append(f"{key} {shown}")
        elif key == "from":
            said.append(f"from {want}")
        elif key == "to":
            said.append(f"to {want}")
        else:
            said.append(f"{key} {want}")
    return noun + (" " + " and ".join(said) if said else "")


def masked(value: Any, name: str = "") -> Any:
    """``value`` (arguments) with secret values hidden: headers and fields named like
    credentials, and vault references."""
    if isinstance(value, Mapping):
        return {k: masked(v, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [masked(v, name) for v in value]
    if name and _SECRET_NAME.search(name) and value not in (None, ""):
        return MASK
    if isinstance(value, str) and _VAULT_REF.search(value):
        return _VAULT_REF.sub(MASK, value)
    return value


_HEADER_VALUE = re.compile(
    r"""(['"]?(?:authorization|proxy-authorization|cookie|x-api-key|api[_-]?key|token)['"]?"""
    r"""\s*[:=]\s*)(['"])(?:(?!\2).)*\2""",
    re.IGNORECASE,
)


def masked_text(text: str) -> str:
    """A line with credential header values and vault references hidden."""
    return _VAULT_REF.sub(MASK, _HEADER_VALUE.sub(lambda m: f"{m[1]}{m[2]}{MASK}{m[2]}", text))


def actor(who: str) -> str:
    """Who did it, in words: the agent, you, Steward (the id stays in a tooltip)."""
    kind = who.split(":", 1)[0]
    return {
        "agent": "the agent",
        "token": "you",
        "person": "you",
        "system": "Steward",
    }.get(kind, who)


TIMELINE_KINDS = {
    "activation": "worked",
    "result": "finished",
    "firing": "timer",
    "report": "told you",
}
"""What each kind of a goal's timeline entry is called (a kind not listed reads as itself)."""
_WOKE = re.compile(r"^woke for (?P<why>[\w ]+), (?P<steps>\d+) steps?: (?P<ended>.+)$")
_WHY = {
    "created": "when it was asked",
    "timer": "on its schedule",
    "timeout": "when its wait ran out",
    "approval": "after your answer",
    "input": "after your answer",
    "retry": "again after a problem",
    "event": "when something arrived",
}
"""Why an activation began, as "worked …" goes on (a reason not listed: "worked for …")."""
_ENDED = {"succeeded": "done", "running": "working"}


def timeline_kind(kind: str) -> str:
    return TIMELINE_KINDS.get(kind, kind.replace("_", " "))


def timeline_text(kind: str, summary: str, data: Mapping[str, Any], *, said_no: bool) -> str:
    """A goal's timeline entry in words: a result as the text it gave, an activation as when
    it worked and how it ended — "stopped: you said no" for a task whose action the person
    denied, never "succeeded"."""
    if kind == "result" and isinstance(data.get("text"), str):
        return cut(data["text"], 160)
    found = _WOKE.match(summary) if kind == "activation" else None
    if found is None:
        return summary
    ended = found["ended"]
    if said_no and ended == "succeeded":
        ended = STATUS_WORDS["said_no"]
    ended = _ENDED.get(ended, ended)
    why = _WHY.get(found["why"], f"for {found['why']}")
    return f"worked {why}: {ended}"
