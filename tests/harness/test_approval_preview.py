"""A tool's preview of a call the person must approve: gathered in the call's own context
before asking (a picture written in the workspace, labelled facts), kept on the approval and
carried by its notification; a replayed step does not take a second picture; a preview that
refuses asks nothing and tells the model; one that breaks still lets the person decide on the
sentence."""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import asdict, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

from steward.connectors.mail.channel import approval_body
from steward.connectors.matrix.room import plain_text
from steward.domain import Approval, ApprovalPreview, ApprovalStatus, Notification, TaskStatus
from steward.domain.actions import EffectClass
from steward.domain.channel import Channel, ChannelKind, OutboundMessage
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.domain.roles import Role
from steward.harness.agent import AgentHarness
from steward.harness.tools import Tool, ToolContext, ToolError, tool
from steward.harness.workspace import Workspace
from steward.models import ScriptedModel
from steward.models.scripted import call_tool
from steward.sentinel.defaults import DefaultSentinel
from steward.service import Service
from steward.store import Fence, Store
from steward.store.inbox import InboxRepository
from support.agents import agent_worker
from support.pictures import png

ORDER = {"shop": "shop.example", "item": "Blue kettle", "total": "39.90"}


class Shop:
    """A tool whose preview writes a real PNG in the workspace, and counts its looks."""

    def __init__(self) -> None:
        self.looks: list[ToolContext] = []
        self.placed: list[dict[str, Any]] = []
        self.preview_fails: Exception | None = None

    async def preview(self, args: dict[str, Any], ctx: ToolContext) -> ApprovalPreview:
        self.looks.append(ctx)
        if self.preview_fails is not None:
            raise self.preview_fails
        picture = png(8, 6, (20, 120, 40 + len(self.looks)))  # each look its own picture
        relative = f"previews/{ctx.task_id}/look-{len(self.looks)}.png"
        path = ctx.workspace / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(picture)
        return ApprovalPreview(
            picture=relative,
            picture_sha256=hashlib.sha256(picture).hexdigest(),
            facts=(
                ("Site", args["shop"]),
                ("Item", args["item"]),
                ("Total", f"{args['total']} EUR"),
                ("Note", "ring\u202e twice\n\nplease " + "x" * 400),  # tidied and cut
            ),
        )

    def tool(self) -> Tool:
        @tool(effect=EffectClass.EXTERNAL, preview=self.preview)
        async def place_order(
            shop: Annotated[str, Role.HOST],
            item: Annotated[str, Role.FREE_TEXT],
            total: Annotated[str, Role.AMOUNT],
        ) -> str:
            """Place an order in a web shop."""
            self.placed.append({"shop": shop, "item": item, "total": total})
            return "order placed"

        return place_order


def harness(shop: Shop, workspace: Path, *calls: Any) -> tuple[AgentHarness, ScriptedModel]:
    model = ScriptedModel(list(calls))
    return (
        AgentHarness(
            model=model,
            workspace=Workspace(workspace),
            tools=[shop.tool()],
            sentinel=DefaultSentinel(),
        ),
        model,
    )


async def started(store: Store, clock: SimulatedClock) -> tuple[Service, str, str]:
    svc = Service(store, clock)
    person = await svc.ensure_person()
    task = await svc.ask_agent(person_id=person.id, instructions="buy the kettle")
    return svc, person.id, task.id


