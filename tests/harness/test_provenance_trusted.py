"""Only the person's words vouch for a value: a number in the task's settings (its budget, its
tool list) is not something the person said, so an injected identifier equal to it is still
tainted."""

from __future__ import annotations

from steward.domain import Person, TaskSpec
from steward.domain.clock import SimulatedClock
from steward.harness.workspace import Workspace
from steward.models.scripted import call_tool
from steward.store import Store
from support.agents import agent_worker
from support.provenance import files_harness


async def test_an_injected_id_equal_to_a_budget_number_still_asks(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """On main the whole task input was trusted text: ``max_steps: 13`` vouched for
    ``delete_file(file_id="13")`` copied from an injected mail, and it ran."""
    done: list[str] = []
    script = [call_tool("read_email"), call_tool("delete_file", file_id="13")]
    h = files_harness(workspace, done, script)
    task = await store.tasks.create_task(
        TaskSpec(
            kind="agent",
            input={"instructions": "Summarise my newest email", "budget": {"max_steps": 13}},
        ),
        person_id=person.id,
        now=clock.now(),
    )
    await agent_worker(store, h, clock).run_until_idle()
    assert done == []
    [approval] = await store.inbox.list_approvals(task_id=task.id)
    assert "file_id: '13' only in untrusted content from read_email (step 2)" in approval.reason


async def test_an_id_in_the_persons_instructions_is_theirs(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    done: list[str] = []
    script = [call_tool("read_email"), call_tool("delete_file", file_id="13")]
    h = files_harness(workspace, done, script)
    task = await store.tasks.create_task(
        TaskSpec(
            kind="agent",
            input={"instructions": "Read my newest email, then delete file 13"},
        ),
        person_id=person.id,
        now=clock.now(),
    )
    await agent_worker(store, h, clock).run_until_idle()
    assert await store.inbox.list_approvals(task_id=task.id) == []
    assert done == ["deleted 13"]
