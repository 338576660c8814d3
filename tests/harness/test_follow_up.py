"""The ``follow_up`` control tool: it stores a follow-up on the task's goal (once, however the
step is replayed), and refuses a task without a goal and a time already past, telling the
model why."""

from __future__ import annotations

from datetime import timedelta

from steward.domain import Person, TaskSpec, TaskStatus
from steward.domain.clock import SimulatedClock
from steward.harness.agent import AgentHarness
from steward.harness.workspace import Workspace
from steward.models import ScriptedModel
from steward.models.scripted import call_tool
from steward.store import Store
from support.agents import agent_worker


async def test_follow_up_is_stored_on_the_goal_and_bad_ones_are_explained(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    friday = clock.now() + timedelta(days=4)
    model = ScriptedModel(
        [
            call_tool("follow_up", at=(clock.now() - timedelta(hours=1)).isoformat(), note="x"),
            call_tool("follow_up", at=friday.replace(tzinfo=None).isoformat(), note="x"),
            call_tool("follow_up", at=friday.isoformat(), note="Chase the quote"),
            call_tool("finish", result="Follow-up set."),
            call_tool("follow_up", at=friday.isoformat(), note="Chase the quote"),
            call_tool("finish", result="No goal."),
        ]
    )
    goal = await store.goals.create_goal(person_id=person.id, title="Roof", now=clock.now())
    with_goal = await store.tasks.create_task(
        TaskSpec(kind="agent", input={"instructions": "Plan"}),
        person_id=person.id,
        goal_id=goal.id,
        now=clock.now(),
    )
    worker = agent_worker(store, AgentHarness(model=model, workspace=workspace), clock)
    assert await worker.run_until_idle() == 1
    assert (await store.tasks.get_task(with_goal.id)).status is TaskStatus.SUCCEEDED
    observed = [str(m.content) for m in model.requests[3][0]]
    assert any("already passed" in text for text in observed)
    assert any("needs a UTC offset" in text for text in observed)
    # the goal has no heartbeat: the model is told nothing will wake it
    assert "no heartbeat switched on" in str(model.requests[3][0][-1].content)
    [follow_up] = await store.heartbeats.list_follow_ups(goal.id)
    assert (follow_up.due_at, follow_up.note, follow_up.task_id) == (
        friday,
        "Chase the quote",
        with_goal.id,
    )
    assert follow_up.id.endswith(".0")  # keyed by the step and a counter, not the call id

    no_goal = await store.tasks.create_task(
        TaskSpec(kind="agent", input={"instructions": "Plan"}),
        person_id=person.id,
        goal_id=None,
        now=clock.now(),
    )
    assert await worker.run_until_idle() == 1
    assert (await store.tasks.get_task(no_goal.id)).status is TaskStatus.SUCCEEDED
    assert any("belong to a goal" in str(m.content) for m in model.requests[5][0])
