"""Schedule arithmetic: cron in a time zone across DST, intervals, one-shot times, and what the
missed-run policies do with the times that fell inside downtime."""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from steward.domain import FiringStatus, MissedPolicy, TaskSpec, Trigger, TriggerKind
from steward.errors import ConfigError
from steward.runtime.schedule import (
    MAX_RECORDED_MISSES,
    first_fire,
    next_after,
    parse_at,
    plan_firings,
    validate_spec,
)

BERLIN = ZoneInfo("Europe/Berlin")
DAILY_NINE = "0 9 * * *"


def trigger(
    kind: TriggerKind,
    spec: str,
    *,
    next_fire_at: datetime | None,
    timezone: str = "UTC",
    policy: MissedPolicy = MissedPolicy.RUN_ONCE,
    cap: int = 10,
    grace: float = 60.0,
) -> Trigger:
    return Trigger(
        id="trg_test",
        person_id="per_test",
        goal_id=None,
        name="t",
        kind=kind,
        spec=spec,
        timezone=timezone,
        task=TaskSpec(kind="noop"),
        missed_policy=policy,
        missed_cap=cap,
        grace_seconds=grace,
        next_fire_at=next_fire_at,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )


def cron_times(spec: str, zone: str, after: datetime, n: int) -> list[datetime]:
    times = []
    when = after
    for _ in range(n):
        nxt = next_after(TriggerKind.CRON, spec, zone, when)
        assert nxt is not None
        times.append(nxt)
        when = nxt
    return times


# --- cron and DST ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first_day", "change_day", "utc_before", "utc_after", "gap_hours"),
    [
        (datetime(2026, 3, 25, 12, tzinfo=UTC), date(2026, 3, 29), 8, 7, 23),  # CET → CEST
        (datetime(2026, 10, 21, 12, tzinfo=UTC), date(2026, 10, 25), 7, 8, 25),  # CEST → CET
    ],
    ids=["spring-forward", "fall-back"],
)
def test_daily_cron_fires_at_nine_local_across_dst(
    first_day: datetime, change_day: date, utc_before: int, utc_after: int, gap_hours: int
) -> None:
    """'0 9 * * *' in Europe/Berlin fires at 09:00 local every day of a DST week: the UTC hour
    moves by one on the change day, and that day's gap is 23 h in spring and 25 h in autumn."""
    times = cron_times(DAILY_NINE, "Europe/Berlin", first_day, 7)
    for when in times:
        assert when.tzinfo is not None
        assert when.utcoffset() == timedelta(0)  # stored as UTC
        local = when.astimezone(BERLIN)
        assert (local.hour, local.minute, local.second) == (9, 0, 0)
        assert when.hour == (utc_before if local.date() < change_day else utc_after)
    days = [t.astimezone(BERLIN).date() for t in times]
    assert days == [first_day.date() + timedelta(days=i + 1) for i in range(7)]
    gaps = [(b - a) / timedelta(hours=1) for a, b in itertools.pairwise(times)]
    change_index = days.index(change_day) - 1
    assert gaps[change_index] == gap_hours
    assert all(g == 24 for i, g in enumerate(gaps) if i != change_index)


def test_cron_in_the_skipped_hour_fires_once_right_after_the_jump() -> None:
    """A job at 02:30 local on the spring-forward night (02:00 to 03:00 does not exist) runs once,
    at 03:00 CEST, and is back at 02:30 the next day — it is neither lost nor doubled."""
    times = cron_times("30 2 * * *", "Europe/Berlin", datetime(2026, 3, 28, 12, tzinfo=UTC), 3)
    local = [t.astimezone(BERLIN) for t in times]
    assert [(t.day, t.hour, t.minute) for t in local] == [(29, 3, 0), (30, 2, 30), (31, 2, 30)]


