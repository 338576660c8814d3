"""Heartbeats without burn, on a simulated clock through the real scheduler, worker and store:
a week of 10-minute heartbeats with nothing to do wakes the model zero times (the scripted model
server counts its requests); a follow-up the agent set wakes it exactly once; active hours
hold; a daily budget stops a runaway trigger, notifies once, and lets it run again the next
day."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from steward.domain import FiringStatus, TaskSpec, TaskStatus, TriggerKind
from steward.domain.clock import SimulatedClock
from steward.domain.followup import FollowUp
from steward.domain.trigger import TriggerBudget
from steward.harness.agent import AgentHarness
from steward.harness.workspace import Workspace
from steward.models import ScriptedModel
from steward.models.openai_compat import OpenAIModel
from steward.models.scripted import call_tool
from steward.runtime.builtin import builtin_harness
from steward.runtime.simulate import run_simulation
from steward.service import Service
from steward.store import Store
from steward.testing.model_server import ModelServer, run_model_server
from support.clock import START

BERLIN = ZoneInfo("Europe/Berlin")
WEEK = timedelta(days=7)
BEATS_A_WEEK = 7 * 24 * 6
A_WEEK_LATER = START + WEEK + timedelta(minutes=1)
"""Just past the week's last beat (the simulation stops before a tick due at its end)."""


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel([call_tool("finish", result="Followed up on the quote.")])


@pytest.fixture
def server(model: ScriptedModel) -> Iterator[ModelServer]:
    with run_model_server(model) as running:
        yield running


def agent(server: ModelServer, tmp_path: Path) -> AgentHarness:
    remote = OpenAIModel(name=server.model.name, base_url=server.url, api_key=server.api_key)
    return AgentHarness(model=remote, workspace=Workspace(tmp_path / "workspace"))


async def heartbeat_goal(service: Service, task_kind: str = "agent") -> tuple[str, str]:
    """A goal with a 10-minute heartbeat, and three event triggers standing in for its
    watches, all starting ``task_kind`` tasks. Returns the goal's and the heartbeat's ids."""
    person = await service.ensure_person()
    goal = await service.create_goal(person_id=person.id, title="Get the roof repaired")
    beat = await service.add_trigger(
        person_id=person.id,
        goal_id=goal.id,
        kind=TriggerKind.HEARTBEAT,
        spec="10m",
        name="roof heartbeat",
        task=TaskSpec(kind=task_kind, input={"instructions": "See what needs doing."}),
        watch=["web.changed", "feed.entry"],
    )
    for kind in ("web.changed", "feed.entry", "file.created"):
        await service.add_trigger(
            person_id=person.id,
            goal_id=goal.id,
            kind=TriggerKind.EVENT,
            spec=kind,
            match={"watch": "roofer"},
            task=TaskSpec(kind=task_kind, input={"instructions": "A watch changed."}),
        )
    return goal.id, beat.id


async def test_an_idle_week_of_heartbeats_never_calls_the_model(
    store: Store, server: ModelServer, tmp_path: Path
) -> None:
    """Every 10 minutes for a week the heartbeat checks the store and finds nothing: the model
    server sees no request, no task is created, and the 1,008 idle checks are a counter on the
    trigger, not 1,008 rows."""
    clock = SimulatedClock(START)
    service = Service(store, clock)
    goal_id, beat_id = await heartbeat_goal(service)

    await run_simulation(store, agent(server, tmp_path), clock, until=A_WEEK_LATER)

    assert server.requests == 0
    assert await store.tasks.list_tasks(goal_id=goal_id) == []
    beat = await store.schedule.get_trigger(beat_id)
    assert beat.idle_beats == BEATS_A_WEEK
    assert beat.last_beat_at == START + WEEK
    assert await store.schedule.list_firings(beat_id) == []


