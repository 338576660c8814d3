"""A conversation's audience reaches everything that decides what may be disclosed: the memory
query, the sentinel's request, the model's instructions, and every subtask."""

from __future__ import annotations

import json
from collections.abc import Sequence

from steward.domain import Person, TaskSpec, TaskStatus
from steward.domain.actions import ActionRequest, Decision, EffectClass, Verdict
from steward.domain.audience import PUBLIC, Audience
from steward.domain.clock import SimulatedClock
from steward.domain.personal import MemoryProposal, Recalled, RecallQuery
from steward.harness.agent import AgentHarness
from steward.harness.tools import tool
from steward.harness.workspace import Workspace
from steward.models import Message, ModelResponse, ScriptedModel, ToolSpec
from steward.models.scripted import call_tool
from steward.store import Store
from support.agents import agent_worker

FAMILY = Audience.parse("group:family")


class RecordingContext:
    """Remembers what each activation asked for."""

    def __init__(self) -> None:
        self.queries: list[RecallQuery] = []

    async def recall(self, query: RecallQuery) -> list[Recalled]:
        self.queries.append(query)
        return []

    async def skills(self, query: RecallQuery) -> list[Recalled]:
        return []

    async def propose(self, proposal: MemoryProposal) -> str:
        return "noted"


class RecordingSentinel:
    def __init__(self) -> None:
        self.requests: list[ActionRequest] = []

    async def check(self, request: ActionRequest) -> Decision:
        self.requests.append(request)
        return Decision(verdict=Verdict.ALLOW, reason="recorded", rule="test")


@tool(effect=EffectClass.READ)
async def look(what: str) -> str:
    """Look something up."""
    return f"found {what}"


async def test_a_group_conversation_and_its_subtask_are_heard_by_the_group(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    def script(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
        last = messages[-1]
        if "Find the venue" in messages[1].content:  # the subtask
            if last.role != "tool":
                return call_tool("look", what="venue")
            return call_tool("finish", result="the hall")
        if last.role != "tool":
            return call_tool("spawn_subtask", title="venue", instructions="Find the venue")
        [report] = json.loads(last.content)
        return call_tool("finish", result=f"venue: {report['result']['text']}")

    model = ScriptedModel(script)
    personal, sentinel = RecordingContext(), RecordingSentinel()
    harness = AgentHarness(
        model=model, workspace=workspace, tools=[look], personal=personal, sentinel=sentinel
    )
    spec = TaskSpec(
        kind="agent",
        title="party",
        input={"instructions": "Plan the party", "audience": "group:family"},
    )
    task = await store.tasks.create_task(spec, person_id=person.id, now=clock.now())
    await agent_worker(store, harness, clock).run_until_idle()

    assert (await store.tasks.get_task(task.id)).status is TaskStatus.SUCCEEDED
    [child] = await store.tasks.list_tasks(parent_id=task.id)
    assert child.input["audience"] == "group:family"
    assert {q.audience for q in personal.queries} == {FAMILY}
    assert len(personal.queries) >= 2  # the parent's and the child's activations
    [looked] = [r for r in sentinel.requests if r.tool == "look"]
    assert (looked.task_id, looked.audience) == (child.id, FAMILY)
    for messages, _ in model.requests:
        assert "Audience: a group conversation." in messages[0].content


async def test_an_unreadable_audience_is_treated_as_public_down_the_tree(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """Input written around the facade with a garbled audience fails closed: the task and its
    subtask are treated as public."""

    def script(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
        if "Child" in messages[1].content:
            return call_tool("finish", result="ok")
        if messages[-1].role != "tool":
            return call_tool("spawn_subtask", title="c", instructions="Child")
        return call_tool("finish", result="done")

    model = ScriptedModel(script)
    personal = RecordingContext()
    harness = AgentHarness(model=model, workspace=workspace, personal=personal)
    spec = TaskSpec(kind="agent", title="t", input={"instructions": "go", "audience": "??"})
    task = await store.tasks.create_task(spec, person_id=person.id, now=clock.now())
    await agent_worker(store, harness, clock).run_until_idle()

    [child] = await store.tasks.list_tasks(parent_id=task.id)
    assert child.input["audience"] == "public"
    assert {q.audience for q in personal.queries} == {PUBLIC}
    assert all("Audience: the public." in m[0].content for m, _ in model.requests)
