"""The issue's scenario, end to end: "Every weekday at 8, check my calendar for conflicts and
tell me only if there is one", said in chat, becomes a goal with a weekday trigger once the
person approves; over two simulated weeks, each run reads the real calendar (Radicale, through
the calendar connector and the egress broker) at 08:00 in the person's zone, and only the two
days with overlapping events bring a report, which the dispatcher delivers to their channel."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Sequence
from datetime import date, datetime, time, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from steward.app import build_harness, connector_env
from steward.config import Settings
from steward.connectors.notify.dispatch import Dispatcher
from steward.domain import ApprovalStatus, Person, TaskStatus, TriggerKind
from steward.domain.channel import Channel, ChannelKind
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.models import ScriptedModel
from steward.models.base import Message, ModelResponse, ToolSpec
from steward.models.scripted import call_tool
from steward.runtime.simulate import run_simulation
from steward.sentinel.vault import KEY_ENV, Vault, VaultKeys, generate_key
from steward.service import Service
from steward.store import Store
from support.agents import agent_worker
from support.caldavserver import Connected, PersonCalendars, vcalendar
from support.clock import START
from support.notify_recording import RecordingSender

ZURICH = ZoneInfo("Europe/Zurich")
ASKED = "Every weekday at 8, check my calendar for conflicts and tell me only if there is one"
GOAL = {
    "title": "Calendar conflicts",
    "instructions": "Check your calendar for today and tell you if two events overlap.",
    "schedule": ["cron 0 8 * * 1-5"],
    "report_policy": "actionable",
    "timezone": "Europe/Zurich",
}
CONFLICT_DAYS = (date(2026, 1, 7), date(2026, 1, 15))
"""A Wednesday and the next week's Thursday: the two days with overlapping events."""


def event(uid: str, day: date, start: str, end: str, title: str) -> str:
    return vcalendar(
        "BEGIN:VEVENT",
        f"UID:{uid}",
        "DTSTAMP:20251201T000000Z",
        f"DTSTART;TZID=Europe/Paris:{day:%Y%m%d}T{start}00",
        f"DTEND;TZID=Europe/Paris:{day:%Y%m%d}T{end}00",
        f"SUMMARY:{title}",
        "END:VEVENT",
    )


async def plant(calendars: PersonCalendars) -> None:
    """Every weekday of the two weeks: a stand-up and a lunch back to back (touching, not
    overlapping) and an afternoon review; on the conflict days one more event overlapping the
    review."""
    server, user = calendars.server, calendars.user
    for offset in range(16):
        day = date(2026, 1, 5) + timedelta(days=offset)
        if day.weekday() >= 5:
            continue
        planned = [
            ("standup", "0930", "1000", "Stand-up"),
            ("lunch", "1000", "1100", "Coffee with Dana"),
            ("review", "1400", "1500", "Design review"),
        ]
        if day in CONFLICT_DAYS:
            planned.append(("dentist", "1430", "1530", "Dentist"))
        for key, start, end, title in planned:
            ics = event(f"{key}-{day:%m%d}@test", day, start, end, title)
            url = calendars.work if key != "dentist" else calendars.home
            await server.put_event(as_user=user, calendar_url=url, ics=ics)


EVENTS = re.compile(r"\{.*\}", re.DOTALL)


def events_seen(observation: str) -> list[dict[str, str]]:
    """The events in the calendar tool's result, as the model is shown it."""
    found = EVENTS.search(observation)
    assert found is not None, observation
    data = json.loads(found.group(0))
    events: list[dict[str, str]] = data["events"]
    return events


def overlapping(events: list[dict[str, str]]) -> tuple[dict[str, str], dict[str, str]] | None:
    ordered = sorted(events, key=lambda e: datetime.fromisoformat(e["start"]))
    for first, second in itertools.pairwise(ordered):
        if datetime.fromisoformat(second["start"]) < datetime.fromisoformat(first["end"]):
            return first, second
    return None


def conflict_model(clock: SimulatedClock, seen: list[tuple[date, int]]) -> ScriptedModel:
    """Sets up the goal when asked in chat; on each run reads today's calendar and reports
    only when two events in the tool's result overlap (noting in ``seen`` the day and how
    many events the calendar's answer held)."""

    def answer(messages: Sequence[Message], specs: Sequence[ToolSpec]) -> ModelResponse:
        said = " ".join(str(m.content) for m in messages if m.role == "user")
        results = [str(m.content) for m in messages if m.role == "tool"]
        if ASKED in said:  # the chat: set the goal up, then say so
            if not results:
                return call_tool("create_goal", **GOAL)
            return call_tool("finish", result="Set up.")
        if not results:
            today = clock.now().astimezone(ZURICH).date()
            tomorrow = today + timedelta(days=1)
            return call_tool("calendar_events", start=str(today), end=str(tomorrow))
        if len(results) == 1:
            events = events_seen(results[0])
            seen.append((clock.now().astimezone(ZURICH).date(), len(events)))
            pair = overlapping(events)
            if pair is not None:
                first, second = pair
                return call_tool(
                    "report",
                    what=f"'{first['title']}' and '{second['title']}' overlap today",
                    why=f"'{first['title']}' is {first['when']}; "
                    f"'{second['title']}' is {second['when']}.",
                    todo="Move or decline one of them.",
                    importance="actionable",
                )
        return call_tool("finish", result="Checked the calendar.")

    return ScriptedModel(answer)


