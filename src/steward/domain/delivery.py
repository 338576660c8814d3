"""Deliveries: one message to one channel, and the words a report or a digest becomes.

A delivery is planned in the same transaction as what it carries (a report, a digest, an
approval, a question), then claimed by the dispatcher under a lease. It is marked ``sent``
durably immediately before the channel is called, so a delivery found ``sent`` after its
dispatcher died may have reached the person: it becomes ``in_doubt`` and is never sent again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from zoneinfo import ZoneInfo

from steward.domain.channel import Importance, MessageKind
from steward.domain.report import Report, local_day_words

MAX_ATTEMPTS = 5
"""Tries of a channel that is unavailable before the delivery fails."""
TITLE_CHARS = 90
"""A title readable on a lock screen."""


class DeliveryStatus(StrEnum):
    PLANNED = "planned"
    """Waiting to be sent (at ``next_attempt_at``)."""
    SENT = "sent"
    """Handed to the channel; its answer not recorded yet."""
    DELIVERED = "delivered"
    """The channel took it."""
    FAILED = "failed"
    """Refused, or unavailable too many times."""
    IN_DOUBT = "in_doubt"
    """The dispatcher died while the channel was called: it may have arrived; not sent again."""
    WITHDRAWN = "withdrawn"
    """Not sent: the approval was decided, or the asking task ended, before it went out."""


@dataclass(kw_only=True, frozen=True)
class Message:
    """What a delivery shows the person (an OutboundMessage without its key and recipient)."""

    kind: MessageKind
    """Report, digest, approval, question or notice."""
    title: str
    """One line."""
    body: str
    """A few lines."""
    importance: Importance = "info"
    """How much it needs the person."""
    link: str | None = None
    """Dashboard path with the details."""
    ref: str | None = None
    """What it is about."""
    goal_id: str | None = None
    """The goal concerned."""


@dataclass(kw_only=True, frozen=True)
class Delivery:
    """One message to one channel."""

    id: str
    """Stable id, ``dlv_…``."""
    person_id: str
    """Recipient."""
    channel_id: str
    """Through which channel."""
    ref: str
    """The report, digest, approval or question it carries."""
    key: str
    """Idempotency key: one delivery per message and channel, ever."""
    message: Message
    """What is shown."""
    status: DeliveryStatus
    """Where it stands."""
    attempts: int
    """Times it was claimed to be sent."""
    next_attempt_at: datetime
    """When it is due (held reports: when quiet hours end; retries: after the backoff)."""
    error: str | None
    """Why the last try failed, in words."""
    created_at: datetime
    """When it was planned."""
    updated_at: datetime
    """Its last change."""


def shorten(text: str, limit: int = TITLE_CHARS) -> str:
    """``text`` on one line, cut at a word boundary with an ellipsis when too long."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    cut = line[: limit - 1].rsplit(" ", 1)[0] or line[: limit - 1]
    return cut.rstrip(",.;:") + "…"


def report_message(report: Report, *, goal_title: str | None) -> Message:
    """A report as the person reads it on a phone."""
    title = shorten(report.what)
    lines = [report.why] if report.why else []
    if report.todo:
        lines.append(f"What to do: {report.todo}")
    if goal_title:
        lines.append(f"Goal: {goal_title}")
    return Message(
        kind="report",
        title=title,
        body="\n".join(lines) or report.what,
        importance=report.importance,
        link=f"/goals/{report.goal_id}" if report.goal_id else "/",
        ref=report.id,
        goal_id=report.goal_id,
    )


def digest_message(
    *,
    digest: str,
    reports: Sequence[Report],
    goal_titles: dict[str, str],
    zone: ZoneInfo,
    at: datetime,
) -> Message:
    """One day's information reports in one message, grouped by goal (oldest first)."""
    groups: dict[str, list[Report]] = {}
    for report in sorted(reports, key=lambda r: (r.created_at, r.id)):
        name = goal_titles.get(report.goal_id or "", "Other work")
        groups.setdefault(name, []).append(report)
    lines: list[str] = []
    for name, items in groups.items():
        lines.append(f"{name}:")
        lines.extend(f"- {shorten(r.what, 160)}" for r in items)
    count = len(reports)
    things = "update" if count == 1 else "updates"
    return Message(
        kind="digest",
        title=f"Your digest for {local_day_words(at, zone)}: {count} {things}",
        body="\n".join(lines),
        importance="info",
        link="/",
        ref=digest,
    )
