"""Reports: what Steward tells the person, and when it reaches them.

A report comes from the agent (the ``report`` control tool) or from the runtime itself (a goal
finished, expired or was cancelled; a task failed; a budget stopped work; an effect is in
doubt). Every report stays on the dashboard; whether and when it also goes out through the
person's channels is decided by :func:`place`, a pure function of who made the report, the
goal's report policy, the report's importance, the person's quiet hours and digest time, and
``now``.

**The runtime's reports** are facts Steward itself vouches for:

- ``urgent`` (an effect in doubt, money at stake) always goes at once, whatever the policy and
  even in quiet hours: silence there would be worse than noise.
- ``none``: nothing else goes out; the report waits on the dashboard.
- ``actionable`` (also work without a goal): actionable reports go at once, information waits
  for the next daily digest.
- ``all``: every report goes at once.
- Quiet hours hold everything that would go at once, except urgent, until they end; a digest
  that falls in quiet hours goes when they end.

**The agent's reports** are the agent's words, and what it read (a page, a mail) can steer
them: a stranger's mail must not be able to wake the person at 3 am, nor mark everything
urgent. So the person's settings bind the agent where they do not bind the runtime:

- ``none`` means none: an agent report never goes out, whatever it calls itself.
- ``urgent`` goes out as urgent at most :data:`AGENT_URGENT_PER_DAY` times per goal (for work
  without a goal, per person) and local day; past that it is ``actionable``: it still goes out
  under ``all`` and ``actionable``, without the urgent mark (no high-priority push).
- In quiet hours an agent's urgent report is held until they end, like an actionable one,
  unless the goal's policy is ``all``: a person who asked to hear everything a goal finds has
  said that goal may reach them any time (a flight watch, a parcel at the door), and even then
  at most :data:`AGENT_URGENT_PER_DAY` times a day. Under the default ``actionable`` the agent
  never wakes the person: what it found waits for the end of quiet hours.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from enum import StrEnum
from typing import Literal
from zoneinfo import ZoneInfo

from steward.domain.channel import Importance

ReportPolicy = Literal["all", "actionable", "none"]
REPORT_POLICIES: tuple[ReportPolicy, ...] = ("all", "actionable", "none")
DEFAULT_POLICY: ReportPolicy = "actionable"
"""The policy of work that belongs to no goal."""

ReportOrigin = Literal["agent", "runtime"]

AGENT_URGENT_PER_DAY = 3
"""Most agent reports that go out as urgent, per goal and local day (see the rules above)."""


class ReportState(StrEnum):
    """Where a report stands on its way to the person."""

    PENDING = "pending"
    """Going out now (its deliveries are planned)."""
    HELD = "held"
    """Held until quiet hours end (its deliveries are planned for then)."""
    DIGEST = "digest"
    """Waiting for the next daily digest."""
    DIGESTED = "digested"
    """Put into a digest (the digest's deliveries are planned)."""
    DELIVERED = "delivered"
    """A channel took it."""
    DROPPED = "dropped"
    """Not sent by policy (or the person has no channel): on the dashboard only."""


class Placement(StrEnum):
    """What :func:`place` decided."""

    NOW = "now"
    HOLD = "hold"
    DIGEST = "digest"
    DROP = "drop"


@dataclass(kw_only=True, frozen=True)
class Report:
    """One thing Steward tells the person."""

    id: str
    """Stable id, ``rep_…``; derived from its cause when a replay could repeat it."""
    person_id: str
    """Whom it is for."""
    goal_id: str | None = None
    """The goal it is about (None: work without a goal)."""
    task_id: str | None = None
    """The task that made it or that it is about."""
    origin: ReportOrigin
    """The agent (the ``report`` tool) or the runtime."""
    what: str
    """What happened, in plain words."""
    why: str = ""
    """Why it matters to the person."""
    todo: str | None = None
    """What the person should do, if anything."""
    importance: Importance = "info"
    """How much it needs the person."""
    created_at: datetime
    """When it was made."""
    state: ReportState = ReportState.PENDING
    """Where it stands on its way to the person."""
    hold_until: datetime | None = None
    """Held: when quiet hours end; in the digest: when the digest goes."""
    read_at: datetime | None = None
    """When the person marked it read (None: unread)."""


@dataclass(kw_only=True, frozen=True)
class Reach:
    """When a person may be reached: their zone, quiet hours and digest time."""

    zone: ZoneInfo
    """The person's time zone."""
    quiet_start: time | None = None
    """Local start of quiet hours (None: no quiet hours)."""
    quiet_end: time | None = None
    """Local end of quiet hours; before ``quiet_start`` when they wrap midnight."""
    digest_at: time = time(18, 0)
    """Local time of the daily digest."""


@dataclass(kw_only=True, frozen=True)
class Decision:
    """Where a report goes, and from when."""

    placement: Placement
    """Now, held, into the digest, or the dashboard only."""
    at: datetime
    """When it goes out (``now`` for NOW and DROP)."""
    importance: Importance
    """The importance it goes out with: an agent's urgent report past the day's allowance is
    ``actionable``."""


def report_id(cause: str) -> str:
    """A report's id derived from its cause (``"goal-expired:gol_…"``, a step's key): the same
    cause reported twice is one report."""
    return "rep_" + hashlib.sha256(cause.encode()).hexdigest()[:26]


def digest_id(person_id: str, day: date, report_ids: Iterable[str]) -> str:
    """The id of a person's digest of one local day holding ``report_ids``: the same reports
    gathered again are the same digest, and a report recorded too late for a digest already
    gathered makes another one rather than being folded into one already sent."""
    cause = f"{person_id}:{day.isoformat()}:{','.join(sorted(report_ids))}"
    return "dig_" + hashlib.sha256(cause.encode()).hexdigest()[:26]


def in_quiet_hours(reach: Reach, moment: datetime) -> bool:
    """Whether ``moment`` (aware) falls in the person's quiet hours."""
    start, end = reach.quiet_start, reach.quiet_end
    if start is None or end is None or start == end:
        return False
    local = moment.astimezone(reach.zone).time().replace(tzinfo=None)
    if start < end:
        return start <= local < end
    return local >= start or local < end


def quiet_ends(reach: Reach, moment: datetime) -> datetime:
    """The first moment at or after ``moment`` outside quiet hours."""
    if not in_quiet_hours(reach, moment):
        return moment
    assert reach.quiet_end is not None
    day = moment.astimezone(reach.zone).date()
    for offset in range(3):
        candidate = _at(reach, day + timedelta(days=offset), reach.quiet_end)
        if candidate > moment and not in_quiet_hours(reach, candidate):
            return candidate
    return moment + timedelta(days=1)  # not reached: quiet hours are shorter than a day


def next_digest(reach: Reach, moment: datetime) -> datetime:
    """When the next digest goes: the first digest time after ``moment``, moved to the end of
    quiet hours when it falls inside them."""
    day = moment.astimezone(reach.zone).date()
    for offset in range(3):
        candidate = _at(reach, day + timedelta(days=offset), reach.digest_at)
        if candidate > moment:
            return quiet_ends(reach, candidate)
    return quiet_ends(reach, moment + timedelta(days=1))  # not reached


def place(
    *,
    policy: str | None,
    importance: Importance,
    reach: Reach,
    now: datetime,
    origin: ReportOrigin = "runtime",
    urgent_today: int = 0,
) -> Decision:
    """Decide where a report goes (see the module's rules). ``policy`` None: no goal;
    ``urgent_today``: the agent's reports of the same goal that went out as urgent since the
    person's local midnight (:func:`local_midnight`)."""
    chosen = policy if policy in REPORT_POLICIES else DEFAULT_POLICY
    if origin == "agent":
        if chosen == "none":
            return Decision(placement=Placement.DROP, at=now, importance=importance)
        if importance == "urgent" and urgent_today >= AGENT_URGENT_PER_DAY:
            importance = "actionable"
        if importance == "urgent" and chosen != "all" and in_quiet_hours(reach, now):
            return Decision(
                placement=Placement.HOLD, at=quiet_ends(reach, now), importance=importance
            )
    if importance == "urgent":
        return Decision(placement=Placement.NOW, at=now, importance=importance)
    if chosen == "none":
        return Decision(placement=Placement.DROP, at=now, importance=importance)
    if chosen == "actionable" and importance == "info":
        return Decision(
            placement=Placement.DIGEST, at=next_digest(reach, now), importance=importance
        )
    if in_quiet_hours(reach, now):
        return Decision(placement=Placement.HOLD, at=quiet_ends(reach, now), importance=importance)
    return Decision(placement=Placement.NOW, at=now, importance=importance)


def local_midnight(reach: Reach, moment: datetime) -> datetime:
    """The start of ``moment``'s local day (the day :data:`AGENT_URGENT_PER_DAY` counts)."""
    return _at(reach, moment.astimezone(reach.zone).date(), time(0, 0))


def _at(reach: Reach, day: date, clock: time) -> datetime:
    """``clock`` on local ``day`` as an aware datetime (a time skipped by a DST change lands
    just after the change)."""
    return datetime.combine(day, clock, tzinfo=reach.zone)


def local_words(moment: datetime, zone: ZoneInfo) -> str:
    """A moment as a person reads it: "Friday 5 December at 09:30"."""
    local = moment.astimezone(zone)
    return f"{local:%A} {local.day} {local:%B} at {local:%H:%M}"


def local_day_words(moment: datetime, zone: ZoneInfo) -> str:
    """A day as a person reads it: "Friday 5 December"."""
    local = moment.astimezone(zone)
    return f"{local:%A} {local.day} {local:%B}"
