"""Report placement: the goal's policy, the importance, quiet hours and the digest decide
where a report goes (properties over random settings and moments, and worked examples)."""

from __future__ import annotations

import functools
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from steward.domain.channel import Importance
from steward.domain.report import (
    AGENT_URGENT_PER_DAY,
    Decision,
    Placement,
    Reach,
    ReportOrigin,
    digest_id,
    in_quiet_hours,
    local_midnight,
    local_words,
    next_digest,
    place,
    quiet_ends,
    report_id,
)

ZONES = [ZoneInfo("UTC"), ZoneInfo("Europe/Paris"), ZoneInfo("America/New_York")]
IMPORTANCE: list[Importance] = ["info", "actionable", "urgent"]
# whole hours away from the small hours, where a DST change skips or repeats local times
SAFE = st.builds(time, st.sampled_from([0, *range(4, 24)]), st.sampled_from([0, 15, 30, 45]))


@st.composite
def reaches(draw: st.DrawFn) -> Reach:
    quiet = draw(st.booleans())
    return Reach(
        zone=draw(st.sampled_from(ZONES)),
        quiet_start=draw(SAFE) if quiet else None,
        quiet_end=draw(SAFE) if quiet else None,
        digest_at=draw(SAFE),
    )


moments = st.datetimes(
    min_value=datetime(2026, 1, 1), max_value=datetime(2027, 12, 31), timezones=st.just(UTC)
)
policies = st.sampled_from(["all", "actionable", "none", None])


@settings(max_examples=400)
@given(policy=policies, importance=st.sampled_from(IMPORTANCE), reach=reaches(), now=moments)
def test_the_runtimes_reports_follow_the_rules(
    policy: str | None, importance: Importance, reach: Reach, now: datetime
) -> None:
    decision = place(policy=policy, importance=importance, reach=reach, now=now)
    assert decision.importance == importance  # the runtime's word is kept
    if importance == "urgent":
        # urgent goes now, whatever the policy and the hour
        assert (decision.placement, decision.at) == (Placement.NOW, now)
        return
    if policy == "none":
        assert decision.placement == Placement.DROP
        return
    _follows_policy_and_quiet_hours(decision, policy, importance, reach, now)


@settings(max_examples=600)
@given(
    policy=policies,
    importance=st.sampled_from(IMPORTANCE),
    reach=reaches(),
    now=moments,
    urgent_today=st.integers(min_value=0, max_value=2 * AGENT_URGENT_PER_DAY),
)
def test_the_agents_reports_never_override_the_person(
    policy: str | None, importance: Importance, reach: Reach, now: datetime, urgent_today: int
) -> None:
    decision = place(
        policy=policy,
        importance=importance,
        reach=reach,
        now=now,
        origin="agent",
        urgent_today=urgent_today,
    )
    if policy == "none":
        # "none" means none: the agent cannot plead its way out
        assert decision.placement == Placement.DROP
        return
    if decision.importance == "urgent":
        # urgent only as the agent said, and only within the day's allowance
        assert importance == "urgent"
        assert urgent_today < AGENT_URGENT_PER_DAY
    elif importance == "urgent":
        assert urgent_today >= AGENT_URGENT_PER_DAY
        assert decision.importance == "actionable"
    else:
        assert decision.importance == importance
    if decision.placement == Placement.NOW and in_quiet_hours(reach, now):
        # only a goal set to tell everything may wake the person, and only by urgent
        assert policy == "all"
        assert decision.importance == "urgent"
        return
    if decision.importance == "urgent" and decision.placement == Placement.NOW:
        assert decision.at == now
        return
    _follows_policy_and_quiet_hours(decision, policy, decision.importance, reach, now)


def _follows_policy_and_quiet_hours(
    decision: Decision, policy: str | None, importance: Importance, reach: Reach, now: datetime
) -> None:
    if decision.placement == Placement.NOW:
        assert decision.at == now
        assert not in_quiet_hours(reach, now)
    if policy in ("actionable", None) and importance == "info":
        assert decision.placement == Placement.DIGEST
    else:
        assert decision.placement in (Placement.NOW, Placement.HOLD)
    if decision.placement == Placement.HOLD:
        assert in_quiet_hours(reach, now)
        assert now < decision.at <= now + timedelta(hours=25)
        assert not in_quiet_hours(reach, decision.at)
        # held exactly until quiet hours end: a minute earlier was still quiet
        assert in_quiet_hours(reach, decision.at - timedelta(minutes=1))
    if decision.placement == Placement.DIGEST:
        assert now < decision.at <= now + timedelta(hours=50)
        assert not in_quiet_hours(reach, decision.at)
        local = decision.at.astimezone(reach.zone).time()
        assert local == reach.digest_at or reach.quiet_end in (local, None)


