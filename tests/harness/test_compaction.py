"""Compaction: a task far longer than its context keeps every prompt within budget, carries its
progress through explicit state, and never cuts a tool observation off from the call it
answers. Unit tests of the cut, the deterministic summary and the model-written summary."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from steward.domain import Person, Step, TaskSpec, TaskStatus
from steward.domain.clock import SimulatedClock
from steward.harness.agent import AgentConfig, AgentHarness
from steward.harness.budget import ActivationBudget
from steward.harness.compaction import (
    choose_cut,
    compact,
    deterministic_summary,
    render_step,
    steps_tokens,
)
from steward.harness.context import ContextBudget, estimate_tokens, message_tokens, tools_tokens
from steward.harness.control import control_tools
from steward.harness.tools import tool
from steward.harness.workspace import Workspace
from steward.models import Message, ModelResponse, ScriptedModel, ToolSpec
from steward.models.openai_compat import OpenAIModel
from steward.models.scripted import call_tool, call_tools, say
from steward.store import Store
from steward.testing.model_server import ModelServer, run_model_server
from support.agents import agent_worker

S = TaskStatus


@tool
async def log_line(text: str) -> str:
    """Append a line to the log."""
    return f"logged: {text}"


def progress_of(messages: Sequence[Message]) -> dict[str, Any]:
    """The task's progress as the prompt shows it (the model has nothing else to count by)."""
    task_text = messages[1].content
    if "## Progress so far\n" not in task_text:
        return {}
    progress: dict[str, Any] = json.loads(task_text.split("## Progress so far\n", 1)[1])
    return progress