def test_cron_in_the_repeated_hour_fires_once() -> None:
    """A job at 02:30 local on the fall-back night (02:00 to 03:00 happens twice) runs once."""
    times = cron_times("30 2 * * *", "Europe/Berlin", datetime(2026, 10, 24, 12, tzinfo=UTC), 3)
    assert [t.astimezone(BERLIN).day for t in times] == [25, 26, 27]
    assert times[0] == datetime(2026, 10, 25, 0, 30, tzinfo=UTC)  # the first 02:30 (CEST)


def test_next_after_is_strictly_after() -> None:
    """A time exactly on the schedule is not its own successor (no double fire)."""
    nine = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)  # 09:00 in Berlin
    assert next_after(TriggerKind.CRON, DAILY_NINE, "Europe/Berlin", nine) == nine + timedelta(
        days=1
    )
    assert (
        next_after(TriggerKind.CRON, DAILY_NINE, "Europe/Berlin", nine - timedelta(microseconds=1))
        == nine
    )


# --- interval and at ------------------------------------------------------------------------


def test_interval_trigger_schedule_and_late_firings() -> None:
    """An interval trigger fires every N seconds from its last scheduled time (not from when
    it was handled), so lateness does not drift it; times older than the grace period are
    missed, and with an on-time firing present run_once fires nothing extra."""
    start = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
    assert next_after(TriggerKind.INTERVAL, "90", "UTC", start) == start + timedelta(seconds=90)
    assert first_fire(TriggerKind.INTERVAL, "3600", "UTC", start) == start + timedelta(hours=1)
    trg = trigger(TriggerKind.INTERVAL, "100", next_fire_at=start, grace=60)
    plan = plan_firings(trg, start + timedelta(seconds=250))
    assert plan.firings == [
        (start, FiringStatus.MISSED),
        (start + timedelta(seconds=100), FiringStatus.MISSED),
        (start + timedelta(seconds=200), FiringStatus.FIRED),
    ]
    assert plan.next_fire_at == start + timedelta(seconds=300)


def test_at_trigger_fires_once_even_if_late() -> None:
    """An 'at' trigger's first fire is its time even when that is already past (it then fires
    late under its missed policy); after firing it never fires again."""
    when = datetime(2026, 2, 1, 12, 0, tzinfo=UTC)
    spec = "2026-02-01T13:00:00+01:00"
    assert parse_at(spec) == when
    later = when + timedelta(days=3)
    assert first_fire(TriggerKind.AT, spec, "UTC", later) == when
    assert next_after(TriggerKind.AT, spec, "UTC", when - timedelta(seconds=1)) == when
    assert next_after(TriggerKind.AT, spec, "UTC", when) is None
    on_time = plan_firings(trigger(TriggerKind.AT, spec, next_fire_at=when), when)
    assert on_time.firings == [(when, FiringStatus.FIRED)]
    assert on_time.next_fire_at is None
    late_once = plan_firings(trigger(TriggerKind.AT, spec, next_fire_at=when), later)
    assert late_once.firings == [(when, FiringStatus.FIRED)]
    skipped = plan_firings(
        trigger(TriggerKind.AT, spec, next_fire_at=when, policy=MissedPolicy.SKIP), later
    )
    assert skipped.firings == [(when, FiringStatus.MISSED)]
    assert skipped.next_fire_at is None
    assert plan_firings(trigger(TriggerKind.AT, spec, next_fire_at=None), later).firings == []


def test_not_yet_due_plans_nothing() -> None:
    """Before next_fire_at nothing fires and the schedule stays where it was."""
    nine = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
    trg = trigger(TriggerKind.CRON, DAILY_NINE, next_fire_at=nine, timezone="Europe/Berlin")
    plan = plan_firings(trg, nine - timedelta(seconds=1))
    assert plan.firings == []
    assert plan.next_fire_at == nine


