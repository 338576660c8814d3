"""Budgets: a runaway model is stopped by its activation's step, cost or token budget or by its
goal's, and the person is asked whether to go on; usage is summed per activation and goal."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from steward.domain import Budget, Person, TaskSpec, TaskStatus
from steward.domain.clock import SimulatedClock
from steward.domain.goal import Overrun
from steward.domain.runtime_reports import goal_budget_reached
from steward.harness.agent import AgentHarness
from steward.harness.tools import tool
from steward.harness.workspace import Workspace
from steward.models import Price, ScriptedModel
from steward.models.scripted import call_tool
from steward.runtime.worker import Worker
from steward.store import Store
from support.agents import agent_worker
from support.clock import START

S = TaskStatus
PRICE = Price(input_per_mtok=1000.0, output_per_mtok=1000.0)
"""Absurdly expensive, so a few calls cost dollars."""


@tool
async def poke() -> str:
    """Check again whether anything changed."""
    return "nothing changed"


def runaway(price: Price | None = None) -> ScriptedModel:
    """A model that never stops calling a tool."""
    return ScriptedModel([call_tool("poke")], loop_last=True, price=price)


async def create(
    store: Store,
    clock: SimulatedClock,
    person: Person,
    *,
    goal_id: str | None = None,
    **task_input: Any,
) -> str:
    task = await store.tasks.create_task(
        TaskSpec(kind="agent", title="watch", input={"instructions": "watch", **task_input}),
        person_id=person.id,
        goal_id=goal_id,
        now=clock.now(),
    )
    return task.id


async def test_step_budget_stops_a_runaway_loop_and_the_person_can_extend_it(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """A model that loops forever is stopped by the task's step budget: the task waits for the
    person (not failed, not spinning) with a budget notification saying why. Answering gives it
    another window of the same size, after which it stops again."""
    model = runaway()
    harness = AgentHarness(model=model, workspace=workspace, tools=[poke])
    task_id = await create(store, clock, person, budget={"max_steps": 10})
    worker = agent_worker(store, harness, clock)
    assert await worker.run_until_idle() == 1

    stopped = await store.tasks.get_task(task_id)
    assert stopped.status is S.WAITING
    assert stopped.wait is not None
    assert stopped.wait.kind == "input"
    assert stopped.wait.prompt == "Budget reached: activation step budget reached (10 steps)"
    [notice] = await store.inbox.list_notifications(person_id=person.id)
    assert (notice.kind, notice.ref, notice.task_id) == ("budget", stopped.wait.ref, task_id)
    assert notice.title == "Task paused: activation step budget reached (10 steps)"
    assert "stopped instead of spending more" in notice.body
    assert model.calls == 5  # five answers and their observations make ten steps
    assert stopped.step_seq == 11  # and the stop itself

    clock.advance(timedelta(hours=5))
    await store.inbox.answer_input(task_id, "keep watching", now=clock.now())
    assert await worker.run_until_idle() == 1
    again = await store.tasks.get_task(task_id)
    assert again.status is S.WAITING
    assert model.calls == 10
    first, second = await store.activations.list_activations(task_id=task_id)
    assert (first.usage["model_calls"], second.usage["model_calls"]) == (5, 5)
    assert (second.reason, second.outcome) == ("input", "wait")
    kinds = [s.kind for s in await store.activations.list_steps(task_id, after=11)]
    assert kinds == ["resumed", *["model", "tool"] * 5, "suspend"]
    assert len(await store.inbox.list_notifications(person_id=person.id)) == 2


async def test_cost_budget_stops_before_spending_more(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """With a cost cap the loop stops at the first step boundary at or past the cap: it spent
    under the cap before its last model call and never makes another."""
    model = runaway(PRICE)
    harness = AgentHarness(model=model, workspace=workspace, tools=[poke])
    task_id = await create(store, clock, person, budget={"max_cost_usd": 3.0, "max_steps": 500})
    await agent_worker(store, harness, clock).run_until_idle()

    stopped = await store.tasks.get_task(task_id)
    assert stopped.status is S.WAITING
    assert stopped.wait is not None
    assert stopped.wait.prompt == "Budget reached: activation cost budget reached ($3.00)"
    [notice] = await store.inbox.list_notifications(person_id=person.id)
    assert notice.kind == "budget"
    assert "cost budget" in notice.title
    [activation] = await store.activations.list_activations(task_id=task_id)
    model_steps = [s for s in await store.activations.list_steps(task_id) if s.kind == "model"]
    costs = [s.output["response"]["usage"]["cost_usd"] for s in model_steps]
    assert all(cost > 0 for cost in costs)
    assert activation.usage["cost_usd"] == pytest.approx(sum(costs))
    assert sum(costs) >= 3.0 > sum(costs[:-1])
    assert model.calls == len(model_steps) < 40


async def test_goal_token_budget_stops_the_task_and_then_refuses_to_run_it(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """A goal's token cap stops its task mid-activation (counting what earlier activations of
    the goal spent); once the goal is spent, answering the task does not buy more model calls:
    the next activation is refused and the task fails with the reason."""
    model = runaway()
    harness = AgentHarness(model=model, workspace=workspace, tools=[poke])
    goal = await store.goals.create_goal(
        person_id=person.id, title="watch", now=clock.now(), budget=Budget(max_tokens=8000)
    )
    warmup = await create(store, clock, person, goal_id=goal.id, budget={"max_steps": 4})
    worker = agent_worker(store, harness, clock)
    await worker.run_until_idle()
    spent_before = (await store.activations.goal_usage(goal.id))["tokens"]
    assert 0 < spent_before < 8000
    assert (await store.tasks.get_task(warmup)).wait is not None

    task_id = await create(store, clock, person, goal_id=goal.id, budget={"max_steps": 500})
    await worker.run_until_idle()
    stopped = await store.tasks.get_task(task_id)
    assert stopped.status is S.WAITING
    assert stopped.wait is not None
    assert stopped.wait.prompt == "Budget reached: goal token budget reached (8000 tokens)"
    [activation] = await store.activations.list_activations(task_id=task_id)
    tokens = [
        s.output["response"]["usage"]["input_tokens"]
        + s.output["response"]["usage"]["output_tokens"]
        for s in await store.activations.list_steps(task_id)
        if s.kind == "model"
    ]
    assert activation.usage["tokens"] == sum(tokens)
    assert spent_before + sum(tokens) >= 8000 > spent_before + sum(tokens[:-1])

    calls = model.calls
    await store.inbox.answer_input(task_id, "go on", now=clock.now())
    await worker.run_until_idle()
    refused = await store.tasks.get_task(task_id)
    assert (refused.status, refused.error) == (S.FAILED, "goal budget exhausted: 8000 tokens")
    assert model.calls == calls


async def test_time_budgets_count_simulated_time(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """Each tool call takes ten simulated minutes: the activation's time budget stops the task
    after three of them; the goal's time budget (summed over its activations) stops the next
    task sooner, since the first one already spent its share."""

    @tool
    async def slow_poke() -> str:
        """Check again, slowly."""
        clock.advance(timedelta(minutes=10))
        return "nothing changed"

    model = ScriptedModel([call_tool("slow_poke")], loop_last=True)
    harness = AgentHarness(model=model, workspace=workspace, tools=[slow_poke])
    goal = await store.goals.create_goal(
        person_id=person.id, title="watch", now=clock.now(), budget=Budget(max_seconds=2400)
    )
    first = await create(store, clock, person, goal_id=goal.id, budget={"max_seconds": 1800})
    # the tool moves simulated time past a normal lease: a lease long enough for the test
    worker = Worker(store, harness, clock, lease_seconds=86_400, poll_seconds=None)
    await worker.run_until_idle()
    stopped = await store.tasks.get_task(first)
    assert stopped.wait is not None
    assert stopped.wait.prompt == "Budget reached: activation time budget reached (1800s)"
    assert model.calls == 3
    assert (await store.activations.goal_usage(goal.id))["seconds"] == 1800

    second = await create(store, clock, person, goal_id=goal.id)
    await worker.run_until_idle()
    stopped = await store.tasks.get_task(second)
    assert stopped.wait is not None
    assert stopped.wait.prompt == "Budget reached: goal time budget reached (2400s of work)"
    assert model.calls == 4


async def test_usage_is_summed_per_activation_and_per_goal(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """Each activation records its model calls, tokens and cost (the sums of its model steps);
    the goal's usage is the sum over all activations of all its tasks."""
    model = ScriptedModel(
        [
            call_tool("poke"),
            call_tool("ask_person", question="Carry on?"),
            call_tool("poke"),
            call_tool("finish", result="done"),
        ],
        price=PRICE,
    )
    harness = AgentHarness(model=model, workspace=workspace, tools=[poke])
    goal = await store.goals.create_goal(person_id=person.id, title="g", now=clock.now())
    task_id = await create(store, clock, person, goal_id=goal.id)
    worker = agent_worker(store, harness, clock)
    await worker.run_until_idle()
    clock.advance(timedelta(days=1))
    await store.inbox.answer_input(task_id, "yes", now=clock.now())
    await worker.run_until_idle()
    assert (await store.tasks.get_task(task_id)).status is S.SUCCEEDED

    activations = await store.activations.list_activations(task_id=task_id)
    steps = await store.activations.list_steps(task_id)
    assert len(activations) == 2
    for activation in activations:
        usages = [
            s.output["response"]["usage"]
            for s in steps
            if s.kind == "model" and s.activation_id == activation.id
        ]
        assert len(usages) == 2
        assert activation.usage["model_calls"] == 2
        assert activation.usage["input_tokens"] == sum(u["input_tokens"] for u in usages)
        assert activation.usage["output_tokens"] == sum(u["output_tokens"] for u in usages)
        assert activation.usage["tokens"] == sum(
            u["input_tokens"] + u["output_tokens"] for u in usages
        )
        assert activation.usage["cost_usd"] == pytest.approx(sum(u["cost_usd"] for u in usages))
    spent = await store.activations.goal_usage(goal.id)
    assert spent["activations"] == 2
    assert spent["steps"] == len(steps)
    assert spent["tokens"] == sum(a.usage["tokens"] for a in activations)
    assert spent["cost_usd"] == pytest.approx(sum(a.usage["cost_usd"] for a in activations))
    assert spent["cost_usd"] > 0


