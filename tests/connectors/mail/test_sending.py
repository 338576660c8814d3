"""Sending, end to end on Dovecot and the SMTP server: the agent reads Dana's question, the
person approves the reply as one sentence, and it is sent exactly once although the worker dies
right after the SMTP server accepted it (the recovered task finds the message in Sent by its
Message-ID instead of sending again). A copy left marked as being sent is in doubt, never sent
again blindly. A read-only connection cannot send, and a connection bound to domains holds."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from steward import sendby
from steward.connectors.mail import access
from steward.connectors.mail.connector import CONNECTOR
from steward.connectors.mail.imap import IMAPAccount
from steward.connectors.mail.message import message_id_for
from steward.connectors.mail.sending import SENDING
from steward.domain import EffectStatus, TaskStatus
from steward.errors import NotSent
from steward.harness.agent import AgentHarness
from steward.harness.tools import Tool, ToolContext
from steward.models.scripted import ScriptedModel, call_tool
from steward.runtime.scheduler import Scheduler
from steward.sentinel.policy import PolicySentinel
from support.agents import agent_worker
from support.mailbox import Mailbox
from support.mailserver import message
from support.startup import scaled

LEASE = 30.0
EM = "\N{EM DASH}"


class Died(BaseException):
    """The worker process is gone (nothing absorbs a BaseException)."""


def mark_sending(box: Mailbox) -> None:
    client = box.server.imap(box.user)
    client.select("Sent")
    client.store("1", "+FLAGS", f"({SENDING})")
    client.logout()


def harness(box: Mailbox, model: ScriptedModel, tools: list[Tool] | None = None) -> AgentHarness:
    return AgentHarness(
        model=model,
        workspace=box.env.workspace,
        tools=tools or CONNECTOR.tools(box.env),
        sentinel=PolicySentinel(box.store, box.clock),
    )


async def test_a_reply_is_approved_as_a_sentence_and_sent_once_across_a_crash(
    mailbox: Mailbox,
) -> None:
    await mailbox.connect()
    store, clock, svc = mailbox.store, mailbox.clock, mailbox.svc
    await mailbox.receive(
        message(
            sender="Dana <dana@example.test>",
            to=mailbox.address,
            subject="Thursday?",
            body="Does Thursday at 10:00 work?",
            message_id="<ask@example.test>",
        )
    )
    tools = CONNECTOR.tools(mailbox.env)
    search = next(t for t in tools if t.name == "mail_search")
    ctx = ToolContext(
        person_id=mailbox.person_id,
        task_id="peek",
        goal_id=None,
        idempotency_key=None,
        workspace=mailbox.env.workspace.root,
        now=clock.now(),
    )
    [question] = (await search.invoke(search.validate({"subject": "Thursday"}), ctx))["messages"]
    reply = {
        "to": ["dana@example.test"],
        "subject": "Thursday?",
        "body": "Hi Dana, Thursday at 10:00 works",
        "mode": "reply",
        "message": question["message"],
    }
    model = ScriptedModel(
        [
            call_tool("mail_read", message=question["message"]),
            call_tool("mail_send", **reply),
            call_tool("finish", result="answered"),
        ]
    )
    keys: list[str | None] = []
    send = next(t for t in tools if t.name == "mail_send")

    async def send_then_die(args: dict[str, Any], ctx: ToolContext) -> Any:
        keys.append(ctx.idempotency_key)
        result = await send.invoke(args, ctx)
        if len(keys) == 1:
            raise Died  # the SMTP server accepted it; the worker never recorded it
        return result

    crashing = harness(
        mailbox,
        model,
        [replace(send, invoke=send_then_die) if t is send else t for t in tools],
    )
    task = await svc.ask_agent(person_id=mailbox.person_id, instructions="Answer Dana")
    worker = agent_worker(store, crashing, clock)
    await worker.run_until_idle()

    [approval] = await svc.list_approvals(person_id=mailbox.person_id)
    assert approval.summary == (
        f'Send a reply to dana@example.test {EM} "Re: Thursday?" {EM} '
        "Hi Dana, Thursday at 10:00 works"
    )
    [read] = [s.output for s in await svc.steps(task.id) if s.kind == "tool"]
    assert read["name"] == "mail_read"  # read without asking
    assert json.loads(read["observation"])["text"] == "Does Thursday at 10:00 work?"

    await svc.decide_approval(approval.id, approve=True, decided_by="test")
    await worker.run_until_idle()  # the activation dies inside it: its task stays claimed
    assert (await svc.get_task(task.id)).status is TaskStatus.RUNNING
    clock.advance(timedelta(seconds=LEASE + 1))  # the dead worker's lease lapses
    await Scheduler(store, clock).tick()
    await agent_worker(store, crashing, clock).run_until_idle()

    assert (await svc.get_task(task.id)).status is TaskStatus.SUCCEEDED
    assert len(keys) == 1  # reconciled from Sent, not sent again
    [effect] = await store.effects.list_effects(task_id=task.id)
    assert effect.status is EffectStatus.SUCCEEDED
    assert keys[0] is not None
    sent_id = message_id_for(keys[0], mailbox.address)
    assert effect.result["message_id"] == sent_id
    taken = [a for a in mailbox.server.accepted if sent_id.encode() in a.data]
    assert len(taken) == 1  # the SMTP server received it exactly once
    [(flags, _)] = await mailbox.folder("Sent")
    assert SENDING.encode() not in flags
    arrived = [m for _, m in await mailbox.folder("INBOX", user="dana") if sent_id.encode() in m]
    assert len(arrived) == 1
    assert b"In-Reply-To: <ask@example.test>" in arrived[0]


async def test_reconcile_tells_sent_from_not_sent_and_never_guesses(mailbox: Mailbox) -> None:
    await mailbox.connect()
    send = next(t for t in CONNECTOR.tools(mailbox.env) if t.name == "mail_send")
    assert send.reconcile is not None
    ctx = ToolContext(
        person_id=mailbox.person_id,
        task_id="t",
        goal_id=None,
        idempotency_key="k",
        workspace=mailbox.env.workspace.root,
        now=mailbox.clock.now(),
    )
    args = {"to": ["dana@example.test"], "subject": "S", "body": "B"}

    assert await send.reconcile("never-sent", args, ctx) == (False, None)

    stored = message_id_for("crashed-mid-send", mailbox.address)
    raw = message(sender=mailbox.address, to="dana@example.test", subject="S", message_id=stored)
    await mailbox.receive(raw, folder="Sent")
    await asyncio.to_thread(mark_sending, mailbox)
    # stored in Sent, then the crash: whether the server took it is unknown
    assert await send.reconcile("crashed-mid-send", args, ctx) is None

    done = message_id_for("sent", mailbox.address)
    await mailbox.receive(
        message(sender=mailbox.address, to="dana@example.test", subject="S", message_id=done),
        folder="Sent",
    )
    applied = await send.reconcile("sent", args, ctx)
    assert applied is not None
    assert applied[0] is True
    assert applied[1]["message_id"] == done


async def test_a_read_only_connection_cannot_send(mailbox: Mailbox) -> None:
    await mailbox.connect(scopes=("mail.read",))
    model = ScriptedModel(
        [
            call_tool("mail_send", to=["dana@example.test"], subject="Hi", body="Hello"),
            call_tool("finish", result="could not send"),
        ]
    )
    task = await mailbox.svc.ask_agent(person_id=mailbox.person_id, instructions="Say hi")
    await agent_worker(mailbox.store, harness(mailbox, model), mailbox.clock).run_until_idle()
    assert (await mailbox.svc.get_task(task.id)).status is TaskStatus.SUCCEEDED
    assert await mailbox.svc.list_approvals(person_id=mailbox.person_id) == []
    refused, _ = [s.output for s in await mailbox.svc.steps(task.id) if s.kind == "tool"]
    assert refused["observation"] == "denied: your connection 'Mail' does not allow mail.send"
    assert await mailbox.store.effects.list_effects(task_id=task.id) == []
    assert all(a.login != mailbox.user for a in mailbox.server.accepted)
    assert await mailbox.folder("Sent") == []


async def test_a_connection_bound_to_a_domain_holds(mailbox: Mailbox) -> None:
    await mailbox.connect(domains=["example.test"])
    model = ScriptedModel(
        [
            call_tool("mail_send", to=["eve@elsewhere.test"], subject="Hi", body="Hello"),
            call_tool("mail_send", to=["dana@example.test"], subject="Hi", body="Hello"),
            call_tool("finish", result="done"),
        ]
    )
    task = await mailbox.svc.ask_agent(person_id=mailbox.person_id, instructions="Say hi")
    await agent_worker(mailbox.store, harness(mailbox, model), mailbox.clock).run_until_idle()
    [denied] = [s.output for s in await mailbox.svc.steps(task.id) if s.kind == "tool"]
    assert denied["observation"] == (
        "denied: your connection 'Mail' may not reach eve@elsewhere.test"
    )
    # within the bound, the send is asked about (sending always is, by default)
    [approval] = await mailbox.svc.list_approvals(person_id=mailbox.person_id)
    assert approval.summary.startswith("Send an email to dana@example.test")


async def test_a_crash_after_the_copy_was_stored_leaves_the_send_to_the_person(
    mailbox: Mailbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker dies after storing the Sent copy (marked as being sent), before the SMTP
    server answered: nobody can tell whether it went out, so the recovered task does not send
    again on its own; the effect is in doubt and the person decides."""
    await mailbox.connect()
    store, clock, svc = mailbox.store, mailbox.clock, mailbox.svc
    model = ScriptedModel(
        [
            call_tool("mail_send", to=["dana@example.test"], subject="Hi", body="Hello"),
            call_tool("finish", result="sent"),
        ]
    )

    async def dies(*args: Any, **kwargs: Any) -> tuple[str, ...]:
        raise Died

    task = await svc.ask_agent(person_id=mailbox.person_id, instructions="Say hi to Dana")
    worker = agent_worker(store, harness(mailbox, model), clock)
    await worker.run_until_idle()
    [approval] = await svc.list_approvals(person_id=mailbox.person_id)
    await svc.decide_approval(approval.id, approve=True, decided_by="test")
    with monkeypatch.context() as patched:
        patched.setattr(access, "send", dies)  # the process is gone before SMTP answered
        await worker.run_until_idle()
    [(flags, _)] = await mailbox.folder("Sent")
    assert SENDING.encode() in flags

    clock.advance(timedelta(seconds=LEASE + 1))
    await Scheduler(store, clock).tick()
    await agent_worker(store, harness(mailbox, model), clock).run_until_idle()
    [effect] = await store.effects.list_effects(task_id=task.id)
    assert effect.status is EffectStatus.IN_DOUBT
    assert [e.id for e in await svc.in_doubt_effects(mailbox.person_id)] == [effect.id]
    assert all(a.login != mailbox.user for a in mailbox.server.accepted)  # not sent again

    # the person finds it did not arrive: it is sent now, once, and one copy stays in Sent
    await svc.resolve_effect(effect.id, applied=False)
    await Scheduler(store, clock).tick()
    await agent_worker(store, harness(mailbox, model), clock).run_until_idle()
    assert (await svc.get_task(task.id)).status is TaskStatus.SUCCEEDED
    [effect] = await store.effects.list_effects(task_id=task.id)
    assert effect.status is EffectStatus.SUCCEEDED
    sent_id = effect.result["message_id"]
    assert len([a for a in mailbox.server.accepted if sent_id.encode() in a.data]) == 1
    [(flags, copy)] = await mailbox.folder("Sent")
    assert sent_id.encode() in copy
    assert SENDING.encode() not in flags


