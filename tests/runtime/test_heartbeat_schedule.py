"""Heartbeat schedule arithmetic: active hours in local time across DST, days that wrap the
week, where a trigger goes back on its schedule after a budget pause, and parsing 'every'."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from steward.domain import TaskSpec, Trigger, TriggerKind
from steward.domain.trigger import ActiveHours, TriggerBudget, TriggerSpend, local_day
from steward.errors import ConfigError
from steward.runtime.schedule import next_after, parse_every, resume_time

BERLIN = ZoneInfo("Europe/Berlin")
DAYTIME = ActiveHours.parse("08:00-20:00")


def test_the_first_beat_after_a_dst_night_is_eight_local() -> None:
    """Europe/Berlin moves to summer time in the night to Sunday 29 March 2026: the evening's
    last beat is 19:50 CET (18:50 UTC), the morning's first 08:00 CEST (06:00 UTC)."""
    last = datetime(2026, 3, 28, 19, 50, tzinfo=BERLIN)
    nxt = next_after(TriggerKind.HEARTBEAT, "600", "Europe/Berlin", last, DAYTIME)
    assert nxt == datetime(2026, 3, 29, 6, 0, tzinfo=UTC)
    assert nxt is not None
    assert nxt.astimezone(BERLIN).hour == 8
    autumn = datetime(2026, 10, 24, 19, 50, tzinfo=BERLIN)
    after_autumn = next_after(TriggerKind.HEARTBEAT, "600", "Europe/Berlin", autumn, DAYTIME)
    assert after_autumn == datetime(2026, 10, 25, 7, 0, tzinfo=UTC)  # 08:00 CET


def test_inside_the_window_beats_keep_their_interval() -> None:
    when = datetime(2026, 1, 5, 10, 0, tzinfo=BERLIN)
    nxt = next_after(TriggerKind.HEARTBEAT, "600", "Europe/Berlin", when, DAYTIME)
    assert nxt == datetime(2026, 1, 5, 10, 10, tzinfo=BERLIN)


def test_weekdays_and_a_weekend_wrapping_the_week() -> None:
    workdays = ActiveHours.parse("08:00-20:00", "mon-fri")
    friday_evening = datetime(2026, 1, 9, 19, 55, tzinfo=BERLIN)
    monday = next_after(TriggerKind.HEARTBEAT, "600", "Europe/Berlin", friday_evening, workdays)
    assert monday == datetime(2026, 1, 12, 8, 0, tzinfo=BERLIN)
    assert ActiveHours.parse("09:00-12:00", "fri-mon").days == (0, 4, 5, 6)
    assert (
        ActiveHours.parse("09:00-12:00", "fri-mon").describe() == "09:00-12:00 Mon, Fri, Sat, Sun"
    )
    assert workdays.describe() == "08:00-20:00 Mon-Fri"


@pytest.mark.parametrize(
    ("hours", "days"),
    [("20:00-08:00", None), ("8-20", None), ("08:00-24:00", None), ("08:00-20:00", "weekdays")],
)
def test_bad_active_hours_say_why(hours: str, days: str | None) -> None:
    with pytest.raises(ValueError, match=r"active hours|time of day|days look like"):
        ActiveHours.parse(hours, days)


def test_every_takes_units() -> None:
    assert [parse_every(t) for t in ("10m", "1h", "90s", "1d", "600", "1.5")] == [
        "600",
        "3600",
        "90",
        "86400",
        "600",
        "1.5",
    ]
    for bad in ("", "m", "-5m", "0", "ten minutes"):
        with pytest.raises(ConfigError):
            parse_every(bad)


@pytest.mark.parametrize("huge", ["inf", "1e15", "367d", "nan"])
def test_an_every_too_long_to_count_is_refused_in_plain_words(huge: str) -> None:
    with pytest.raises(ConfigError, match=r"at most 366 days|positive"):
        parse_every(huge)
    assert parse_every("366d") == str(366 * 86400)


def _trigger(kind: TriggerKind, spec: str, paused_until: datetime) -> Trigger:
    return Trigger(
        id="trg_t",
        person_id="per_t",
        goal_id="gol_t",
        name="t",
        kind=kind,
        spec=spec,
        timezone="Europe/Berlin",
        task=TaskSpec(kind="noop"),
        next_fire_at=paused_until,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        paused_until=paused_until,
    )


def test_after_a_pause_a_trigger_goes_back_on_its_own_schedule() -> None:
    midnight = datetime(2026, 1, 6, 0, 0, tzinfo=BERLIN)
    cron = _trigger(TriggerKind.CRON, "0 9 * * *", midnight)
    assert resume_time(cron, midnight) == datetime(2026, 1, 6, 9, 0, tzinfo=BERLIN)
    assert resume_time(_trigger(TriggerKind.INTERVAL, "60", midnight), midnight) == midnight
    beat = replace(_trigger(TriggerKind.HEARTBEAT, "600", midnight), active_hours=DAYTIME)
    assert resume_time(beat, midnight) == datetime(2026, 1, 6, 8, 0, tzinfo=BERLIN)


def test_a_pause_that_ended_long_ago_resumes_from_now_not_from_its_end() -> None:
    midnight = datetime(2026, 1, 6, 0, 0, tzinfo=BERLIN)
    later = midnight + timedelta(hours=3, minutes=21)
    interval = _trigger(TriggerKind.INTERVAL, "60", midnight)
    assert resume_time(interval, later) == later
    cron = _trigger(TriggerKind.CRON, "0 * * * *", midnight)
    assert resume_time(cron, later) == datetime(2026, 1, 6, 4, 0, tzinfo=BERLIN)


def test_budget_words_and_the_local_day() -> None:
    budget = TriggerBudget(runs=20, tokens=200_000, cost_usd=1.5)
    assert budget.spent_by(TriggerSpend(runs=19, tokens=199_999, cost_usd=1.49)) is None
    assert budget.spent_by(TriggerSpend(runs=20)) == "its 20 runs"
    assert budget.spent_by(TriggerSpend(tokens=200_000)) == "its 200,000 tokens"
    assert budget.spent_by(TriggerSpend(cost_usd=1.5)) == "its $1.50"
    start, end = local_day("Europe/Berlin", datetime(2026, 3, 28, 23, 30, tzinfo=UTC))
    assert (start, end) == (
        datetime(2026, 3, 29, 0, 0, tzinfo=BERLIN),
        datetime(2026, 3, 30, 0, 0, tzinfo=BERLIN),
    )
    assert (end - start).total_seconds() == 23 * 3600  # the short day
