""" "Find a time with Dana and book it", end to end on Radicale: the agent reads free/busy, the
person approves the booking as one sentence, and the event is created exactly once although the
worker dies right after the server stored it (the recovered task reconciles by the event's UID
instead of booking again)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from steward.connectors.calendar.caldav_client import CalDAVAccount
from steward.connectors.calendar.connector import CONNECTOR
from steward.connectors.calendar.settings import CalendarSettings
from steward.connectors.calendar.tools import uid_for
from steward.connectors.calendar.wording import DASH
from steward.domain import EffectStatus, TaskStatus
from steward.harness.agent import AgentHarness
from steward.harness.tools import ToolContext
from steward.models.scripted import ScriptedModel, call_tool
from steward.runtime.scheduler import Scheduler
from steward.sentinel.policy import PolicySentinel
from support.agents import agent_worker
from support.caldavserver import Connected

LEASE = 30.0


class Died(BaseException):
    """The worker process is gone (nothing absorbs a BaseException)."""


async def test_booking_is_approved_as_a_sentence_and_made_once_across_a_crash(
    connected: Connected,
) -> None:
    await connected.connect()
    store, clock, svc = connected.store, connected.clock, connected.svc
    busy = await connected.calendars.server.put_event(
        as_user="dana",
        calendar_url=connected.calendars.work,
        ics=(
            "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\nBEGIN:VEVENT\r\n"
            "UID:standup@dana\r\nDTSTAMP:20251201T000000Z\r\n"
            "DTSTART;TZID=Europe/Paris:20260109T090000\r\n"
            "DTEND;TZID=Europe/Paris:20260109T100000\r\nSUMMARY:Standup\r\n"
            "END:VEVENT\r\nEND:VCALENDAR\r\n"
        ),
    )
    assert busy
    booking = {
        "title": "Coffee with Dana",
        "start": "2026-01-09T10:00",
        "end": "2026-01-09T10:30",
        "calendar": "Work",
        "attendees": ["dana@example.test"],
    }
    model = ScriptedModel(
        [
            call_tool("calendar_freebusy", start="2026-01-09T08:00", end="2026-01-09T12:00"),
            call_tool("calendar_create", **booking),
            call_tool("finish", result="booked"),
        ]
    )
    sent: list[str | None] = []
    tools = CONNECTOR.tools(connected.env)
    create = next(t for t in tools if t.name == "calendar_create")

    async def create_then_die(args: dict[str, Any], ctx: ToolContext) -> Any:
        sent.append(ctx.idempotency_key)
        result = await create.invoke(args, ctx)
        if len(sent) == 1:
            raise Died  # the server stored the event; the worker never recorded it
        return result

    harness = AgentHarness(
        model=model,
        workspace=connected.env.workspace,
        tools=[replace(create, invoke=create_then_die) if t is create else t for t in tools],
        sentinel=PolicySentinel(store, clock),
    )
    task = await svc.ask_agent(
        person_id=connected.person_id, instructions="Find a time with Dana on Friday; book it"
    )
    worker = agent_worker(store, harness, clock)
    await worker.run_until_idle()

    [approval] = await svc.list_approvals(person_id=connected.person_id)
    assert approval.summary == (
        f'Book "Coffee with Dana" on Fri 9 Jan, 10:00{DASH}10:30 (your time) in Work, '
        "inviting dana@example.test"
    )
    [read] = [s.output for s in await svc.steps(task.id) if s.kind == "tool"]
    assert read["name"] == "calendar_freebusy"  # read without asking
    assert json.loads(read["observation"])["free"] == [
        f"Fri 9 Jan, 08:00{DASH}09:00 (Europe/Paris)",
        f"Fri 9 Jan, 10:00{DASH}12:00 (Europe/Paris)",
    ]

    await svc.decide_approval(approval.id, approve=True, decided_by="test")
    await worker.run_until_idle()  # the activation dies inside it: its task stays claimed
    assert (await svc.get_task(task.id)).status is TaskStatus.RUNNING
    assert len(sent) == 1
    clock.advance(timedelta(seconds=LEASE + 1))  # the dead worker's lease lapses
    await Scheduler(store, clock).tick()
    await agent_worker(store, harness, clock).run_until_idle()

    done = await svc.get_task(task.id)
    assert done.status is TaskStatus.SUCCEEDED
    assert len(sent) == 1  # reconciled, not sent again
    [effect] = await store.effects.list_effects(task_id=task.id)
    assert effect.status is EffectStatus.SUCCEEDED
    assert effect.result["uid"] == uid_for(sent[0])
    account = CalDAVAccount(
        CalendarSettings(url=connected.calendars.server.url, username=connected.calendars.user),
        connected.calendars.server.passwords[connected.calendars.user],
    )
    friday = datetime.fromisoformat("2026-01-09T00:00+01:00")
    booked = [e.summary for e in await account.events(friday, friday + timedelta(days=1))]
    assert sorted(booked) == ["Coffee with Dana", "Standup"]
    assert (await svc.list_approvals(person_id=connected.person_id)) == []


async def test_a_read_only_connection_cannot_book(connected: Connected) -> None:
    await connected.connect(scopes=("calendar.read",))
    model = ScriptedModel(
        [
            call_tool(
                "calendar_create",
                title="Coffee with Dana",
                start="2026-01-09T10:00",
                end="2026-01-09T10:30",
                calendar="Work",
            ),
            call_tool("finish", result="could not book"),
        ]
    )
    harness = AgentHarness(
        model=model,
        workspace=connected.env.workspace,
        tools=CONNECTOR.tools(connected.env),
        sentinel=PolicySentinel(connected.store, connected.clock),
    )
    task = await connected.svc.ask_agent(person_id=connected.person_id, instructions="Book it")
    await agent_worker(connected.store, harness, connected.clock).run_until_idle()
    assert (await connected.svc.get_task(task.id)).status is TaskStatus.SUCCEEDED
    assert await connected.svc.list_approvals(person_id=connected.person_id) == []
    refused, finished = [s.output for s in await connected.svc.steps(task.id) if s.kind == "tool"]
    assert (refused["name"], refused["error"], finished["name"]) == (
        "calendar_create",
        True,
        "finish",
    )
    assert refused["observation"] == (
        "denied: your connection 'Calendar' does not allow calendar.write"
    )
    assert await connected.store.effects.list_effects(task_id=task.id) == []
