"""A week of inbox triage, end to end on Dovecot and the SMTP server with the scripted model:
each new message is seen once by the watch and starts one agent task through the person's
event trigger; the agent archives the shop's newsletters and drafts an answer to Sam without
asking (the person's own mailbox), and asks before sending Dana a reply — the approval reads as
one sentence and says where Dana's address came from; approved, the reply is sent once."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import timedelta

from steward.connectors.mail.connector import CONNECTOR
from steward.connectors.mail.received import RECEIVED
from steward.connectors.watch import Watcher
from steward.domain import TaskSpec, TaskStatus, TriggerKind
from steward.harness.agent import AgentHarness
from steward.models import Message, ModelResponse, ScriptedModel, ToolSpec
from steward.models.scripted import call_tool
from steward.runtime.scheduler import Scheduler
from steward.sentinel.policy import PolicySentinel
from support.agents import agent_worker
from support.mailbox import Mailbox
from support.mailserver import message

EM = "\N{EM DASH}"
SORT = "Sort this new email: archive newsletters, draft answers to people, answer Dana."


def _field(name: str, text: str) -> str:
    found = re.search(rf'"{name}": "((?:[^"\\]|\\.)*)"', text)
    assert found is not None, f"no {name} in {text[:300]}"
    return str(json.loads(f'"{found.group(1)}"'))


def triage(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
    """The agent: reads the email its task was started for from the conversation, then acts
    on it by who sent it."""
    told = next(m.content for m in messages if m.content and RECEIVED in m.content)
    sender, ref, subject = _field("from", told), _field("message", told), _field("subject", told)
    done = [c.name for m in messages if m.role == "assistant" for c in m.tool_calls]
    if sender.endswith("@shop.test"):
        if not done:
            return call_tool("mail_archive", messages=[ref], sender=sender)
        return call_tool("finish", result="archived a newsletter")
    if not done:
        return call_tool("mail_read", message=ref)
    answer = {"to": [sender], "subject": subject, "mode": "reply", "message": ref}
    if sender.startswith("dana@"):
        if done == ["mail_read"]:
            return call_tool("mail_send", body="Hi Dana, Thursday at 10:00 works", **answer)
        return call_tool("finish", result="answered Dana")
    if done == ["mail_read"]:
        return call_tool("mail_draft", body="Yes, I'll bring dessert.", **answer)
    return call_tool("finish", result="drafted an answer")


async def test_a_week_of_mail_is_sorted_and_dana_answered_once(mailbox: Mailbox) -> None:
    con = await mailbox.connect()
    store, clock, svc, me = mailbox.store, mailbox.clock, mailbox.svc, mailbox.address
    await svc.add_trigger(
        person_id=mailbox.person_id,
        kind=TriggerKind.EVENT,
        spec=RECEIVED,
        task=TaskSpec(kind="agent", input={"instructions": SORT}),
    )
    watch = next(s for s in CONNECTOR.sources(mailbox.env) if s.name == RECEIVED)
    watcher = Watcher(env=mailbox.env, holder="watcher")
    await mailbox.receive(message(sender="old@shop.test", to=me, subject="From before"))
    assert await watcher.poll_once(con, watch) == 0  # takes stock: old mail starts nothing
    harness = AgentHarness(
        model=ScriptedModel(triage),
        workspace=mailbox.env.workspace,
        tools=CONNECTOR.tools(mailbox.env),
        sentinel=PolicySentinel(store, clock),
    )
    worker = agent_worker(store, harness, clock)
    arrivals = {
        1: message(sender="sam@family.test", to=me, subject="Dinner on Sunday"),
        3: message(
            sender="Dana <dana@example.test>",
            to=me,
            subject="Thursday?",
            body="Does Thursday at 10:00 work?",
            message_id="<ask@example.test>",
        ),
    }
    for day in range(7):
        await mailbox.receive(message(sender="news@shop.test", to=me, subject=f"Deals {day}"))
        if day in arrivals:
            await mailbox.receive(arrivals[day])
        assert await watcher.poll_once(con, watch) == 0
        assert await watcher.poll_once(con, watch) == 0  # nothing new: nothing repeated
        await Scheduler(store, clock).tick()  # routes the events to the trigger
        await worker.run_until_idle()
        clock.advance(timedelta(days=1))

    found = await store.schedule.list_events(person_id=mailbox.person_id)
    assert len([e for e in found if e.type == RECEIVED]) == 9  # one per message
    tasks = await store.tasks.list_tasks(person_id=mailbox.person_id, kind="agent")
    assert len(tasks) == 9
    # Dana's waits for the person
    assert [t.status for t in tasks].count(TaskStatus.SUCCEEDED) == 8

    inbox = [m for _, m in await mailbox.folder("INBOX")]
    assert not any(b"Deals" in m for m in inbox)  # every newsletter archived, without asking
    assert len([m for _, m in await mailbox.folder("Archive") if b"Deals" in m]) == 7
    [(_, draft)] = await mailbox.folder("Drafts")
    assert b"Subject: Re: Dinner on Sunday" in draft
    assert b"Yes, I'll bring dessert." in draft
    assert not any(a.login == mailbox.user for a in mailbox.server.accepted)  # nothing sent

    [approval] = await svc.list_approvals(person_id=mailbox.person_id)
    assert approval.summary == (
        f'Send a reply to dana@example.test {EM} "Re: Thursday?" {EM} '
        "Hi Dana, Thursday at 10:00 works"
    )
    origins = await svc.approval_origins(approval)
    assert any("dana@example.test" in why for why in origins.values()), origins

    await svc.decide_approval(approval.id, approve=True, decided_by="test")
    await worker.run_until_idle()
    for task in tasks:
        assert (await svc.get_task(task.id)).status is TaskStatus.SUCCEEDED
    sent = [a for a in mailbox.server.accepted if a.login == mailbox.user]
    assert len(sent) == 1
    [reply] = [m for _, m in await mailbox.folder("INBOX", user="dana") if me.encode() in m]
    assert b"In-Reply-To: <ask@example.test>" in reply
    assert b"Hi Dana, Thursday at 10:00 works" in reply
