"""The calendar's trigger sources through the watcher, against Radicale: a change someone else
makes becomes one ``calendar.changed`` event (not repeated by another poll or a restart), and
an event about to start becomes one ``calendar.starting`` event at the right simulated time."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from datetime import timedelta

from steward.connectors.base import TriggerSource
from steward.connectors.calendar.connector import CONNECTOR
from steward.connectors.calendar.sources import CHANGED, STARTING
from steward.connectors.watch import Watcher
from steward.domain import TaskStatus
from steward.domain.event import Event
from steward.harness.agent import AgentHarness
from steward.models import Message, ModelResponse, ScriptedModel, ToolSpec
from steward.models.scripted import call_tool
from steward.runtime.scheduler import Scheduler
from support.agents import agent_worker
from support.caldavserver import Connected, vcalendar


def source(world: Connected, name: str) -> TriggerSource:
    """A fresh instance, as a restarted process builds it."""
    return next(s for s in CONNECTOR.sources(world.env) if s.name == name)


async def stored(world: Connected, type: str) -> list[Event]:
    found = await world.store.schedule.list_events(person_id=world.person_id)
    return sorted((e for e in found if e.type == type), key=lambda e: e.dedupe_key)


def lunch(summary: str = "Lunch", start: str = "20260107T120000") -> str:
    return vcalendar(
        "BEGIN:VEVENT",
        "UID:lunch@dana",
        "DTSTAMP:20251201T000000Z",
        f"DTSTART;TZID=Europe/Paris:{start}",
        "DURATION:PT1H",
        f"SUMMARY:{summary}",
        "DESCRIPTION:Bring the contract",
        "ORGANIZER:mailto:dana@example.test",
        "END:VEVENT",
    )


async def test_a_change_by_someone_else_is_one_event_across_polls_and_a_restart(
    connected: Connected,
) -> None:
    con = await connected.connect(name="Cal")
    server, work = connected.calendars.server, connected.calendars.work
    before = await server.put_event(as_user="dana", calendar_url=work, ics=lunch("Old"))
    watcher = Watcher(env=connected.env, holder="w1")
    assert await watcher.poll_once(con, source(connected, CHANGED)) == 0
    assert await stored(connected, CHANGED) == []  # the first poll takes stock

    href = await server.put_event(
        as_user="dana", calendar_url=work, ics=lunch().replace("lunch@dana", "new@dana")
    )
    changes = source(connected, CHANGED)
    assert await watcher.poll_once(con, changes) == 0
    assert await watcher.poll_once(con, changes) == 0  # nothing new: nothing stored
    [created] = await stored(connected, CHANGED)
    assert created.payload == {
        "account": "Cal",
        "calendar": "Work",
        "uid": "new@dana",
        "summary": "Lunch",
        "start": "2026-01-07T12:00:00+01:00",
        "change": "created",
        "organizer": "dana@example.test",
        "untrusted": True,
    }
    assert created.dedupe_key.startswith(f"cal:{con.id}:new@dana:")

    await server.replace_event(
        as_user="dana",
        href=href,
        ics=lunch("Lunch moved", "20260107T130000").replace("lunch@dana", "new@dana"),
    )
    await server.delete(as_user="dana", href=before)
    # a new process: the cursor comes from the store, not from memory
    restarted = Watcher(env=connected.env, holder="w2")
    assert await restarted.poll_once(con, source(connected, CHANGED)) == 0
    assert await restarted.poll_once(con, source(connected, CHANGED)) == 0
    seen = [
        (e.payload["change"], e.payload["uid"], e.payload["summary"])
        for e in await stored(connected, CHANGED)
    ]
    assert sorted(seen) == [
        ("created", "new@dana", "Lunch"),
        ("deleted", "lunch@dana", "Old"),
        ("updated", "new@dana", "Lunch moved"),
    ]


async def test_a_change_by_someone_else_wakes_the_task_waiting_for_it(
    connected: Connected,
) -> None:
    """The agent booked lunch and waits for Dana to change it; her change in Radicale, seen
    by the watch, wakes the task with the change's plain fields (labelled untrusted)."""
    con = await connected.connect()
    store, clock = connected.store, connected.clock
    href = await connected.calendars.server.put_event(
        as_user="dana", calendar_url=connected.calendars.work, ics=lunch()
    )
    wait = call_tool(
        "wait_for_event", event_type=CHANGED, match={"uid": "lunch@dana", "change": "updated"}
    )

    def report(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
        [arrived] = [
            m.content for m in messages if m.role == "tool" and "event arrived" in m.content
        ]
        payload = json.loads(arrived.split("event arrived: ", 1)[1])["payload"]
        return call_tool("finish", result=f"Dana moved it: {payload['summary']}")

    harness = AgentHarness(model=ScriptedModel([wait, report]), workspace=connected.env.workspace)
    task = await connected.svc.ask_agent(
        person_id=connected.person_id, instructions="Tell me when Dana changes lunch"
    )
    worker, scheduler = agent_worker(store, harness, clock), Scheduler(store, clock)
    watcher = Watcher(env=connected.env, holder="w1")
    await watcher.poll_once(con, source(connected, CHANGED))  # the watch takes stock
    await worker.run_until_idle()
    assert (await connected.svc.get_task(task.id)).status is TaskStatus.WAITING

    await connected.calendars.server.replace_event(
        as_user="dana", href=href, ics=lunch("Lunch at the new place")
    )
    clock.advance(timedelta(minutes=1))
    await watcher.poll_once(con, source(connected, CHANGED))
    await scheduler.tick()
    await worker.run_until_idle()
    done = await connected.svc.get_task(task.id)
    assert done.status is TaskStatus.SUCCEEDED
    assert done.result is not None
    assert done.result["text"] == "Dana moved it: Lunch at the new place"
    assert done.result["untrusted_sources"] == [f"event:{CHANGED} (step 3)"]


async def test_a_server_that_is_down_is_a_failure_the_watcher_backs_off_from(
    connected: Connected,
) -> None:
    con = await connected.connect(password="wrong")
    watcher = Watcher(env=connected.env, holder="w1")
    assert await watcher.poll_once(con, source(connected, CHANGED)) == 1
    state = await connected.store.watches.get(con.id, CHANGED)
    assert state is not None
    assert "refused the sign-in" in (state.last_error or "")


async def test_an_event_about_to_start_is_announced_once_at_the_right_time(
    connected: Connected,
) -> None:
    con = await connected.connect(name="Cal")
    clock = connected.clock  # Monday 5 January 2026, 09:00 in Paris
    await connected.calendars.server.put_event(
        as_user="dana",
        calendar_url=connected.calendars.home,
        ics=lunch(start="20260105T100000"),  # 10:00 in Paris: one hour from now
    )
    starting = source(connected, STARTING)
    watcher = Watcher(env=connected.env, holder="w1")
    assert await watcher.poll_once(con, starting) == 0
    assert await stored(connected, STARTING) == []

    # the source sleeps until 15 minutes before the start, not a whole interval
    waiting = asyncio.create_task(starting.wait(con, 24 * 3600))
    clock.advance(timedelta(minutes=44))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    clock.advance(timedelta(minutes=1))
    await asyncio.wait_for(waiting, 5)

    assert await watcher.poll_once(con, starting) == 0
    clock.advance(timedelta(minutes=5))
    assert await watcher.poll_once(con, starting) == 0  # announced once, not again
    [soon] = await stored(connected, STARTING)
    assert soon.dedupe_key == f"calstart:{con.id}:lunch@dana:2026-01-05T10:00:00+01:00"
    assert soon.payload == {
        "account": "Cal",
        "calendar": "Home",
        "uid": "lunch@dana",
        "summary": "Lunch",
        "start": "2026-01-05T10:00:00+01:00",
        "minutes": 15,
        "location": "",
        "untrusted": True,
    }