async def test_a_follow_up_due_on_day_three_wakes_the_model_once(
    store: Store, tmp_path: Path
) -> None:
    """The agent sets a follow-up for Wednesday 10:00 with its tool; over the week the
    heartbeat wakes the model exactly once, at the first beat after it fell due, with the note
    in the task; the follow-up is consumed; every other check stays idle."""
    due = datetime(2026, 1, 7, 10, 0, tzinfo=UTC)  # Wednesday, day 3
    model = ScriptedModel(
        [
            call_tool("follow_up", at=due.isoformat(), note="Has the roofer sent the quote?"),
            call_tool("finish", result="Asked for a quote; following up Wednesday."),
            call_tool("finish", result="Followed up on the quote."),
        ]
    )
    clock = SimulatedClock(START)
    service = Service(store, clock)
    goal_id, beat_id = await heartbeat_goal(service)
    person = await service.ensure_person()
    await service.create_task(
        person_id=person.id,
        goal_id=goal_id,
        spec=TaskSpec(kind="agent", input={"instructions": "Ask the roofer for a quote."}),
    )
    with run_model_server(model) as server:
        await run_simulation(store, agent(server, tmp_path), clock, until=A_WEEK_LATER)
        assert server.requests == 3  # two for the first task, one for the heartbeat's

    [first, woken] = sorted(
        await store.tasks.list_tasks(goal_id=goal_id), key=lambda t: t.created_at
    )
    assert woken.trigger_id == beat_id
    assert woken.status is TaskStatus.SUCCEEDED
    assert woken.created_at == due  # the beat at 10:00 sees it
    assert woken.input["event"]["follow_ups"] == [
        {"due_at": due.isoformat(), "note": "Has the roofer sent the quote?"}
    ]
    messages, _ = model.requests[2]
    assert "Has the roofer sent the quote?" in "\n".join(str(m.content) for m in messages)
    [follow_up] = await store.heartbeats.list_follow_ups(goal_id)
    assert (follow_up.task_id, follow_up.done_task_id) == (first.id, woken.id)
    [firing] = await store.schedule.list_firings(beat_id)
    assert (firing.status, firing.task_id) == (FiringStatus.FIRED, woken.id)
    beat = await store.schedule.get_trigger(beat_id)
    assert beat.idle_beats == BEATS_A_WEEK - 1


async def test_an_event_nothing_took_wakes_the_heartbeat_but_a_handled_one_does_not(
    store: Store,
) -> None:
    """An event of a watched type that an event trigger fired for is handled already: the
    heartbeat does not look at it again. One that no trigger or wait took starts one task at
    the next beat, carrying the event; an event of a type it does not watch is not its."""
    clock = SimulatedClock(START)
    service = Service(store, clock)
    goal_id, beat_id = await heartbeat_goal(service, "noop")
    person = await service.ensure_person()
    for n, (kind, payload) in enumerate(
        [
            ("web.changed", {"watch": "roofer", "price": 900}),  # its event trigger takes it
            ("calendar.changed", {"watch": "dentist"}),  # not watched
            ("feed.entry", {"watch": "weather", "title": "Storm on Thursday"}),  # nobody took it
        ]
    ):
        await service.send_event(
            person_id=person.id, type=kind, payload=payload, dedupe_key=f"e{n}"
        )
    await run_simulation(store, builtin_harness(), clock, until=START + timedelta(hours=1))

    tasks = await store.tasks.list_tasks(goal_id=goal_id)
    from_beat = [t for t in tasks if t.trigger_id == beat_id]
    assert len(tasks) == 2  # the event trigger's task and the heartbeat's
    [task] = from_beat
    [event] = task.input["event"]["events"]
    assert (event["type"], event["payload"]["title"]) == ("feed.entry", "Storm on Thursday")
    beat = await store.schedule.get_trigger(beat_id)
    assert beat.idle_beats == 4  # the other beats of the hour (08:20 to 08:50)