async def test_a_goal_budget_that_stops_work_reports_it_once_per_cap_in_words(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """The goal's cost cap pauses its task: one runtime report, actionable, in words, written
    with the pause. Its next task, refused by the same cap, reports nothing more (nor a task
    failure); a raised cap reached again is a new stop and says so again."""
    model = runaway(PRICE)
    harness = AgentHarness(model=model, workspace=workspace, tools=[poke])
    goal = await store.goals.create_goal(
        person_id=person.id,
        title="Laptop price",
        now=clock.now(),
        budget=Budget(max_cost_usd=3.0),
    )
    first = await create(store, clock, person, goal_id=goal.id, budget={"max_steps": 500})
    worker = agent_worker(store, harness, clock)
    await worker.run_until_idle()
    assert (await store.tasks.get_task(first)).status is S.WAITING
    [report] = await store.reports.list_for(person.id)
    assert (report.what, report.why, report.todo) == (
        "Your goal 'Laptop price' reached its budget of $3.00",
        "I stopped working on it.",
        "Raise the budget to continue.",
    )
    assert (report.importance, report.origin) == ("actionable", "runtime")
    assert (report.goal_id, report.task_id) == (goal.id, first)

    second = await create(store, clock, person, goal_id=goal.id)
    await worker.run_until_idle()
    refused = await store.tasks.get_task(second)
    assert (refused.status, refused.error) == (S.FAILED, "goal budget exhausted: $3.00")
    assert [r.id for r in await store.reports.list_for(person.id)] == [report.id]

    await store.goals.set_goal_budget(goal.id, Budget(max_cost_usd=6.0), now=clock.now())
    await store.inbox.answer_input(first, "go on", now=clock.now())
    await worker.run_until_idle()
    assert (await store.tasks.get_task(first)).status is S.WAITING
    assert sorted(r.what for r in await store.reports.list_for(person.id)) == [
        "Your goal 'Laptop price' reached its budget of $3.00",
        "Your goal 'Laptop price' reached its budget of $6.00",
    ]


def test_a_goal_budget_report_names_the_cap_in_words() -> None:
    """Each kind of cap, as the person set it."""
    words = {
        Overrun(measure="seconds", cap=2400): "40 minutes of work",
        Overrun(measure="seconds", cap=7200): "2 hours of work",
        Overrun(measure="tokens", cap=8000): "8000 tokens",
        Overrun(measure="steps", cap=1): "1 step",
        Overrun(measure="activations", cap=5): "5 runs",
    }
    for overrun, amount in words.items():
        report = goal_budget_reached(
            person_id="p",
            goal_id="g",
            task_id="t",
            title="Watch",
            overrun=overrun,
            now=START,
        )
        assert report.what == f"Your goal 'Watch' reached its budget of {amount}"