async def test_a_send_whose_deadline_passed_is_not_sent_and_keeps_no_copy(
    mailbox: Mailbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker may have lost its lease while the tool worked: past the send deadline
    nothing is stored nor handed to the SMTP server, and a copy already stored is taken back."""
    await mailbox.connect()
    ctx = mailbox.context(tmp_path, key="late")
    args = {"to": ["dana@example.test"], "subject": "Hi", "body": "Hello"}
    with sendby.sending_by(sendby.elapsed()), pytest.raises(NotSent):
        await mailbox.call(ctx, "mail_send", **args)
    assert await mailbox.folder("Sent") == []

    stored: list[bool] = []
    append = IMAPAccount.append

    async def append_then_linger(self: IMAPAccount, *args: Any) -> None:
        await append(self, *args)
        stored.append(True)
        # the deadline passes before SMTP is reached
        await asyncio.sleep(deadline - sendby.elapsed() + 0.01)

    monkeypatch.setattr(IMAPAccount, "append", append_then_linger)
    deadline = sendby.elapsed() + scaled(1.0)
    with sendby.sending_by(deadline), pytest.raises(NotSent):
        await mailbox.call(ctx, "mail_send", **args)
    assert stored == [True]
    assert await mailbox.folder("Sent") == []
    assert all(a.login != mailbox.user for a in mailbox.server.accepted)