def test_a_very_long_outage_is_bounded() -> None:
    """After an outage with more missed times than MAX_RECORDED_MISSES, at most that many are
    recorded and the schedule resumes after now."""
    start = datetime(2026, 1, 5, tzinfo=UTC)
    trg = trigger(TriggerKind.INTERVAL, "60", next_fire_at=start, policy=MissedPolicy.SKIP)
    now = start + timedelta(days=30)
    plan = plan_firings(trg, now)
    assert len(plan.firings) == MAX_RECORDED_MISSES
    assert all(status is FiringStatus.MISSED for _, status in plan.firings)
    assert plan.next_fire_at is not None
    assert plan.next_fire_at > now


# --- the missed-run policies, as properties -------------------------------------------------

CRON_SPECS = ["0 9 * * *", "*/15 * * * *", "30 2 * * *", "0 0 * * 1", "5 4 1 * *"]
ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe"]


@st.composite
def schedules(draw: st.DrawFn) -> tuple[TriggerKind, str, str]:
    if draw(st.booleans()):
        return TriggerKind.CRON, draw(st.sampled_from(CRON_SPECS)), draw(st.sampled_from(ZONES))
    seconds = draw(st.sampled_from(["60", "90.5", "3600", "86400"]))
    return TriggerKind.INTERVAL, seconds, "UTC"


@settings(max_examples=300, deadline=None)
@given(
    schedule=schedules(),
    base=st.datetimes(
        min_value=datetime(2026, 1, 1), max_value=datetime(2027, 12, 31), timezones=st.just(UTC)
    ),
    outage=st.one_of(
        st.floats(-7200, 7200),  # around the first due time
        st.floats(0, 40 * 86400),  # up to weeks of downtime
    ),
    grace=st.sampled_from([0.0, 1.0, 60.0, 3600.0]),
    policy=st.sampled_from(list(MissedPolicy)),
    cap=st.integers(0, 5),
)
def test_plan_firings_properties(
    schedule: tuple[TriggerKind, str, str],
    base: datetime,
    outage: float,
    grace: float,
    policy: MissedPolicy,
    cap: int,
) -> None:
    """For any schedule, downtime, grace and policy: every due time from next_fire_at up to now
    is handled exactly once and in order (fired or recorded missed) — none in the future, none
    before its time; times within the grace period fire; the policy decides the others exactly
    (skip: none, run_once: the latest and only when nothing is on time, run_all: the latest
    ``cap``); and the new next_fire_at is the schedule's next time after now."""
    kind, spec, zone = schedule
    first = next_after(kind, spec, zone, base)
    assert first is not None
    now = first + timedelta(seconds=outage)
    trg = trigger(
        kind, spec, next_fire_at=first, timezone=zone, policy=policy, cap=cap, grace=grace
    )
    plan = plan_firings(trg, now)
    times = [t for t, _ in plan.firings]

    # the same times the schedule itself produces, from next_fire_at on, up to now
    expected: list[datetime] = []
    when: datetime | None = first
    while when is not None and when <= now and len(expected) < MAX_RECORDED_MISSES:
        expected.append(when)
        when = next_after(kind, spec, zone, when)
    assert times == expected
    assert all(first <= t <= now for t in times)  # never early, never in the future
    assert plan.next_fire_at is not None
    assert plan.next_fire_at > now
    if len(expected) < MAX_RECORDED_MISSES:
        assert plan.next_fire_at == when  # the schedule continues where it was

    fired = [t for t, status in plan.firings if status is FiringStatus.FIRED]
    on_time = [t for t in times if (now - t).total_seconds() <= grace]
    missed = [t for t in times if (now - t).total_seconds() > grace]
    if policy is MissedPolicy.SKIP:
        catch_up: list[datetime] = []
    elif policy is MissedPolicy.RUN_ONCE:
        catch_up = missed[-1:] if not on_time else []
    else:
        catch_up = missed[max(0, len(missed) - cap) :]
    assert fired == catch_up + on_time
    assert len(plan.firings) == len(set(times))  # each time once


