"""The ``report`` control tool: the agent's report is stored once per step, placed by the goal's
policy (the model is told where it went), and bad reports are refused with the reason."""

from __future__ import annotations

from steward.domain import Person, TaskSpec, TaskStatus
from steward.domain.channel import Channel, ChannelKind
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.domain.report import ReportState
from steward.harness.agent import AgentHarness
from steward.harness.workspace import Workspace
from steward.models import ScriptedModel
from steward.models.scripted import call_tool
from steward.store import Store
from support.agents import agent_worker


async def test_reports_follow_the_goal_policy_and_bad_ones_are_explained(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    await store.channels.add(
        Channel(
            id=new_id("chn"),
            person_id=person.id,
            kind=ChannelKind.APPRISE,
            name="phone",
            created_at=clock.now(),
        )
    )
    model = ScriptedModel(
        [
            call_tool("report", what="", importance="info"),
            call_tool("report", what="The price dropped", importance="actionable"),
            call_tool("report", what="x" * 400),
            call_tool(
                "report",
                what="The laptop is 899 euros, down from 999",
                why="Below your 900 limit.",
                todo="Say if I should order it.",
                importance="actionable",
            ),
            call_tool("report", what="Checked two more shops", importance="info"),
            call_tool("finish", result="Reported."),
        ]
    )
    goal = await store.goals.create_goal(
        person_id=person.id, title="Laptop price", now=clock.now(), report_policy="actionable"
    )
    task = await store.tasks.create_task(
        TaskSpec(kind="agent", input={"instructions": "Watch the price"}),
        person_id=person.id,
        goal_id=goal.id,
        now=clock.now(),
    )
    worker = agent_worker(store, AgentHarness(model=model, workspace=workspace), clock)
    assert await worker.run_until_idle() == 1
    assert (await store.tasks.get_task(task.id)).status is TaskStatus.SUCCEEDED
    observed = [str(m.content) for m in model.requests[5][0]]
    assert any("must say what happened" in text for text in observed)
    assert any("must say what the person should do" in text for text in observed)
    assert any("keep it to one sentence" in text for text in observed)
    assert any("reported: it goes to the person now" in text for text in observed)
    assert any("reported: it goes in the person's daily digest" in text for text in observed)
    found = {r.importance: r for r in await store.reports.list_for(person.id)}
    assert set(found) == {"info", "actionable"}
    info, actionable = found["info"], found["actionable"]
    assert (actionable.what, actionable.todo) == (
        "The laptop is 899 euros, down from 999",
        "Say if I should order it.",
    )
    assert (actionable.origin, actionable.task_id, actionable.goal_id) == (
        "agent",
        task.id,
        goal.id,
    )
    assert actionable.state is ReportState.PENDING
    assert info.state is ReportState.DIGEST
    [delivery] = await store.deliveries.list_for(person_id=person.id)
    assert delivery.ref == actionable.id
    assert delivery.message.body.splitlines() == [
        "Below your 900 limit.",
        "What to do: Say if I should order it.",
        "Goal: Laptop price",
    ]
