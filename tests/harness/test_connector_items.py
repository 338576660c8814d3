"""What a task learns after reading items of the person's accounts cites those items, so
disconnecting the account with ``--forget`` (forget-by-source of the connection) forgets it —
and nothing is learned from that account again."""

from __future__ import annotations

from pathlib import Path

from steward.domain import TaskSpec, TaskStatus, TriggerKind
from steward.domain.clock import SimulatedClock
from steward.domain.trail import MAX_ITEMS, Trail
from steward.harness.agent import AgentHarness
from steward.harness.tools import ToolContext, tool
from steward.harness.workspace import Workspace
from steward.memory.context import PersonalMemory
from steward.models import ScriptedModel
from steward.models.scripted import call_tool
from steward.sentinel.defaults import DefaultSentinel
from steward.store import Store
from support.agents import agent_worker, person_with_api


async def test_a_memory_learned_from_a_mail_is_forgotten_with_the_mailbox(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    svc, person = await person_with_api(store, clock)
    mailbox = await svc.add_connection(
        person_id=person, kind="mail", name="home", scopes=["mail.read"]
    )

    @tool(untrusted_output=True)
    async def read_mail(ctx: ToolContext) -> str:
        """Read the newest mail."""
        ctx.items_read.append(f"{mailbox.id}/7.42")
        return "From Dana: my new phone number is 0176 5550199"

    learn = [
        call_tool("read_mail"),
        call_tool("propose_memory", content="Dana's phone number is 0176 5550199", kind="fact"),
        call_tool("finish", result="noted"),
    ]
    harness = AgentHarness(
        model=ScriptedModel(learn),
        workspace=Workspace(tmp_path),
        tools=[read_mail],
        sentinel=DefaultSentinel(),
        personal=PersonalMemory(svc.memory),
    )
    task = await svc.ask_agent(person_id=person, instructions="check my mail")
    await agent_worker(store, harness, clock).run_until_idle()
    assert (await svc.get_task(task.id)).status is TaskStatus.SUCCEEDED
    [memory] = await store.memory.list_memories(person_id=person, limit=10)
    assert {s.key for s in memory.sources} == {f"task:{task.id}", f"connector:{mailbox.id}/7.42"}
    assert not memory.trusted  # learned from others' text: a candidate for the person

    await svc.disconnect(mailbox.id, person_id=person)
    forgotten = await svc.forget_source(f"connector:{mailbox.id}", person_id=person)
    assert forgotten.purged == 1
    assert await store.memory.list_memories(person_id=person, limit=10) == []

    # reading the same mail again teaches nothing: its source is forgotten
    again = AgentHarness(
        model=ScriptedModel(learn),
        workspace=Workspace(tmp_path),
        tools=[read_mail],
        sentinel=DefaultSentinel(),
        personal=PersonalMemory(svc.memory),
    )
    await svc.ask_agent(person_id=person, instructions="check my mail again")
    await agent_worker(store, again, clock).run_until_idle()
    assert await store.memory.list_memories(person_id=person, limit=10) == []


async def test_a_task_started_by_a_mail_event_cites_that_mailbox(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    svc, person = await person_with_api(store, clock)
    mailbox = await svc.add_connection(
        person_id=person, kind="mail", name="home", scopes=["mail.read"]
    )
    goal = await svc.create_goal(person_id=person, title="Keep Dana's details")
    await svc.add_trigger(
        person_id=person,
        goal_id=goal.id,
        kind=TriggerKind.EVENT,
        spec="mail.received",
        match={"from": {"endswith": "@example.test"}},
        task=TaskSpec(kind="agent", input={"instructions": "note what Dana tells me"}),
    )
    harness = AgentHarness(
        model=ScriptedModel(
            [
                call_tool("propose_memory", content="Dana moved to Porto", kind="fact"),
                call_tool("finish", result="noted"),
            ]
        ),
        workspace=Workspace(tmp_path),
        tools=[],
        sentinel=DefaultSentinel(),
        personal=PersonalMemory(svc.memory),
    )
    event, _ = await svc.send_event(
        person_id=person,
        type="mail.received",
        source=f"connection:{mailbox.id}",
        dedupe_key="mail:<1@example.test>",
        payload={"from": "dana@example.test", "subject": "I moved to Porto"},
    )
    await store.schedule.route_events(now=clock.now())
    await agent_worker(store, harness, clock).run_until_idle()
    [memory] = await store.memory.list_memories(person_id=person, limit=10)
    assert f"connector:{mailbox.id}/{event.id}" in {s.key for s in memory.sources}
    forgotten = await svc.forget_source(f"connector:{mailbox.id}", person_id=person)
    assert forgotten.purged == 1


def test_the_oldest_items_give_way_to_their_connection_as_a_whole() -> None:
    trail = Trail()
    trail.read_items([f"con_a/{n}" for n in range(3)])
    trail.read_items([f"con_b/{n}" for n in range(MAX_ITEMS)])
    assert trail.items[0] == "con_a"
    assert trail.items[1:] == [f"con_b/{n}" for n in range(MAX_ITEMS)]
    assert Trail.from_json(trail.to_json()).items == trail.items
