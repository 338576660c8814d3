"""A proposed call is shown to the person as one plain sentence — its tool's own summary — in
the approval, its notification and the feed; the exact tool and arguments stay one tap away."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from steward.domain.actions import EffectClass
from steward.domain.clock import SimulatedClock
from steward.domain.roles import Role
from steward.harness.agent import AgentHarness
from steward.harness.tools import SUMMARY_CHARS, tool
from steward.harness.workspace import Workspace
from steward.models import ScriptedModel
from steward.models.scripted import call_tool
from steward.sentinel.defaults import DefaultSentinel
from steward.store import Store
from support.agents import agent_worker, person_with_api


def describe_send(args: Mapping[str, Any]) -> str:
    return f"Send an email to {args['to']} — '{args['subject']}' — {args['body']}"


@tool(effect=EffectClass.EXTERNAL, summarize=describe_send)
async def send_mail(
    to: Annotated[str, Role.RECIPIENT],
    subject: Annotated[str, Role.FREE_TEXT],
    body: Annotated[str, Role.CONTENT],
) -> str:
    """Send an email."""
    return "sent"


def test_a_summary_is_one_line_and_cut_at_a_word() -> None:
    short = send_mail.summary({"to": "dana@example.test", "subject": "Re: Thursday?", "body": "ok"})
    assert short == "Send an email to dana@example.test — 'Re: Thursday?' — ok"
    long = send_mail.summary(
        {"to": "dana@example.test", "subject": "Notes", "body": "word \n\n " * 200}
    )
    assert "\n" not in long
    assert len(long) <= SUMMARY_CHARS
    assert long.endswith("word…")


def test_without_a_describer_or_when_it_fails_the_call_itself_is_shown() -> None:
    @tool
    async def ping(host: str, count: int = 1) -> str:
        """Ping."""
        return "pong"

    assert (
        ping.summary({"host": "example.test", "count": 2}) == "ping(host='example.test', count=2)"
    )
    # a describer that breaks on odd arguments must not stop the person from being asked
    assert send_mail.summary({"to": "dana@example.test"}) == "send_mail(to='dana@example.test')"


async def test_the_approval_and_its_notification_lead_with_the_summary(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    args = {"to": "dana@example.test", "subject": "Re: Thursday?", "body": "Thursday at 10 works"}
    harness = AgentHarness(
        model=ScriptedModel([call_tool("send_mail", **args)]),
        workspace=Workspace(tmp_path),
        tools=[send_mail],
        sentinel=DefaultSentinel(),
    )
    svc, person = await person_with_api(store, clock)
    await svc.ask_agent(person_id=person, instructions="answer Dana")
    await agent_worker(store, harness, clock).run_until_idle()
    [approval] = await svc.list_approvals(person_id=person)
    expected = "Send an email to dana@example.test — 'Re: Thursday?' — Thursday at 10 works"
    assert approval.summary == expected
    assert approval.headline == expected
    assert (approval.tool, approval.args) == ("send_mail", args)  # the exact call, kept
    notes = [n for n in await svc.list_notifications(person_id=person) if n.kind == "approval"]
    assert [n.title for n in notes] == [f"Approve? {expected}"]
    assert "{" not in notes[0].title  # no JSON in what the person reads first