def counting_model(target: int) -> ScriptedModel:
    """Counts to ``target`` one update_progress at a time (logging a line each time), then
    finishes with the count it finds in its progress."""

    def script(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
        count = int(progress_of(messages).get("count", 0))
        if count >= target:
            return call_tool("finish", result=f"counted {count}")
        return call_tools(
            ("update_progress", {"updates": {"count": count + 1}}),
            ("log_line", {"text": f"entry {count + 1}: " + "details " * 20}),
        )

    return ScriptedModel(script)


def assert_well_formed(messages: Sequence[Message]) -> None:
    """Every tool message answers a call of an assistant message before it (a provider rejects
    an observation whose call was cut away)."""
    called: set[str] = set()
    for message in messages[2:]:
        called.update(c.id for c in message.tool_calls)
        if message.role == "tool":
            assert message.tool_call_id in called, f"orphan observation {message.tool_call_id}"


async def test_long_task_stays_within_its_context_budget(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """A task of more than 500 steps (far more than its context holds) is compacted as it goes:
    every prompt stays within the context budget and its recent window within its own, the
    older steps live on in a summary, no observation loses its call, and the result — counted
    from the progress the model saved — is right."""
    target = 170
    budget = ContextBudget(recent=1500, summary=400)
    config = AgentConfig(context=budget, budget=ActivationBudget(max_steps=2000))
    model = counting_model(target)
    harness = AgentHarness(model=model, workspace=workspace, tools=[log_line], config=config)
    task = await store.tasks.create_task(
        TaskSpec(kind="agent", input={"instructions": f"Count to {target}"}),
        person_id=person.id,
        now=clock.now(),
    )
    assert await agent_worker(store, harness, clock).run_until_idle() == 1

    done = await store.tasks.get_task(task.id)
    assert (done.status, done.result) == (S.SUCCEEDED, {"text": f"counted {target}"})
    steps = await store.activations.list_steps(task.id, limit=10_000)
    assert len(steps) > 500
    # without compaction the conversation could not have fitted
    assert steps_tokens(steps) > 2 * budget.total
    summaries = [s for s in steps if s.kind == "summary"]
    assert len(summaries) >= 10
    assert {s.output["method"] for s in summaries} == {"deterministic"}
    throughs = [s.output["through"] for s in summaries]
    assert throughs == sorted(set(throughs))

    model_steps = [s for s in steps if s.kind == "model"]
    assert len(model_steps) == model.calls == target + 1
    for step, (messages, _) in zip(model_steps, model.requests, strict=True):
        tokens = sum(message_tokens(m) for m in messages)
        assert step.output["context_tokens"] == tokens
        assert tokens <= budget.total
        assert sum(message_tokens(m) for m in messages[2:]) <= budget.recent
        assert_well_formed(messages)
    late, _ = model.requests[-1]
    assert "## Earlier in this task (summary)" in late[0].content
    assert estimate_tokens(late[0].content) <= budget.system + budget.goal + budget.summary + 50
    updates = [s for s in steps if s.kind == "tool" and s.output["name"] == "update_progress"]
    assert len(updates) == target


async def test_model_summary_is_used_and_a_failing_summarizer_falls_back(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """With a summarizer model, compaction asks it for the summary (its calls count as usage)
    and the summary it wrote is what later prompts carry; when it fails, the deterministic
    summary is used and the task is not disturbed."""
    budget = ContextBudget(recent=600, summary=300)
    config = AgentConfig(context=budget, budget=ActivationBudget(max_steps=500))

    def summarize(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
        assert tools == []
        numbers = [line for line in messages[1].content.splitlines() if line.startswith("#")]
        return say(f"SUMMARY covering {len(numbers)} new steps")

    summarizer = ScriptedModel(summarize)
    model = counting_model(30)
    harness = AgentHarness(
        model=model, workspace=workspace, tools=[log_line], config=config, summarizer=summarizer
    )
    task = await store.tasks.create_task(
        TaskSpec(kind="agent", input={"instructions": "Count to 30"}),
        person_id=person.id,
        now=clock.now(),
    )
    await agent_worker(store, harness, clock).run_until_idle()
    assert (await store.tasks.get_task(task.id)).result == {"text": "counted 30"}
    steps = await store.activations.list_steps(task.id)
    summaries = [s for s in steps if s.kind == "summary"]
    assert len(summaries) == summarizer.calls >= 2
    assert {s.output["method"] for s in summaries} == {"model"}
    late, _ = model.requests[-1]
    assert "SUMMARY covering" in late[0].content
    [activation] = await store.activations.list_activations(task_id=task.id)
    assert activation.usage["model_calls"] == model.calls + summarizer.calls

    broken = ScriptedModel([])  # every call fails: its script is exhausted
    model = counting_model(30)
    harness = AgentHarness(
        model=model, workspace=workspace, tools=[log_line], config=config, summarizer=broken
    )
    task = await store.tasks.create_task(
        TaskSpec(kind="agent", input={"instructions": "Count to 30"}),
        person_id=person.id,
        now=clock.now(),
    )
    await agent_worker(store, harness, clock).run_until_idle()
    assert (await store.tasks.get_task(task.id)).result == {"text": "counted 30"}
    summaries = [s for s in await store.activations.list_steps(task.id) if s.kind == "summary"]
    assert broken.calls == len(summaries) >= 2
    assert {s.output["method"] for s in summaries} == {"deterministic"}


# --- units ------------------------------------------------------------------------------------

T0 = datetime(2026, 1, 5, tzinfo=UTC)


def model_step(seq: int, *call_ids: str, text: str = "") -> Step:
    calls = [{"id": c, "name": "lookup", "arguments": json.dumps({"q": c})} for c in call_ids]
    response = {"content": text, "tool_calls": calls, "usage": {}, "model": "m"}
    return Step(
        task_id="t",
        seq=seq,
        activation_id="a",
        kind="model",
        output={"response": response, "context_tokens": 0},
        created_at=T0,
    )


def tool_step(seq: int, call_id: str, size: int) -> Step:
    output = {"call_id": call_id, "name": "lookup", "observation": "r" * size, "error": False}
    return Step(task_id="t", seq=seq, activation_id="a", kind="tool", output=output, created_at=T0)


def other_step(seq: int, kind: str, output: dict[str, Any]) -> Step:
    return Step(task_id="t", seq=seq, activation_id="a", kind=kind, output=output, created_at=T0)


def journal() -> list[Step]:
    """Answers with one to three calls each, observations of varied size, a person's message
    and bookkeeping steps in between."""
    steps: list[Step] = []
    seq = 0
    for answer in range(12):
        ids = [f"c{answer}_{i}" for i in range(answer % 3 + 1)]
        seq += 1
        steps.append(model_step(seq, *ids, text="thinking " * (answer % 4)))
        for i, call_id in enumerate(ids):
            seq += 1
            steps.append(tool_step(seq, call_id, 40 + 150 * ((answer + i) % 5)))
        if answer == 5:
            seq += 1
            steps.append(other_step(seq, "user", {"content": "also check March"}))
        if answer == 8:
            seq += 1
            steps.append(other_step(seq, "summary", {"through": 3, "method": "deterministic"}))
    return steps


def test_cut_never_separates_an_observation_from_its_call() -> None:
    """For every budget: what stays after the cut fits in half the budget, starts with a model
    answer, and holds the call of every observation it holds; the cut is None only when
    everything already fits."""
    steps = journal()
    total = steps_tokens(steps)
    cuts = set()
    for budget in range(0, 2 * total + 60, 3):
        cut = choose_cut(steps, budget)
        if cut is None:
            assert steps_tokens(steps) <= budget // 2
            continue
        cuts.add(cut)
        kept = [s for s in steps if s.seq > cut]
        assert steps_tokens(kept) <= budget // 2
        if kept:
            assert kept[0].kind == "model"
        called = {
            c["id"] for s in kept if s.kind == "model" for c in s.output["response"]["tool_calls"]
        }
        assert all(s.output["call_id"] in called for s in kept if s.kind == "tool")
    assert len(cuts) > 5  # the budgets exercised many different cuts


def test_cut_moves_past_a_multi_call_answer_rather_than_split_it() -> None:
    """When the window would start inside an answer's observations, the whole answer is
    folded into the summary."""
    steps = [
        model_step(1, "a"),
        tool_step(2, "a", 40),
        model_step(3, "b", "c"),
        tool_step(4, "b", 400),
        tool_step(5, "c", 40),
    ]
    budget = 2 * steps_tokens(steps[-1:]) + 1  # room for the last observation only
    assert choose_cut(steps, budget) == 5
    budget = 2 * steps_tokens(steps[2:]) + 1  # room for the last answer and its observations
    assert choose_cut(steps, budget) == 2
    assert choose_cut(steps, 2 * steps_tokens(steps)) is None


def test_deterministic_summary_is_bounded_and_keeps_the_latest() -> None:
    steps = journal()
    previous = "\n".join(f"#0 earlier line {i} " + "x" * 100 for i in range(200))
    for max_tokens in (10, 60, 300, 1500):
        summary = deterministic_summary(previous, steps, max_tokens)
        assert estimate_tokens(summary) <= max_tokens
    summary = deterministic_summary(previous, steps, 300)
    assert summary.endswith(render_step(steps[-1]))
    assert "earlier line 0 " not in summary  # the oldest lines went first
    roomy = deterministic_summary("#0 started", steps[:3], 10_000)
    assert roomy.splitlines() == ["#0 started", *(render_step(s) for s in steps[:3])]
    assert render_step(steps[1]).startswith(f"#{steps[1].seq} lookup → rrr")
    assert len(render_step(steps[1])) <= len(f"#{steps[1].seq} ") + 240


async def test_compact_with_a_model_summarizes_what_is_folded() -> None:
    steps = journal()
    summarizer = ScriptedModel([say("  They looked up twelve things.  ")])
    result = await compact(steps, previous="Began.", through=10, max_tokens=200, model=summarizer)
    assert (result.summary, result.through, result.method) == (
        "They looked up twelve things.",
        10,
        "model",
    )
    assert result.usage.total_tokens > 0
    [(prompt, _)] = summarizer.requests
    assert "Previous summary:\nBegan." in prompt[1].content
    assert render_step(steps[9], width=1000) in prompt[1].content
    assert f"#{steps[10].seq} " not in prompt[1].content  # only what is folded


@pytest.mark.parametrize("answers", [[], [say("   ")]], ids=["raises", "says-nothing"])
async def test_compact_falls_back_to_the_deterministic_summary(
    answers: list[ModelResponse],
) -> None:
    """A summarizer that fails (an exhausted script raises ModelError) or answers nothing
    leaves the deterministic summary in place."""
    steps = journal()
    summarizer = ScriptedModel(answers)
    result = await compact(steps, previous="", through=10, max_tokens=200, model=summarizer)
    assert result.method == "deterministic"
    assert result.summary == deterministic_summary("", steps[:10], 200)
    assert result.usage.total_tokens == 0
    assert summarizer.calls == 1


async def test_context_overflow_compacts_harder_and_asks_again(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """When the endpoint says the prompt exceeds the model's context (HTTP 400 over a real
    socket), the harness compacts to a quarter of the recent budget and asks once more, within
    the same activation."""
    # the tool schemas come out of the recent budget: leave 2,000 tokens for the steps
    schemas = tools_tokens([t.spec for t in [*control_tools(), log_line]])
    budget = ContextBudget(recent=2000 + schemas)
    config = AgentConfig(context=budget, budget=ActivationBudget(max_steps=500))
    servers: list[ModelServer] = []
    overflow_after = 8

    def script(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
        count = int(progress_of(messages).get("count", 0))
        if count == overflow_after:  # the request after this answer is refused
            servers[0].fail_next(
                400,
                code="context_length_exceeded",
                message="This model's maximum context length is 4096 tokens",
            )
        if count >= 12:
            return call_tool("finish", result=f"counted {count}")
        return call_tools(
            ("update_progress", {"updates": {"count": count + 1}}),
            ("log_line", {"text": f"entry {count + 1}: " + "details " * 20}),
        )

    model = ScriptedModel(script)
    task = await store.tasks.create_task(
        TaskSpec(kind="agent", input={"instructions": "Count to 12"}),
        person_id=person.id,
        now=clock.now(),
    )
    with run_model_server(model) as server:
        servers.append(server)
        remote = OpenAIModel(name=model.name, base_url=server.url, api_key=server.api_key)
        harness = AgentHarness(model=remote, workspace=workspace, tools=[log_line], config=config)
        assert await agent_worker(store, harness, clock).run_until_idle() == 1
        assert server.requests == model.calls + 1  # the refused request

    assert (await store.tasks.get_task(task.id)).result == {"text": "counted 12"}
    steps = await store.activations.list_steps(task.id)
    kinds = [s.kind for s in steps]
    # nothing needed compacting before the overflow; right after it, one summary
    first_summary = kinds.index("summary")
    assert kinds[:first_summary] == ["model", "tool", "tool"] * (overflow_after + 1)
    assert kinds[first_summary + 1] == "model"
    retried, _ = model.requests[overflow_after + 1]
    assert sum(message_tokens(m) for m in retried[2:]) <= (budget.recent - schemas) // 4
    assert [a.outcome for a in await store.activations.list_activations(task_id=task.id)] == [
        "succeed"
    ]
