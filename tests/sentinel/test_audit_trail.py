"""What the agent does and what the person decides lands in the audit log, in one chain:
the approval asked and decided, the effect sent and settled."""

from __future__ import annotations

from pathlib import Path

from steward.domain import TaskSpec
from steward.domain.actions import EffectClass
from steward.domain.clock import SimulatedClock
from steward.harness.agent import AgentHarness
from steward.harness.tools import tool
from steward.harness.workspace import Workspace
from steward.models.scripted import ScriptedModel, call_tool
from steward.runtime.worker import Worker
from steward.store import Store


@tool(effect=EffectClass.EXTERNAL, idempotent=True)
async def post_update(text: str) -> str:
    """Post a status update."""
    return f"posted {text}"


async def test_approval_and_effect_are_audited(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    person = await store.persons.create_person(name="p", now=clock.now())
    model = ScriptedModel([call_tool("post_update", text="hi"), call_tool("finish", result="ok")])
    harness = AgentHarness(model=model, workspace=Workspace(tmp_path), tools=[post_update])
    task = await store.tasks.create_task(
        TaskSpec(kind="agent", input={"instructions": "post hi"}),
        person_id=person.id,
        now=clock.now(),
    )
    worker = Worker(store, harness, clock, poll_seconds=None)
    await worker.run_until_idle()
    [approval] = await store.inbox.list_approvals(task_id=task.id)
    await store.inbox.decide_approval(
        approval.id, approve=True, decided_by="person", now=clock.now()
    )
    await worker.run_until_idle()

    entries = await store.audit.list_audit(person_id=person.id)
    trail = [(e.kind, e.actor, e.data.get("status")) for e in entries]
    agent = f"agent:{task.id}"
    assert trail == [
        ("approval", agent, "pending"),
        ("approval", "person", "approved"),
        ("effect", agent, "sent"),
        ("effect", agent, "succeeded"),
    ]
    assert entries[0].data["tool"] == "post_update"
    assert entries[2].data["key"].startswith(task.id)
    assert (await store.audit.verify_audit()).ok