async def test_heartbeats_keep_to_active_hours(store: Store) -> None:
    """08:00-20:00 Monday to Friday, Berlin time: no beat at night or at the weekend; a
    follow-up due Tuesday 22:00 is acted on at Wednesday's first beat, 08:00 sharp."""
    clock = SimulatedClock(START)  # Monday 09:00 in Berlin
    service = Service(store, clock)
    person = await service.ensure_person()
    goal = await service.create_goal(person_id=person.id, title="Office hours")
    beat = await service.add_trigger(
        person_id=person.id,
        goal_id=goal.id,
        kind=TriggerKind.HEARTBEAT,
        spec="600",
        timezone="Europe/Berlin",
        task=TaskSpec(kind="noop"),
        active_hours="08:00-20:00",
        days="mon-fri",
    )
    tuesday_night = datetime(2026, 1, 6, 22, 0, tzinfo=BERLIN)
    await store.heartbeats.add_follow_up(_follow_up(person.id, goal.id, tuesday_night, clock.now()))
    until = datetime(2026, 1, 11, 23, 0, tzinfo=BERLIN)  # Sunday night
    await run_simulation(store, builtin_harness(), clock, until=until)

    [firing] = await store.schedule.list_firings(beat.id)
    assert firing.scheduled_for == datetime(2026, 1, 7, 8, 0, tzinfo=BERLIN)
    after = await store.schedule.get_trigger(beat.id)
    # Monday 09:10-19:50 (65), Tuesday to Friday 08:00-19:50 (72 each), one of them busy
    assert after.idle_beats + 1 == 65 + 4 * 72
    assert after.last_beat_at is not None
    last = after.last_beat_at.astimezone(BERLIN)
    assert (last.weekday(), last.hour, last.minute) == (4, 19, 50)
    assert after.next_fire_at == datetime(2026, 1, 12, 8, 0, tzinfo=BERLIN)


async def test_a_budget_stops_a_runaway_trigger_notifies_once_and_resumes_next_day(
    store: Store,
) -> None:
    """A trigger firing every second with a budget of 20 runs a day starts 20 tasks, then
    pauses (one 'paused' record, not thousands) and tells the person once, in plain words; at
    midnight it runs again, and stops again after 20."""
    clock = SimulatedClock(START)
    service = Service(store, clock)
    person = await service.ensure_person()
    trigger = await service.add_trigger(
        person_id=person.id,
        kind=TriggerKind.INTERVAL,
        spec="1",
        name="Check prices",
        task=TaskSpec(kind="noop"),
        budget=TriggerBudget(runs=20),
    )
    midnight = datetime(2026, 1, 6, tzinfo=UTC)
    await run_simulation(store, builtin_harness(), clock, until=START + timedelta(hours=3))

    firings = await store.schedule.list_firings(trigger.id)
    assert [f.status for f in firings] == [FiringStatus.FIRED] * 20 + [FiringStatus.PAUSED]
    paused = await store.schedule.get_trigger(trigger.id)
    assert (paused.paused_until, paused.next_fire_at) == (midnight, midnight)
    [notice] = await store.inbox.list_notifications(person_id=person.id)
    assert notice.kind == "budget"
    assert notice.title == "'Check prices' stopped for today: it used its 20 runs."
    assert notice.body.startswith("It resumes at midnight")
    [report] = await service.trigger_reports(person_id=person.id)
    assert report.state.startswith("paused until")
    assert report.today == "20 runs, 0 tokens, $0.00"

    await run_simulation(store, builtin_harness(), clock, until=midnight + timedelta(hours=1))
    firings = await store.schedule.list_firings(trigger.id)
    next_day = [f for f in firings if f.scheduled_for >= midnight]
    assert [f.status for f in next_day] == [FiringStatus.FIRED] * 20 + [FiringStatus.PAUSED]
    assert next_day[0].scheduled_for == midnight
    notices = await store.inbox.list_notifications(person_id=person.id)
    assert len(notices) == 2  # one a day
    assert len(await store.tasks.list_tasks(person_id=person.id, limit=1000)) == 40


