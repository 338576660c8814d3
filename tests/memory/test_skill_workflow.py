"""A skill's workflow runs without a model: its calls pass the sentinel and the effect journal
like the model's would; where one fails, the model takes over with the exchange in view."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from steward.domain import ApprovalStatus, Person, TaskSpec, TaskStatus
from steward.domain.actions import EffectClass
from steward.domain.clock import SimulatedClock
from steward.domain.skill import SkillContent, WorkflowStep
from steward.errors import UsageError
from steward.harness.agent import AgentHarness
from steward.harness.tools import ToolError, tool
from steward.harness.workspace import Workspace
from steward.memory.book import MemoryBook
from steward.memory.context import PersonalMemory
from steward.memory.skills import SkillLibrary
from steward.models import ScriptedModel
from steward.models.scripted import call_tool
from steward.sentinel.defaults import DefaultSentinel
from steward.service import Service
from steward.store import Store
from support.agents import agent_worker

PAGES = {"/billing/invoices": "Latest invoice total: 42.50 EUR"}


class Rig:
    def __init__(self, store: Store, clock: SimulatedClock, tmp_path: Path, person: Person):
        self.store, self.clock, self.person = store, clock, person
        self.library = SkillLibrary(store, clock)
        self.workspace = Workspace(tmp_path / "ws")
        self.visits: list[str] = []
        self.notes: list[str] = []

    async def learn(self, *steps: WorkflowStep) -> None:
        learned = await self.library.propose(
            person_id=self.person.id,
            name="invoice-total",
            content=SkillContent(
                description="The total of the latest invoice",
                procedure="Open the invoices page and read the total.",
                inputs=("page: where the invoices are",),
                workflow=steps,
            ),
            actor="person",
        )
        assert learned.skill is not None

    async def run(self, model: ScriptedModel, **task_input: Any) -> str:
        rig = self

        @tool(effect=EffectClass.READ)
        async def open_page(path: str) -> str:
            """Open a page of the billing portal."""
            rig.visits.append(path)
            if path not in PAGES:
                raise ToolError(f"no page {path}")
            return PAGES[path]

        @tool(effect=EffectClass.EXTERNAL, scopes=["notes.write"])
        async def send_note(text: str) -> str:
            """Send a note to the accountant."""
            rig.notes.append(text)
            return "sent"

        harness = AgentHarness(
            model=model,
            workspace=self.workspace,
            tools=[open_page, send_note],
            sentinel=DefaultSentinel(),
            personal=PersonalMemory(MemoryBook(self.store, self.clock), skills=self.library),
        )
        spec = TaskSpec(
            kind="agent", title="invoice", input={"instructions": "Invoice total?", **task_input}
        )
        task = await self.store.tasks.create_task(
            spec, person_id=self.person.id, now=self.clock.now()
        )
        await agent_worker(self.store, harness, self.clock).run_until_idle()
        return task.id


@pytest.fixture
async def rig(store: Store, clock: SimulatedClock, tmp_path: Path) -> Rig:
    person = await store.persons.create_person(name="ada", now=clock.now())
    return Rig(store, clock, tmp_path, person)


async def test_a_workflow_runs_to_the_end_without_a_model(rig: Rig) -> None:
    await rig.learn(WorkflowStep(tool="open_page", arguments={"path": "{page}"}))
    model = ScriptedModel([])  # any model call would fail the test: the script is empty

    task_id = await rig.run(model, skill="invoice-total", inputs={"page": "/billing/invoices"})

    task = await rig.store.tasks.get_task(task_id)
    assert task.status is TaskStatus.SUCCEEDED, task.error
    assert task.result == {"text": "ran the workflow of skill 'invoice-total': 1 steps"}
    assert model.calls == 0
    assert rig.visits == ["/billing/invoices"]
    tool_steps = [
        s.output for s in await rig.store.activations.list_steps(task_id) if s.kind == "tool"
    ]
    assert tool_steps[0]["observation"] == PAGES["/billing/invoices"]
    [skill] = await rig.library.store.skills.list_skills(person_id=rig.person.id)
    assert (skill.uses, skill.successes, skill.failures) == (1, 1, 0)


async def test_where_a_step_fails_the_model_takes_over(rig: Rig) -> None:
    await rig.learn(WorkflowStep(tool="open_page", arguments={"path": "/billing/old-invoices"}))
    model = ScriptedModel(
        [
            call_tool("open_page", path="/billing/invoices"),
            call_tool("finish", result="42.50 EUR"),
        ]
    )

    task_id = await rig.run(model, skill="invoice-total")

    task = await rig.store.tasks.get_task(task_id)
    assert (task.status, task.result) == (TaskStatus.SUCCEEDED, {"text": "42.50 EUR"})
    assert rig.visits == ["/billing/old-invoices", "/billing/invoices"]
    first_prompt, _ = model.requests[0]
    assert [m.role for m in first_prompt[-2:]] == ["assistant", "tool"]
    assert "no page /billing/old-invoices" in first_prompt[-1].content


async def test_a_workflows_external_step_meets_the_sentinel(rig: Rig) -> None:
    await rig.learn(WorkflowStep(tool="send_note", arguments={"text": "Total: {total}"}))

    task_id = await rig.run(ScriptedModel([]), skill="invoice-total", inputs={"total": 42.5})

    assert (await rig.store.tasks.get_task(task_id)).status is TaskStatus.WAITING
    [asked] = await rig.store.inbox.list_approvals(
        person_id=rig.person.id, status=ApprovalStatus.PENDING
    )
    assert (asked.tool, asked.args) == ("send_note", {"text": "Total: 42.5"})
    assert rig.notes == []


@pytest.mark.parametrize(
    ("task_input", "error"),
    [
        ({"skill": "invoice-total"}, "skill 'invoice-total' needs the input 'page'"),
        ({"skill": "no-such-skill"}, "no skill 'no-such-skill'"),
    ],
)
async def test_a_workflow_that_cannot_start_fails_the_task_clearly(
    rig: Rig, task_input: dict[str, Any], error: str
) -> None:
    await rig.learn(WorkflowStep(tool="open_page", arguments={"path": "{page}"}))
    task_id = await rig.run(ScriptedModel([]), **task_input)
    task = await rig.store.tasks.get_task(task_id)
    assert task.status is TaskStatus.FAILED
    assert error in (task.error or "")
    assert rig.visits == []


async def test_asking_through_the_facade_names_the_skill_and_its_inputs(
    rig: Rig, store: Store, clock: SimulatedClock
) -> None:
    await rig.learn(WorkflowStep(tool="open_page", arguments={"path": "{page}"}))
    svc = Service(store, clock)
    with pytest.raises(UsageError, match="inputs are for a skill"):
        await svc.ask_agent(person_id=rig.person.id, instructions="x", inputs={"page": "/"})
    assert await store.tasks.list_tasks(person_id=rig.person.id) == []

    task = await svc.ask_agent(
        person_id=rig.person.id,
        instructions="Invoice total?",
        skill="invoice-total",
        inputs={"page": "/billing/invoices"},
    )
    harness = AgentHarness(
        model=ScriptedModel([]),
        workspace=rig.workspace,
        tools=[],
        personal=PersonalMemory(MemoryBook(store, clock), skills=rig.library),
    )
    await agent_worker(store, harness, clock).run_until_idle()
    done = await store.tasks.get_task(task.id)
    # the harness offers no open_page here: the unknown tool fails the step, and the empty
    # script shows the model was then asked to take over
    assert task.input["inputs"] == {"page": "/billing/invoices"}
    assert done.status is not TaskStatus.SUCCEEDED