def test_run_policies_on_a_two_day_outage() -> None:
    """A daily 09:00 Berlin trigger down from Friday noon to Monday noon: skip records the three
    mornings missed and fires none; run_once fires Monday's once; run_all with cap 2 fires the
    latest two and records the first missed."""
    friday_nine = datetime(2026, 1, 9, 8, 0, tzinfo=UTC)
    saturday_nine = friday_nine + timedelta(days=1)
    monday_noon = friday_nine + timedelta(days=3, hours=3)
    mornings = [saturday_nine + timedelta(days=i) for i in range(3)]

    def plan(policy: MissedPolicy, cap: int = 10) -> list[tuple[datetime, FiringStatus]]:
        trg = trigger(
            TriggerKind.CRON,
            DAILY_NINE,
            next_fire_at=saturday_nine,
            timezone="Europe/Berlin",
            policy=policy,
            cap=cap,
        )
        result = plan_firings(trg, monday_noon)
        assert result.next_fire_at == mornings[-1] + timedelta(days=1)
        return result.firings

    fired, missed = FiringStatus.FIRED, FiringStatus.MISSED
    assert plan(MissedPolicy.SKIP) == [(t, missed) for t in mornings]
    assert plan(MissedPolicy.RUN_ONCE) == [
        (mornings[0], missed),
        (mornings[1], missed),
        (mornings[2], fired),
    ]
    assert plan(MissedPolicy.RUN_ALL, cap=2) == [
        (mornings[0], missed),
        (mornings[1], fired),
        (mornings[2], fired),
    ]
    assert plan(MissedPolicy.RUN_ALL, cap=0) == [(t, missed) for t in mornings]


# --- validation -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "spec", "zone", "message"),
    [
        (TriggerKind.CRON, "61 * * * *", "UTC", "bad cron expression"),
        (TriggerKind.CRON, "0 9 * *", "UTC", "bad cron expression"),
        (TriggerKind.CRON, "every morning", "UTC", "bad cron expression"),
        (TriggerKind.CRON, DAILY_NINE, "Mars/Olympus_Mons", "unknown time zone"),
        (TriggerKind.CRON, DAILY_NINE, "", "unknown time zone"),
        (TriggerKind.INTERVAL, "0", "UTC", "must be positive"),
        (TriggerKind.INTERVAL, "-60", "UTC", "must be positive"),
        (TriggerKind.INTERVAL, "hourly", "UTC", "number of seconds"),
        (TriggerKind.AT, "2026-03-01T09:00:00", "UTC", "needs a UTC offset"),
        (TriggerKind.AT, "next tuesday", "UTC", "ISO-8601"),
        (TriggerKind.EVENT, "", "UTC", "event type"),
    ],
)
def test_validate_spec_rejects(kind: TriggerKind, spec: str, zone: str, message: str) -> None:
    """A spec that cannot be scheduled is a ConfigError whose message says what is wrong."""
    with pytest.raises(ConfigError, match=message):
        validate_spec(kind, spec, zone)


@pytest.mark.parametrize(
    ("kind", "spec", "zone"),
    [
        (TriggerKind.CRON, DAILY_NINE, "Europe/Berlin"),
        (TriggerKind.CRON, "*/5 * * * 1-5", "America/New_York"),
        (TriggerKind.INTERVAL, "0.5", "UTC"),
        (TriggerKind.AT, "2026-03-01T09:00:00+01:00", "UTC"),
        (TriggerKind.AT, "2026-03-01T08:00:00Z", "UTC"),
        (TriggerKind.EVENT, "email.received", "UTC"),
    ],
)
def test_validate_spec_accepts(kind: TriggerKind, spec: str, zone: str) -> None:
    """Valid specs pass validation and yield a first fire time (event triggers have none)."""
    validate_spec(kind, spec, zone)
    now = datetime(2026, 1, 5, tzinfo=UTC)
    first = first_fire(kind, spec, zone, now)
    assert (first is None) is (kind is TriggerKind.EVENT)