@given(
    origin=st.sampled_from(["agent", "runtime"]),
    policy=policies,
    reach=reaches(),
    now=moments,
    before=st.integers(min_value=0, max_value=AGENT_URGENT_PER_DAY),
)
def test_more_urgency_already_spent_never_makes_a_report_louder(
    origin: ReportOrigin, policy: str | None, reach: Reach, now: datetime, before: int
) -> None:
    """Monotone: a report placed after more urgent ones goes no sooner and no louder."""
    first, later = (
        place(
            policy=policy,
            importance="urgent",
            reach=reach,
            now=now,
            origin=origin,
            urgent_today=n,
        )
        for n in (before, before + 1)
    )
    assert later.at >= first.at
    assert not (later.importance == "urgent" and first.importance != "urgent")


@given(reach=reaches(), now=moments)
def test_the_day_starts_at_local_midnight(reach: Reach, now: datetime) -> None:
    start = local_midnight(reach, now)
    assert start <= now < start + timedelta(hours=25)
    assert start.astimezone(reach.zone).date() == now.astimezone(reach.zone).date()


@given(reach=reaches(), now=moments)
def test_the_digest_is_the_next_digest_time_not_a_later_one(reach: Reach, now: datetime) -> None:
    at = next_digest(reach, now)
    plain = Reach(zone=reach.zone, digest_at=reach.digest_at)
    first = next_digest(plain, now)
    assert now < first <= now + timedelta(hours=25)
    assert first.astimezone(reach.zone).time() == reach.digest_at
    assert at == quiet_ends(reach, first)


PARIS = ZoneInfo("Europe/Paris")
NIGHT = Reach(zone=PARIS, quiet_start=time(22), quiet_end=time(7), digest_at=time(18))


def _paris(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 12, day, hour, minute, tzinfo=PARIS)


def test_worked_examples_in_the_persons_zone() -> None:
    # 23:30 in Paris, quiet until 07:00: an actionable report of an `all` goal waits
    held = place(policy="all", importance="actionable", reach=NIGHT, now=_paris(4, 23, 30))
    assert (held.placement, held.at) == (Placement.HOLD, _paris(5, 7))
    # information of an `actionable` goal at 09:00 goes in the 18:00 digest
    digest = place(policy="actionable", importance="info", reach=NIGHT, now=_paris(4, 9))
    assert (digest.placement, digest.at) == (Placement.DIGEST, _paris(4, 18))
    # ...and after 18:00, in tomorrow's
    late = place(policy=None, importance="info", reach=NIGHT, now=_paris(4, 18, 1))
    assert late.at == _paris(5, 18)
    # a digest time inside quiet hours goes when they end
    owl = Reach(zone=PARIS, quiet_start=time(22), quiet_end=time(7), digest_at=time(23))
    assert next_digest(owl, _paris(4, 12)) == _paris(5, 7)
    # the runtime's urgent at 03:00 goes at once
    urgent = place(policy="none", importance="urgent", reach=NIGHT, now=_paris(5, 3))
    assert urgent.placement == Placement.NOW
    # the agent's waits for 07:00 unless the goal tells everything, three times a day
    agent = functools.partial(place, importance="urgent", reach=NIGHT, now=_paris(5, 3))
    assert agent(policy="actionable", origin="agent").at == _paris(5, 7)
    assert agent(policy="all", origin="agent", urgent_today=2).placement == Placement.NOW
    fourth = agent(policy="all", origin="agent", urgent_today=3)
    assert (fourth.at, fourth.importance) == (_paris(5, 7), "actionable")
    assert agent(policy="none", origin="agent").placement == Placement.DROP
    assert local_words(_paris(5, 9, 30), PARIS) == "Saturday 5 December at 09:30"


def test_ids_follow_their_cause() -> None:
    assert report_id("goal-expired:gol_1") == report_id("goal-expired:gol_1")
    assert report_id("goal-expired:gol_1") != report_id("goal-expired:gol_2")
    day = _paris(4, 9).date()
    assert digest_id("per_1", day, ["r1", "r2"]) == digest_id("per_1", day, ["r2", "r1"])
    assert digest_id("per_1", day, ["r1"]) != digest_id("per_1", day + timedelta(days=1), ["r1"])
    assert digest_id("per_1", day, ["r1"]) != digest_id("per_1", day, ["r2"])
