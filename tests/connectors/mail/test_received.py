"""The ``mail.received`` watch against Dovecot: new mail becomes one event per message, with the
plain fields trigger filters read; nothing old is reported; a restarted watcher (the cursor comes
from the store) neither misses nor repeats one; a folder rebuilt under a new UIDVALIDITY
repeats nothing; and IMAP IDLE ends the wait as soon as mail arrives."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Any

import pytest

from steward.connectors.base import TriggerSource
from steward.connectors.mail import received
from steward.connectors.mail.access import open_mailbox
from steward.connectors.mail.connector import CONNECTOR
from steward.connectors.mail.imap import IMAPAccount
from steward.connectors.mail.model import MessageRef
from steward.connectors.mail.received import RECEIVED, SNIPPET_BYTES
from steward.connectors.watch import Watcher
from steward.domain import TaskStatus
from steward.domain.event import Event
from steward.domain.task import payload_matches
from steward.harness.agent import AgentHarness
from steward.models import Message, ModelResponse, ScriptedModel, ToolSpec
from steward.models.scripted import call_tool
from steward.runtime.scheduler import Scheduler
from steward.sentinel.policy import PolicySentinel
from support.agents import agent_worker
from support.mailbox import Mailbox
from support.mailserver import message
from support.startup import scaled
from support.waiting import eventually

ATTACHED = (
    "From: Shop <news@shop.test>\r\nTo: {to}\r\nCc: bo@example.test\r\nSubject: Invoice 7\r\n"
    "Date: Tue, 08 Dec 2026 10:00:00 +0000\r\nMessage-ID: <inv-7@shop.test>\r\n"
    "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=XX\r\n\r\n"
    "--XX\r\nContent-Type: text/plain\r\n\r\nYour invoice is attached.\r\n"
    "--XX\r\nContent-Type: application/pdf\r\n"
    'Content-Disposition: attachment; filename="i.pdf"\r\n\r\n%PDF\r\n--XX--\r\n'
)


def source(box: Mailbox) -> TriggerSource:
    """A fresh instance, as a restarted process builds it."""
    [received] = CONNECTOR.sources(box.env)
    return received


async def events(box: Mailbox) -> list[Event]:
    found = await box.store.schedule.list_events(person_id=box.person_id)
    # in the order the mail arrived: by UID (every message here is in the inbox)
    return sorted(
        (e for e in found if e.type == RECEIVED),
        key=lambda e: int(e.payload["message"].rpartition("/")[2]),
    )


async def test_new_mail_is_one_event_each_across_polls_and_a_restart(mailbox: Mailbox) -> None:
    con = await mailbox.connect(name="Home")
    await mailbox.receive(message(sender="old@example.test", to=mailbox.address, subject="Old"))
    watcher = Watcher(env=mailbox.env, holder="w1")
    watch = source(mailbox)
    assert await watcher.poll_once(con, watch) == 0
    assert await events(mailbox) == []  # the first poll takes stock: nothing old

    await mailbox.receive(ATTACHED.format(to=mailbox.address).encode())
    assert await watcher.poll_once(con, watch) == 0
    assert await watcher.poll_once(con, watch) == 0  # nothing new: nothing stored
    [invoice] = await events(mailbox)
    assert invoice.dedupe_key == f"mail:{con.id}:<inv-7@shop.test>"
    payload = dict(invoice.payload)
    assert payload.pop("message").startswith("INBOX/")
    assert payload == {
        "account": "Home",
        "folder": "INBOX",
        "from": "news@shop.test",
        "sender_name": "Shop",
        "to": [mailbox.address, "bo@example.test"],
        "subject": "Invoice 7",
        "date": "2026-12-08T11:00:00+01:00",
        "has_attachment": True,
        "snippet": "Your invoice is attached.",
        "untrusted": True,
    }
    # the filters a trigger or a wait uses hold on these fields
    assert payload_matches(
        {
            "from": {"endswith": "@shop.test"},
            "to": mailbox.address,
            "subject": {"contains": "invoice"},
            "folder": "INBOX",
            "has_attachment": True,
        },
        invoice.payload,
    )
    assert not payload_matches({"from": "dana@example.test"}, invoice.payload)

    for n in range(3):
        await mailbox.receive(
            message(sender="dana@example.test", to=mailbox.address, subject=f"n{n}")
        )
    # a new process: the cursor comes from the store, not from memory
    restarted = Watcher(env=mailbox.env, holder="w2")
    assert await restarted.poll_once(con, source(mailbox)) == 0
    assert await restarted.poll_once(con, source(mailbox)) == 0
    assert [e.payload["subject"] for e in await events(mailbox)] == ["Invoice 7", "n0", "n1", "n2"]


async def test_a_rebuilt_folder_repeats_nothing(mailbox: Mailbox) -> None:
    """A new UIDVALIDITY (the server rebuilt the folder): mail since the last poll is looked at
    again, and the Message-ID keeps what was reported from being stored twice."""
    con = await mailbox.connect()
    watcher = Watcher(env=mailbox.env, holder="w1")
    assert await watcher.poll_once(con, source(mailbox)) == 0
    await mailbox.receive(
        message(sender="dana@example.test", to=mailbox.address, subject="Seen", date="")
    )
    assert await watcher.poll_once(con, source(mailbox)) == 0
    state = await mailbox.store.watches.get(con.id, RECEIVED)
    assert state is not None
    assert state.cursor is not None
    rebuilt = {
        "folders": {"INBOX": {"uidvalidity": 1, "last_uid": 99}},  # another UIDVALIDITY
        "checked_at": state.cursor["checked_at"],
    }
    polled = await source(mailbox).poll(con, rebuilt)
    assert [f.payload["subject"] for f in polled.found] == ["Seen"]  # looked at again...
    await mailbox.store.watches.record(
        person_id=mailbox.person_id,
        connection_id=con.id,
        source=RECEIVED,
        found=polled.found,
        cursor=polled.cursor,
        now=mailbox.clock.now(),
    )
    assert [e.payload["subject"] for e in await events(mailbox)] == ["Seen"]  # ...stored once
    assert polled.cursor["folders"]["INBOX"]["uidvalidity"] != 1


async def test_idle_ends_the_wait_when_mail_arrives(mailbox: Mailbox) -> None:
    con = await mailbox.connect()
    watch = source(mailbox)
    await watch.poll(con, None)
    # the wait is for 10 minutes of the simulated clock, which stands still: only IDLE ends it
    waiting = asyncio.create_task(watch.wait(con, 600))
    await asyncio.sleep(0.5)  # let the IDLE begin (mail arriving earlier ends the wait too)
    await mailbox.receive(message(sender="dana@example.test", to=mailbox.address, subject="Now"))
    await asyncio.wait_for(waiting, scaled(30))


async def test_a_running_watcher_reports_each_mail_once_across_a_restart(
    mailbox: Mailbox,
) -> None:
    """The watcher as a process runs it (IDLE between polls): mail that arrives while it runs,
    while no watcher runs, and after another one took over is each reported once."""
    con = await mailbox.connect()

    async def subjects() -> list[str]:
        return [e.payload["subject"] for e in await events(mailbox)]

    async def watching() -> bool:
        state = await mailbox.store.watches.get(con.id, RECEIVED)
        return state is not None and state.cursor is not None

    first = Watcher(env=mailbox.env, holder="w1", refresh_seconds=0.1, interval_seconds=600)
    stop = asyncio.Event()
    running = asyncio.create_task(first.run(stop))
    await eventually(watching, "the watch to take stock", seconds=scaled(30))
    await mailbox.receive(message(sender="dana@example.test", to=mailbox.address, subject="A"))
    await eventually(lambda: _is(subjects, ["A"]), "A to be reported (IDLE)", seconds=scaled(30))
    stop.set()
    await running

    await mailbox.receive(message(sender="dana@example.test", to=mailbox.address, subject="B"))
    second = Watcher(env=mailbox.env, holder="w2", refresh_seconds=0.1, interval_seconds=600)
    stop = asyncio.Event()
    running = asyncio.create_task(second.run(stop))
    await eventually(lambda: _is(subjects, ["A", "B"]), "B, not A again", seconds=scaled(30))
    await mailbox.receive(message(sender="dana@example.test", to=mailbox.address, subject="C"))
    await eventually(lambda: _is(subjects, ["A", "B", "C"]), "C", seconds=scaled(30))
    stop.set()
    await running
    assert await subjects() == ["A", "B", "C"]


async def _is(read: Callable[[], Awaitable[list[str]]], expected: list[str]) -> bool:
    got = await read()
    assert len(got) <= len(expected), f"reported more than expected: {got}"
    return got == expected


async def test_a_mail_matching_the_filter_wakes_the_waiting_task(mailbox: Mailbox) -> None:
    """The agent waits for Dana's answer: a newsletter does not wake it (the filter is checked
    before any task runs); her mail does, and the agent reads it and drafts a reply."""
    con = await mailbox.connect()
    store, clock = mailbox.store, mailbox.clock
    wait = call_tool(
        "wait_for_event",
        event_type=RECEIVED,
        match={"from": "dana@example.test", "subject": {"contains": "thursday"}},
    )

    def arrived(messages: Sequence[Message]) -> dict[str, Any]:
        [text] = [m.content for m in messages if m.role == "tool" and "event arrived" in m.content]
        payload: dict[str, Any] = json.loads(text.split("event arrived: ", 1)[1])["payload"]
        return payload

    def read(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
        return call_tool("mail_read", message=arrived(messages)["message"])

    def draft(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
        return call_tool(
            "mail_draft",
            to=["dana@example.test"],
            subject=arrived(messages)["subject"],
            body="Thursday works",
            mode="reply",
            message=arrived(messages)["message"],
        )

    harness = AgentHarness(
        model=ScriptedModel([wait, read, draft, call_tool("finish", result="drafted")]),
        workspace=mailbox.env.workspace,
        tools=CONNECTOR.tools(mailbox.env),
        sentinel=PolicySentinel(store, clock),
    )
    task = await mailbox.svc.ask_agent(
        person_id=mailbox.person_id, instructions="When Dana answers about Thursday, draft a reply"
    )
    worker, scheduler = agent_worker(store, harness, clock), Scheduler(store, clock)
    watcher = Watcher(env=mailbox.env, holder="w1")
    await watcher.poll_once(con, source(mailbox))  # the watch takes stock
    await worker.run_until_idle()
    assert (await mailbox.svc.get_task(task.id)).status is TaskStatus.WAITING

    await mailbox.receive(message(sender="news@shop.test", to=mailbox.address, subject="Thursday"))
    await watcher.poll_once(con, source(mailbox))
    await scheduler.tick()
    await worker.run_until_idle()
    assert (await mailbox.svc.get_task(task.id)).status is TaskStatus.WAITING

    await mailbox.receive(
        message(sender="dana@example.test", to=mailbox.address, subject="Re: Thursday?")
    )
    clock.advance(timedelta(minutes=1))
    await watcher.poll_once(con, source(mailbox))
    await scheduler.tick()
    await worker.run_until_idle()
    done = await mailbox.svc.get_task(task.id)
    assert done.status is TaskStatus.SUCCEEDED
    [(_, drafted)] = await mailbox.folder("Drafts")
    assert b"Subject: Re: Thursday?" in drafted
    assert await mailbox.svc.list_approvals(person_id=mailbox.person_id) == []  # nothing sent


async def test_a_wrong_password_is_a_failure_the_watcher_backs_off_from(
    mailbox: Mailbox,
) -> None:
    con = await mailbox.connect(password="wrong")
    watcher = Watcher(env=mailbox.env, holder="w1")
    assert await watcher.poll_once(con, source(mailbox)) == 1
    state = await mailbox.store.watches.get(con.id, RECEIVED)
    assert state is not None
    assert state.last_error == (
        f"127.0.0.1 refused the sign-in as {mailbox.user}: the password is wrong or has "
        "expired, or the account does not allow IMAP"
    )


async def test_a_large_message_is_reported_without_fetching_its_body(
    mailbox: Mailbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    con = await mailbox.connect()
    watcher = Watcher(env=mailbox.env, holder="w1")
    watch = source(mailbox)
    assert await watcher.poll_once(con, watch) == 0
    fetched: list[str] = []
    raw = IMAPAccount.raw

    async def counted(self: IMAPAccount, ref: MessageRef) -> bytes:
        fetched.append(ref.text())
        return await raw(self, ref)

    monkeypatch.setattr(IMAPAccount, "raw", counted)
    big = "x" * (SNIPPET_BYTES + 1)
    await mailbox.receive(
        message(sender="a@example.test", to=mailbox.address, subject="Big", body=big)
    )
    await mailbox.receive(message(sender="b@example.test", to=mailbox.address, subject="Small"))
    assert await watcher.poll_once(con, watch) == 0
    large, small = await events(mailbox)
    assert (large.payload["subject"], large.payload["snippet"]) == ("Big", "")
    assert (small.payload["subject"], small.payload["snippet"]) == ("Small", "Hello")
    assert fetched == [small.payload["message"]]


async def test_whether_the_server_idles_is_learned_by_waiting(mailbox: Mailbox) -> None:
    """has_idle() answers from what idle() learned in the account's thread; it never asks the
    server from the event loop (even with the connection gone)."""
    con = await mailbox.connect()
    acct = await open_mailbox(mailbox.env, con)
    async with acct:
        assert not acct.has_idle()  # not asked yet
        assert not await acct.idle("INBOX", 0.1, newer_than=None)  # nothing came
    assert acct.has_idle()


async def test_a_backlog_is_read_poll_after_poll_without_waiting(
    mailbox: Mailbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More new mail than one poll reports: the wait after it ends at once (the simulated
    clock stands still and no mail arrives: without that, IDLE would hold it for minutes)."""
    monkeypatch.setattr(received, "PER_POLL", 2)
    con = await mailbox.connect()
    watch = source(mailbox)
    cursor = (await watch.poll(con, None)).cursor
    for n in range(3):
        await mailbox.receive(message(sender="a@example.test", to=mailbox.address, subject=f"{n}"))
    first = await watch.poll(con, cursor)
    assert [f.payload["subject"] for f in first.found] == ["0", "1"]
    await asyncio.wait_for(watch.wait(con, 600), scaled(30))
    second = await watch.poll(con, first.cursor)
    assert [f.payload["subject"] for f in second.found] == ["2"]
    waiting = asyncio.create_task(watch.wait(con, 600))  # caught up: IDLE until mail comes
    await asyncio.sleep(0.5)
    assert not waiting.done()
    await mailbox.receive(message(sender="a@example.test", to=mailbox.address, subject="3"))
    await asyncio.wait_for(waiting, scaled(30))