async def test_the_approval_carries_the_tools_preview_and_its_notification_the_facts(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    shop = Shop()
    agent, _ = harness(
        shop,
        tmp_path,
        call_tool("place_order", **ORDER),
        call_tool("finish", result="ordered"),
    )
    svc, person, task = await started(store, clock)
    await agent_worker(store, agent, clock).run_until_idle()

    [approval] = await svc.list_approvals(person_id=person)
    [look] = shop.looks
    # the preview ran where the call would run: the same person, task and workspace
    assert (look.person_id, look.task_id) == (person, task)
    assert look.workspace == Workspace(tmp_path).person_dir(person)
    assert not look.read_only
    preview = approval.preview
    assert preview is not None
    assert preview.picture == f"previews/{task}/look-1.png"
    stored = (look.workspace / preview.picture).read_bytes()
    assert preview.picture_sha256 == hashlib.sha256(stored).hexdigest()
    assert preview.facts[:3] == (
        ("Site", "shop.example"),
        ("Item", "Blue kettle"),
        ("Total", "39.90 EUR"),
    )
    _label, note = preview.facts[3]
    assert note.startswith("ring twice please xxx")  # one plain line, no invisible override
    assert len(note) == 300
    assert note.endswith("…")
    assert shop.placed == []  # nothing happened yet

    [notice] = [n for n in await svc.list_notifications(person_id=person) if n.kind == "approval"]
    why, facts = notice.body.split("\n\n")
    assert why
    assert "Site" not in why
    lines = facts.split("\n")
    assert lines[:3] == ["Site: shop.example", "Item: Blue kettle", "Total: 39.90 EUR"]
    assert lines[3].startswith("Note: ring twice please x")
    assert len(lines[3]) < 140

    await svc.decide_approval(approval.id, approve=True)
    await agent_worker(store, agent, clock).run_until_idle()
    assert (await svc.get_task(task)).status is TaskStatus.SUCCEEDED
    assert shop.placed == [{"shop": "shop.example", "item": "Blue kettle", "total": "39.90"}]
    assert len(shop.looks) == 1  # approved and run: the preview is not asked again


async def test_channels_carry_the_facts_after_the_reason_and_link_the_page_with_the_picture(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    shop = Shop()
    agent, _ = harness(shop, tmp_path, call_tool("place_order", **ORDER))
    svc, person, _ = await started(store, clock)
    await store.channels.add(
        Channel(
            id=new_id("chn"),
            person_id=person,
            kind=ChannelKind.EMAIL,
            name="email",
            config={"connection": "con_x", "address": "ada@example.test"},
            created_at=clock.now(),
        )
    )
    await agent_worker(store, agent, clock).run_until_idle()
    [approval] = await svc.list_approvals(person_id=person)
    [delivery] = await store.deliveries.list_for(ref=approval.id)
    message = OutboundMessage(
        key=delivery.key, person_id=person, **asdict(delivery.message)
    )  # as the dispatcher hands it to a channel
    assert message.link == f"/inbox/{approval.id}"  # the page that shows the picture
    mail = approval_body(message, "st-token", "https://steward.home.example")
    chat = plain_text(message, "https://steward.home.example")
    for text in (mail, chat, message.body):  # Apprise and Web Push send the body as it is
        assert "Site: shop.example\nItem: Blue kettle\nTotal: 39.90 EUR\n" in text
        assert text.index("acts on the world") < text.index("Site: shop.example")
    for text in (mail, chat):
        assert text.index("Total: 39.90 EUR") < text.index("Reply")
        assert f"https://steward.home.example/inbox/{approval.id}" in text


class LosesTheAnswer(InboxRepository):
    """Records the approval, then loses the database's answer once (as a dropped connection
    would): the activation fails after the approval exists, and the step is replayed."""

    lost = 0

    async def request_approval(
        self,
        fence: Fence,
        approval: Approval,
        notification: Notification,
        *,
        lease_now: datetime | None = None,
    ) -> Approval:
        recorded = await super().request_approval(
            fence, approval, notification, lease_now=lease_now
        )
        if not self.lost:
            self.lost += 1
            raise ConnectionResetError("connection lost after the approval was written")
        return recorded


async def test_a_replayed_step_reuses_the_approval_and_takes_no_second_picture(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    shop = Shop()
    agent, _ = harness(shop, tmp_path, call_tool("place_order", **ORDER))
    svc, person, task = await started(store, clock)
    flaky = LosesTheAnswer(store.backend)
    store.inbox = flaky
    worker = agent_worker(store, agent, clock)
    await worker.run_until_idle()
    assert flaky.lost == 1
    assert (await svc.get_task(task)).status is not TaskStatus.WAITING  # to be tried again
    clock.advance(timedelta(minutes=5))  # past the retry's back-off
    await worker.run_until_idle()

    assert (await svc.get_task(task)).status is TaskStatus.WAITING
    [approval] = await svc.list_approvals(person_id=person)
    assert len(shop.looks) == 1
    assert approval.preview is not None
    assert approval.preview.picture == f"previews/{task}/look-1.png"


async def test_a_preview_that_refuses_asks_nothing_and_tells_the_model(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    shop = Shop()
    shop.preview_fails = ToolError("the order page is gone: open the cart again")
    agent, _model = harness(
        shop,
        tmp_path,
        call_tool("place_order", **ORDER),
        call_tool("finish", result="could not order"),
    )
    svc, person, task = await started(store, clock)
    await agent_worker(store, agent, clock).run_until_idle()

    assert await svc.list_approvals(person_id=person, status=None) == []
    assert [n for n in await svc.list_notifications(person_id=person) if n.kind == "approval"] == []
    assert (await svc.get_task(task)).status is TaskStatus.SUCCEEDED
    told = [
        s.output
        for s in await store.activations.list_steps(task)
        if s.kind == "tool" and s.output.get("name") == "place_order"
    ]
    assert told == [
        {
            "call_id": told[0]["call_id"],
            "name": "place_order",
            "observation": "error: the order page is gone: open the cart again",
            "error": True,
        }
    ]
    assert shop.placed == []


async def test_a_preview_that_takes_too_long_asks_nothing(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    shop = Shop()
    slow_tool = shop.tool()

    async def never(args: dict[str, Any], ctx: ToolContext) -> ApprovalPreview:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    agent = AgentHarness(
        model=ScriptedModel(
            [call_tool("place_order", **ORDER), call_tool("finish", result="gave up")]
        ),
        workspace=Workspace(tmp_path),
        tools=[replace(slow_tool, preview=never, timeout_seconds=0.2)],
        sentinel=DefaultSentinel(),
    )
    svc, person, task = await started(store, clock)
    await agent_worker(store, agent, clock).run_until_idle()
    assert await svc.list_approvals(person_id=person, status=None) == []
    [step] = [
        s
        for s in await store.activations.list_steps(task)
        if s.kind == "tool" and s.output.get("name") == "place_order"
    ]
    assert step.output["error"] is True
    assert "could not show the person what it would do" in step.output["observation"]


async def test_a_preview_that_breaks_still_asks_the_person_on_the_sentence(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    shop = Shop()
    shop.preview_fails = RuntimeError("the screenshot library crashed")
    agent, _ = harness(shop, tmp_path, call_tool("place_order", **ORDER))
    svc, person, _ = await started(store, clock)
    await agent_worker(store, agent, clock).run_until_idle()
    [approval] = await svc.list_approvals(person_id=person)
    assert approval.status is ApprovalStatus.PENDING
    assert approval.preview is None
    assert "shop.example" in approval.summary
