"""Task inputs and checkpoints the typed state must survive: a depth nobody may lower, an
acceptance that is not an object, a checkpoint written by a newer Steward."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from sqlalchemy import Connection, text  # noqa: TID251 - a test writes a raw checkpoint

from steward.domain import Person, TaskSpec, TaskStatus
from steward.domain.clock import SimulatedClock
from steward.harness.agent import AgentConfig, AgentHarness
from steward.harness.state import VERSION
from steward.harness.workspace import Workspace
from steward.models.scripted import ScriptedModel, call_tool
from steward.store import Store
from support.agents import agent_worker


async def new_task(store: Store, clock: SimulatedClock, person: Person, **extra: Any) -> str:
    spec = TaskSpec(kind="agent", input={"instructions": "do it", **extra})
    return (await store.tasks.create_task(spec, person_id=person.id, now=clock.now())).id


async def test_a_task_input_cannot_lower_its_subtask_depth(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """A top-level task saying ``depth: -5`` is still depth 0: its subtask's spawn is refused
    at a limit of 1, as for any other task."""
    spawn = call_tool("spawn_subtask", title="t", instructions="go deeper")
    model = ScriptedModel(
        [spawn, spawn, call_tool("finish", result="child"), call_tool("finish", result="top")]
    )
    harness = AgentHarness(
        model=model, workspace=workspace, config=AgentConfig(max_subtask_depth=1)
    )
    task_id = await new_task(store, clock, person, depth=-5)
    await agent_worker(store, harness, clock).run_until_idle()

    [child] = await store.tasks.list_tasks(parent_id=task_id)
    assert await store.tasks.list_tasks(parent_id=child.id) == []
    refused = [s.output for s in await store.activations.list_steps(child.id) if s.kind == "tool"]
    assert refused[0]["observation"] == "error: subtasks nest at most 1 deep"


async def test_an_acceptance_that_is_not_an_object_fails_the_task_at_once(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """Retrying cannot fix the input: one activation, failed with the reason, no model call."""
    model = ScriptedModel([call_tool("finish", result="never")])
    harness = AgentHarness(model=model, workspace=workspace)
    task_id = await new_task(store, clock, person, acceptance="all of it")
    worker = agent_worker(store, harness, clock)
    assert await worker.run_until_idle() == 1
    clock.advance(timedelta(hours=1))
    assert await worker.run_until_idle() == 0

    failed = await store.tasks.get_task(task_id)
    assert failed.status is TaskStatus.FAILED
    assert "acceptance must be an object, not str" in (failed.error or "")
    assert model.calls == 0


async def test_a_checkpoint_from_a_newer_steward_is_left_for_a_newer_worker(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """A state this harness cannot read (a rollback, a mixed deploy) requeues the task without
    counting an attempt, instead of failing work a newer worker could finish."""
    model = ScriptedModel([call_tool("finish", result="never")])
    harness = AgentHarness(model=model, workspace=workspace)
    task_id = await new_task(store, clock, person)
    newer = {"version": VERSION + 1, "pending": []}

    def op(conn: Connection) -> None:
        conn.execute(
            text("UPDATE tasks SET state = :state WHERE id = :id"),
            {"state": json.dumps(newer), "id": task_id},
        )

    await store.backend.write(op)
    worker = agent_worker(store, harness, clock)
    assert await worker.run_until_idle() == 1

    waiting = await store.tasks.get_task(task_id)
    assert waiting.status is not TaskStatus.FAILED
    assert waiting.status is not TaskStatus.DEAD_LETTERED
    assert waiting.attempts == 0
    assert waiting.state == newer
    assert model.calls == 0