async def test_raising_the_budget_lifts_the_pause(store: Store) -> None:
    clock = SimulatedClock(START)
    service = Service(store, clock)
    person = await service.ensure_person()
    trigger = await service.add_trigger(
        person_id=person.id,
        kind=TriggerKind.INTERVAL,
        spec="60",
        task=TaskSpec(kind="noop"),
        budget=TriggerBudget(runs=2),
    )
    await run_simulation(store, builtin_harness(), clock, until=START + timedelta(minutes=10))
    assert (await store.schedule.get_trigger(trigger.id)).paused_until is not None
    raised = await service.set_trigger_budget(trigger.id, TriggerBudget(runs=5))
    assert raised.paused_until is None
    await run_simulation(store, builtin_harness(), clock, until=START + timedelta(minutes=20))
    fired = [
        f for f in await store.schedule.list_firings(trigger.id) if f.status is FiringStatus.FIRED
    ]
    assert len(fired) == 5


async def test_re_enabling_after_midnight_does_not_catch_up_the_pause(store: Store) -> None:
    """A trigger paused by its budget, switched off, and switched on again the next morning
    fires from then on: the pause that ended at midnight does not pull it back to midnight
    (which used to record every minute since as missed and fire catch-up runs)."""
    clock = SimulatedClock(START)
    service = Service(store, clock)
    person = await service.ensure_person()
    trigger = await service.add_trigger(
        person_id=person.id,
        kind=TriggerKind.INTERVAL,
        spec="60",
        task=TaskSpec(kind="noop"),
        budget=TriggerBudget(runs=2),
    )
    await run_simulation(store, builtin_harness(), clock, until=START + timedelta(minutes=10))
    assert (await store.schedule.get_trigger(trigger.id)).paused_until is not None
    await service.set_trigger_enabled(trigger.id, False)
    clock.advance(datetime(2026, 1, 6, 1, 21, tzinfo=UTC) - clock.now())
    back_on = clock.now()
    enabled = await service.set_trigger_enabled(trigger.id, True)
    assert enabled.paused_until is None
    await run_simulation(store, builtin_harness(), clock, until=back_on + timedelta(minutes=5))
    firings = await store.schedule.list_firings(trigger.id)
    next_day = [f for f in firings if f.recorded_at >= back_on]
    assert [f.status for f in next_day] == [FiringStatus.FIRED] * 2 + [FiringStatus.PAUSED]
    assert all(f.scheduled_for > back_on for f in next_day)


def _follow_up(person_id: str, goal_id: str, due: datetime, now: datetime) -> FollowUp:
    return FollowUp(
        id="fup_test",
        person_id=person_id,
        goal_id=goal_id,
        task_id=None,
        due_at=due,
        note="Call the bank",
        created_at=now,
    )


async def test_a_raised_budget_spent_again_the_same_day_says_so_again(store: Store) -> None:
    clock = SimulatedClock(START)
    service = Service(store, clock)
    person = await service.ensure_person()
    trigger = await service.add_trigger(
        person_id=person.id,
        kind=TriggerKind.INTERVAL,
        spec="60",
        name="Check prices",
        task=TaskSpec(kind="noop"),
        budget=TriggerBudget(runs=2),
    )
    await run_simulation(store, builtin_harness(), clock, until=START + timedelta(minutes=10))
    await service.set_trigger_budget(trigger.id, TriggerBudget(runs=4))
    await run_simulation(store, builtin_harness(), clock, until=START + timedelta(minutes=20))
    notices = await store.inbox.list_notifications(person_id=person.id)
    assert sorted(n.title for n in notices) == [
        "'Check prices' stopped for today: it used its 2 runs.",
        "'Check prices' stopped for today: it used its 4 runs.",
    ]
