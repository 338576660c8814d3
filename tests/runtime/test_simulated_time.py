"""Weeks of goal time on a simulated clock (the issue's acceptance test): a daily 09:00 Berlin
trigger over four weeks that cross a DST change, with a two-day outage in the middle, replayed
through the real scheduler, worker and store in seconds."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
import structlog
from typer.testing import CliRunner

from steward.cli.main import app
from steward.domain import FiringStatus, MissedPolicy, TaskSpec, TaskStatus, TriggerKind
from steward.domain.clock import SimulatedClock
from steward.runtime.builtin import builtin_harness
from steward.runtime.simulate import Outage, run_simulation
from steward.service import Service
from steward.store import Store

BERLIN = ZoneInfo("Europe/Berlin")
# Monday 08:30 in Berlin; Europe/Berlin moves to summer time on Sunday 2026-03-29.
START = datetime(2026, 3, 16, 7, 30, tzinfo=UTC)
UNTIL = START + timedelta(days=28)
SUMMER_TIME = datetime(2026, 3, 29, 1, 0, tzinfo=UTC)
# Down from Friday 3 April 12:00 to Sunday 5 April 12:00 (Berlin): Saturday's and Sunday's
# 09:00 firings fall inside.
OUTAGE = Outage(
    start=datetime(2026, 4, 3, 10, 0, tzinfo=UTC), end=datetime(2026, 4, 5, 10, 0, tzinfo=UTC)
)


def nine_oclock_berlin() -> list[datetime]:
    """Every 09:00 Berlin time from START to UNTIL, in UTC."""
    day = START.astimezone(BERLIN).date()
    times = []
    while True:
        local = datetime(day.year, day.month, day.day, 9, 0, tzinfo=BERLIN)
        when = local.astimezone(UTC)
        if when > UNTIL:
            return times
        if when > START:
            times.append(when)
        day += timedelta(days=1)


SCHEDULE = nine_oclock_berlin()
IN_OUTAGE = [t for t in SCHEDULE if OUTAGE.start < t < OUTAGE.end]


@pytest.mark.parametrize(
    ("policy", "cap", "caught_up"),
    [
        (MissedPolicy.SKIP, 10, []),
        (MissedPolicy.RUN_ONCE, 10, IN_OUTAGE[-1:]),
        (MissedPolicy.RUN_ALL, 1, IN_OUTAGE[-1:]),
        (MissedPolicy.RUN_ALL, 10, IN_OUTAGE),
    ],
    ids=["skip", "run_once", "run_all-cap1", "run_all-cap10"],
)
async def test_four_weeks_of_a_daily_goal_with_an_outage(
    store: Store, policy: MissedPolicy, cap: int, caught_up: list[datetime]
) -> None:
    """Over 28 simulated days a '0 9 * * *' Europe/Berlin trigger fires at exactly 09:00 local
    every day (08:00 UTC before the DST change, 07:00 after): each on-time firing's task is
    created and its activation starts at the scheduled instant — never early, never late. The
    two mornings inside the outage are handled at resume as the policy says and stay visible:
    skip records both as missed, run_once fires the latest once, run_all fires up to its cap;
    every other missed time is recorded as missed, and catch-up work runs at resume, not
    before its time."""
    clock = SimulatedClock(START)
    service = Service(store, clock)
    person = await service.ensure_person()
    goal = await service.create_goal(person_id=person.id, title="daily report")
    trigger = await service.add_trigger(
        person_id=person.id,
        goal_id=goal.id,
        kind=TriggerKind.CRON,
        spec="0 9 * * *",
        timezone="Europe/Berlin",
        task=TaskSpec(kind="noop"),
        missed_policy=policy,
        missed_cap=cap,
    )
    assert len(SCHEDULE) == 29
    assert len(IN_OUTAGE) == 2

    report = await run_simulation(store, builtin_harness(), clock, until=UNTIL, outages=[OUTAGE])
    assert report.end == UNTIL

    firings = await store.schedule.list_firings(trigger.id)
    assert [f.scheduled_for for f in firings] == SCHEDULE  # every day once, in order
    for firing in firings:
        local = firing.scheduled_for.astimezone(BERLIN)
        assert (local.hour, local.minute, local.second, local.microsecond) == (9, 0, 0, 0)
    # 09:00 local is 08:00 UTC in winter time, 07:00 UTC in summer time
    assert {f.scheduled_for.hour for f in firings if f.scheduled_for < SUMMER_TIME} == {8}
    assert {f.scheduled_for.hour for f in firings if f.scheduled_for > SUMMER_TIME} == {7}

    tasks = {t.id: t for t in await store.tasks.list_tasks(goal_id=goal.id, limit=1000)}
    started = {
        a.task_id: a.started_at for a in await store.activations.list_activations(goal_id=goal.id)
    }
    fired = [f for f in firings if f.status is FiringStatus.FIRED]
    missed = [f for f in firings if f.status is FiringStatus.MISSED]
    assert [f.scheduled_for for f in missed] == [t for t in IN_OUTAGE if t not in caught_up]
    assert all(f.task_id is None for f in missed)
    assert all(f.recorded_at == OUTAGE.end for f in missed)  # recorded when it came back
    assert len(fired) == len(SCHEDULE) - len(missed)
    assert set(tasks) == {f.task_id for f in fired}
    assert report.activations == len(fired)
    for firing in fired:
        assert firing.task_id is not None
        task = tasks[firing.task_id]
        assert task.status is TaskStatus.SUCCEEDED
        assert task.trigger_id == trigger.id
        assert task.input["fired_for"] == firing.scheduled_for.isoformat()
        # never early
        assert task.created_at >= firing.scheduled_for
        assert started[task.id] >= task.created_at
        expected_at = OUTAGE.end if firing.scheduled_for in caught_up else firing.scheduled_for
        # on time to the microsecond, or (catch-up) exactly at resume
        assert firing.recorded_at == expected_at
        assert task.created_at == expected_at
        assert started[task.id] == expected_at

    timeline = await service.timeline(goal.id)
    shown = [e for e in timeline if e.kind == "firing" and "missed" in e.summary]
    assert [e.at for e in shown] == [f.scheduled_for for f in missed]


def test_simulate_cli_smoke(db_url: str) -> None:
    """`steward simulate` replays a few days of a few goals (with an outage) on the given
    database and reports what ran."""
    saved = structlog.get_config()
    try:
        result = CliRunner().invoke(
            app,
            [
                "simulate",
                "--days",
                "3",
                "--goals",
                "2",
                "--outage-day",
                "1",
                "--outage-days",
                "1",
                "--db",
                db_url,
            ],
        )
    finally:
        # the command points structlog at the runner's (soon closed) stderr; put it back
        structlog.configure(**saved)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "replayed 3 days of 2 goals" in text
    # per goal: day 1 on time, day 2 missed and caught up once at resume, day 3 on time
    assert "6 activations" in text
    assert "'succeeded': 6" in text


@pytest.fixture(autouse=True)
def _no_leaked_structlog_config() -> Iterator[None]:
    saved = structlog.get_config()
    yield
    assert structlog.get_config() == saved
