"""The browser lives for one harness activation: ``AgentHarness(around=...)`` wraps each
activation in the host's, so the tool that opened the page leaves no Chromium behind once the
task's activation is over."""

from __future__ import annotations

from environment.browser.conftest import RULES, Shop
from environment.browser.test_session import chromium_children, no_chromium_left
from steward.domain import TaskSpec, TaskStatus
from steward.domain.clock import SimulatedClock
from steward.environment.browser.session import BrowserHost
from steward.harness.agent import AgentHarness
from steward.harness.tools import ToolContext, tool
from steward.models.scripted import ScriptedModel, call_tool
from steward.store import Store
from support.agents import agent_worker


async def test_the_activation_closes_the_browser_its_tools_opened(
    store: Store, clock: SimulatedClock, host: BrowserHost, shop: Shop
) -> None:
    seen: list[str] = []

    @tool
    async def look(ctx: ToolContext) -> str:
        """Look at the shop."""
        session = await host.session(ctx.person_id, ctx.task_id, RULES)
        view = await session.open(shop.url + "/")
        seen.append(view.title)
        assert chromium_children()
        return view.title

    person = await store.persons.create_person(name="p", now=clock.now(), max_concurrency=8)
    harness = AgentHarness(
        model=ScriptedModel([call_tool("look"), call_tool("finish", result="seen")]),
        workspace=host.workspace,
        tools=[look],
        around=lambda task: host.activation(task.person_id, task.id),
    )
    spec = TaskSpec(kind="agent", input={"instructions": "look at the shop"})
    task = await store.tasks.create_task(spec, person_id=person.id, now=clock.now())
    await agent_worker(store, harness, clock).run_until_idle()

    assert (await store.tasks.get_task(task.id)).status is TaskStatus.SUCCEEDED
    assert seen == ["Shop"]
    await no_chromium_left()
    assert not host.profiles.in_use(person.id)