@pytest.fixture
async def person(store: Store, clock: SimulatedClock) -> Person:
    """Ana, in Zurich; the clock starts Monday 5 January 2026, 09:00 her time."""
    return await store.persons.create_person(
        name="Ana", timezone="Europe/Zurich", now=clock.now(), max_concurrency=8
    )


async def test_two_weeks_of_weekday_checks_report_exactly_the_planted_conflicts(
    store: Store,
    clock: SimulatedClock,
    person: Person,
    calendars: PersonCalendars,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = generate_key()  # the harness opens the calendar's credential with this vault key
    monkeypatch.setenv(KEY_ENV, key)
    svc = Service(store, clock)
    world = Connected(
        calendars=calendars,
        store=store,
        clock=clock,
        env=await connector_env(Settings(data_dir=tmp_path), store, clock),
        svc=svc,
        person_id=person.id,
        vault=Vault(VaultKeys(keys=(key,), source="test")),
    )
    await world.connect(name="Calendar")
    await plant(calendars)
    sender = RecordingSender(clock=clock)
    await store.channels.add(
        Channel(
            id=new_id("chn"),
            person_id=person.id,
            kind=ChannelKind.APPRISE,
            name="phone",
            created_at=clock.now(),
        )
    )
    dispatcher = Dispatcher(store=store, senders={sender.kind: sender}, clock=clock, holder="d1")
    seen: list[tuple[date, int]] = []
    model = conflict_model(clock, seen)
    harness = await build_harness(Settings(data_dir=tmp_path), store, clock, model=model)

    chat = await svc.ask_agent(person_id=person.id, instructions=ASKED, chat=True)
    worker = agent_worker(store, harness, clock)
    await worker.run_until_idle()
    [approval] = await svc.list_approvals(person_id=person.id)
    assert approval.status is ApprovalStatus.PENDING
    assert await store.goals.list_goals(person_id=person.id) == []  # nothing before the yes
    while await dispatcher.run_once():  # the question reaches their phone too
        pass
    [asked] = sender.sent
    assert (asked.message.kind, asked.message.title) == ("approval", f"Approve? {approval.summary}")
    sender.sent.clear()
    await svc.decide_approval(approval.id, approve=True)
    await worker.run_until_idle()
    assert (await store.tasks.get_task(chat.id)).status is TaskStatus.SUCCEEDED
    [goal] = await store.goals.list_goals(person_id=person.id)
    [trigger] = await store.schedule.list_triggers(goal_id=goal.id)
    assert (trigger.kind, trigger.spec, trigger.timezone) == (
        TriggerKind.CRON,
        "0 8 * * 1-5",
        "Europe/Zurich",
    )

    # day by day for two weeks: the runtime, then the dispatcher, at 08:30 her time
    delivered_on: list[date] = []
    day = START.astimezone(ZURICH).date()
    for _ in range(14):
        day += timedelta(days=1)
        half_past = datetime.combine(day, time(8, 30), ZURICH)
        await run_simulation(store, harness, clock, until=half_past)
        before = len(sender.sent)
        while await dispatcher.run_once():
            pass
        delivered_on += [day] * (len(sender.sent) - before)

    runs = [
        t
        for t in await store.tasks.list_tasks(goal_id=goal.id, limit=100)
        if t.trigger_id == trigger.id
    ]
    assert len(runs) == 10  # the ten weekdays after Monday 09:00
    for run in runs:
        local = run.created_at.astimezone(ZURICH)
        assert (local.weekday() < 5, local.hour, local.minute) == (True, 8, 0)
        assert run.status is TaskStatus.SUCCEEDED
    # every run decided from the calendar's answer: three events a day, four on conflict days
    days = sorted(run.created_at.astimezone(ZURICH).date() for run in runs)
    assert seen == [(day, 4 if day in CONFLICT_DAYS else 3) for day in days]

    reports = await svc.list_reports(person_id=person.id)
    assert len(reports) == 2
    by_day = {r.created_at.astimezone(ZURICH).date(): r for r in reports}
    assert sorted(by_day) == list(CONFLICT_DAYS)
    for report in reports:
        assert report.goal_id == goal.id
        assert (report.origin, report.importance) == ("agent", "actionable")
        local = report.created_at.astimezone(ZURICH)
        assert (local.hour, local.minute) == (8, 0)
        assert report.what == "'Design review' and 'Dentist' overlap today"
        assert "14:00" in report.why
        assert "14:30" in report.why
        for text in (report.what, report.why, report.todo or ""):
            assert not re.search(r"[{}\[\]]|tsk_|gol_|rep_|\d{4}-\d{2}-\d{2}T", text), text
    # delivered once each, on its own day, to the person's channel, per the goal's policy
    assert delivered_on == list(CONFLICT_DAYS)
    assert [s.message.kind for s in sender.sent] == ["report", "report"]
    assert all(s.message.title == reports[0].what for s in sender.sent)
    assert all(s.channel.person_id == person.id for s in sender.sent)
