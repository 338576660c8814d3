"""The agent harness's own cost per step, its context assembly on a long task, and LangGraph's.

Everything runs through the real harness: :class:`~steward.harness.agent.AgentHarness` driven by
a real :class:`~steward.runtime.worker.Worker` on the system clock, with a
:class:`~steward.models.scripted.ScriptedModel` as a model that answers at once, one trivial
read-only ``@tool`` and the :class:`~steward.sentinel.defaults.AllowAll` sentinel.

* **harness** — 200 agent tasks, one at a time, each a loop of 20 model calls: 19 call the
  tool, the 20th answers in words (40 journal steps per task: 20 ``model``, 19 ``tool``, one
  ``finish``). A timing wrapper around the model records when each call starts and ends; the
  gap between one call's end and the next call's start in the same task is the harness's
  overhead for one *iteration*: commit the model's answer as a step, the sentinel check, run the
  tool, commit its observation as a step, check budgets, assemble the next prompt (read the
  recent steps, build the messages). Each iteration commits exactly two journal steps. Also a
  run with the store calls timed (where the time goes) and throughput with 16 tasks at once.
* **context** — one agent task driven by the harness through 10,000 journal steps (it stops on
  its activation step budget) with a small recent window (1,000 tokens), so older steps are
  compacted into the summary as it goes; it is then answered, claimed again, and the harness's
  context assembly for the next model call is timed 50 times. The same on a 40-step task, and
  on a 1,600-step task with the default budget, whose 6,000-token window holds ~800 of these
  tiny steps.
* **langgraph** — ``bench/peer_langgraph.py`` in its own virtualenv (``langgraph`` is not a
  project dependency): the same 20-call tool loop in LangGraph with its SQLite checkpointer,
  timed the same way, in three set-ups (see :data:`LANGGRAPH_PAIRS`) and 16 at once; each
  LangGraph run is paired with a run of ours made just before it and the ratio is taken within
  the pair.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench_support import REPO, Outcome, fresh_database, summary
from steward.domain import TaskSpec, TaskStatus
from steward.domain.clock import Clock
from steward.harness.activation import Activation
from steward.harness.agent import AgentConfig, AgentHarness
from steward.harness.budget import ActivationBudget
from steward.harness.context import ContextBudget
from steward.harness.tools import tool
from steward.harness.workspace import Workspace
from steward.models.base import Message, ModelResponse, OnDelta, ToolSpec
from steward.models.scripted import ScriptedModel, call_tool, say
from steward.runtime.run import TaskRun
from steward.runtime.worker import Worker
from steward.sentinel.defaults import AllowAll
from steward.store import Store

LANGGRAPH_VENV = Path("/tmp/langgraph-venv")
LANGGRAPH_PYTHON = LANGGRAPH_VENV / "bin" / "python"
LANGGRAPH_PACKAGES = ("langgraph", "langgraph-checkpoint-sqlite")
PEER_SCRIPT = REPO / "bench" / "peer_langgraph.py"
MODEL_CALLS = 20
"""Model calls per task: 19 tool calls, then the answer."""
LONG_TASK_STEPS = 10_000
WIDE_WINDOW_STEPS = 1_600
CONTEXT_REPEATS = 50
CONCURRENCY = 16


@tool
async def lookup(n: int) -> str:
    """Look up item n."""
    return f"item {n}: ok"


def tool_loop(tool_calls: int) -> ScriptedModel:
    """Calls ``lookup`` until ``tool_calls`` results are in the conversation, then answers."""

    def answer(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
        seen = sum(m.role == "tool" for m in messages)
        return call_tool("lookup", n=seen) if seen < tool_calls else say("done")

    return ScriptedModel(answer)


class TimedModel:
    """Wraps a model and records the (start, end) of each call, per task (told apart by the
    task text in the prompt's user message)."""

    def __init__(self, inner: ScriptedModel) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls: dict[str, list[tuple[float, float]]] = {}

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        on_delta: OnDelta | None = None,
    ) -> ModelResponse:
        # the scripted model keeps every request; nothing here reads them
        self.inner.requests.clear()
        start = time.perf_counter()
        response = await self.inner.complete(messages, tools, on_delta=on_delta)
        end = time.perf_counter()
        self.calls.setdefault(messages[1].content, []).append((start, end))
        return response

    def iteration_gaps(self) -> list[float]:
        """Seconds from the end of each model call to the start of the next in its task."""
        return [
            calls[i + 1][0] - calls[i][1]
            for calls in self.calls.values()
            for i in range(len(calls) - 1)
        ]

    def model_seconds(self) -> list[float]:
        return [end - start for calls in self.calls.values() for start, end in calls]


def _every_commit_durable(store: Store) -> None:
    """Send every write down the durable path (SQLite: ``synchronous=FULL``), as for effect
    intents: to compare with a peer that syncs every commit."""
    write = store.backend.write

    async def durable_write(op: Any, *, durable: bool = False) -> Any:
        return await write(op, durable=True)

    store.backend.write = durable_write  # type: ignore[method-assign]


def _us(values: Sequence[float]) -> dict[str, float]:
    """Percentiles of a sample in seconds, as microseconds."""
    return {k: (round(v * 1e6, 1) if k != "n" else v) for k, v in summary(values).items()}


async def ours(
    url: str,
    tasks: int,
    *,
    concurrency: int = 1,
    every_commit_durable: bool = False,
    breakdown: bool = False,
) -> dict[str, Any]:
    """Run ``tasks`` agent tasks of the 20-call tool loop; per-iteration overhead and rate.

    ``breakdown`` also times the store calls the loop makes (a separate run: the timing
    wrappers are not free)."""
    store = await Store.open(url)
    if every_commit_durable:
        _every_commit_durable(store)
    store_calls = _time_store_calls(store) if breakdown else {}
    try:
        clock = Clock()
        person = await store.persons.create_person(
            name="bench", now=clock.now(), max_concurrency=max(concurrency, 4)
        )
        model = TimedModel(tool_loop(MODEL_CALLS - 1))
        with tempfile.TemporaryDirectory(prefix="steward-bench-ws-") as ws:
            harness = AgentHarness(
                model=model, workspace=Workspace(Path(ws)), tools=[lookup], sentinel=AllowAll()
            )
            ids = []
            for index in range(tasks):
                spec = TaskSpec(
                    kind="agent",
                    title=f"bench task {index}",
                    input={"instructions": f"bench task {index}"},
                )
                ids.append(
                    (await store.tasks.create_task(spec, person_id=person.id, now=clock.now())).id
                )
            worker = Worker(store, harness, clock, concurrency=concurrency)
            start = time.perf_counter()
            await worker.run_until_idle()
            seconds = time.perf_counter() - start
        done = [await store.tasks.get_task(task_id) for task_id in ids]
        bad = [t.id for t in done if t.status is not TaskStatus.SUCCEEDED]
        if bad:
            raise RuntimeError(f"{len(bad)} tasks did not succeed: {bad[:3]}")
        steps_per_task = {t.step_seq for t in done}
        kinds = Counter(s.kind for s in await store.activations.list_steps(ids[0]))
    finally:
        await store.close()
    if steps_per_task != {2 * MODEL_CALLS}:
        raise RuntimeError(f"expected {2 * MODEL_CALLS} steps per task, got {steps_per_task}")
    gaps, model_time = model.iteration_gaps(), model.model_seconds()
    journal_steps = tasks * 2 * MODEL_CALLS
    result: dict[str, Any] = {
        "system": "steward",
        "every_commit_durable": every_commit_durable,
        "tasks": tasks,
        "model_calls_per_task": MODEL_CALLS,
        "concurrency": concurrency,
        "journal_steps_per_task": 2 * MODEL_CALLS,
        "step_kinds_of_a_task": dict(kinds),
        "seconds": round(seconds, 6),
        "iterations_per_second": round(tasks * (MODEL_CALLS - 1) / seconds, 1),
        "journal_steps_per_second": round(journal_steps / seconds, 1),
        "tasks_per_second": round(tasks / seconds, 2),
        "model_call_us": _us(model_time),
    }
    if concurrency == 1:
        result["iteration_overhead_us"] = _us(gaps)
        # what the run cost besides the iterations and the model: claim, first prompt, finish
        fixed = seconds - sum(gaps) - sum(model_time)
        result["per_task_fixed_us"] = round(fixed / tasks * 1e6, 1)
    if breakdown:
        result["store_calls"] = {
            name: {"calls": len(times), "mean_us": round(sum(times) / len(times) * 1e6, 1)}
            for name, times in store_calls.items()
            if times
        }
        # all the time spent in each call, spread over the iterations (an iteration makes two
        # checkpoints; the recent steps are read once per activation)
        iterations = tasks * (MODEL_CALLS - 1)
        result["store_us_per_iteration"] = {
            name: round(sum(store_calls[name]) / iterations * 1e6, 1)
            for name in ("checkpoint", "list_steps")
        }
    return result


def _time_store_calls(store: Store) -> dict[str, list[float]]:
    """Wrap the store calls the agent loop makes with timers; returns the timings."""
    times: dict[str, list[float]] = {}
    calls: list[tuple[object, str]] = [
        (store.tasks, "claim_tasks"),
        (store.activations, "checkpoint"),
        (store.activations, "list_steps"),
        (store.activations, "finish_activation"),
    ]
    for repository, name in calls:
        inner = getattr(repository, name)
        samples = times.setdefault(name, [])

        async def timed(*args: Any, _inner: Any = inner, _samples: Any = samples, **kw: Any) -> Any:
            start = time.perf_counter()
            try:
                return await _inner(*args, **kw)
            finally:
                _samples.append(time.perf_counter() - start)

        setattr(repository, name, timed)
    return times


def context_cases(quick: bool) -> list[tuple[int, ContextBudget, str]]:
    """(journal steps, context budget, label) of each context-assembly case."""
    small = ContextBudget(recent=1000)
    if quick:
        return [(40, ContextBudget(), "default budget"), (2_000, small, "recent 1,000 tokens")]
    return [
        (40, ContextBudget(), "default budget"),
        (LONG_TASK_STEPS, small, "recent 1,000 tokens"),
        # the default recent window (6,000 tokens) holds ~800 of these tiny steps
        (WIDE_WINDOW_STEPS, ContextBudget(), "default budget"),
    ]


async def bench_harness(backend: str, quick: bool) -> Outcome:
    """Per-iteration overhead of the agent harness with a zero-latency model; context assembly
    on a 10,000-step task."""
    out = Outcome()
    tasks, fewer = (40, 32) if quick else (200, 96)
    runs: dict[str, dict[str, Any]] = {}
    for label, count, kwargs in (
        ("sequential", tasks, {}),
        ("sequential, store calls timed", fewer, {"breakdown": True}),
        (f"{CONCURRENCY} at once", fewer, {"concurrency": CONCURRENCY}),
    ):
        with fresh_database(backend) as url:
            runs[label] = await ours(url, count, **kwargs)
    out.details["loop"] = runs
    seq = runs["sequential"]
    gap = seq["iteration_overhead_us"]
    out.add(
        bench="harness",
        backend=backend,
        name="harness overhead per iteration, p50 / p99",
        value=round(gap["p50"] / 1000, 3),
        unit="ms",
        note=f"p99 {gap['p99'] / 1000:.2f} ms; per journal step (2 per iteration) "
        f"{gap['p50'] / 2000:.2f} / {gap['p99'] / 2000:.2f} ms; {tasks} tasks x {MODEL_CALLS} "
        "model calls, sequential",
    )
    timed = runs["sequential, store calls timed"]
    in_store = timed["store_us_per_iteration"]
    out.add(
        bench="harness",
        backend=backend,
        name="agent loop throughput, sequential",
        value=seq["journal_steps_per_second"],
        unit="steps/s",
        note=f"{seq['iterations_per_second']:,.0f} iterations/s; fixed cost per task "
        f"{seq['per_task_fixed_us'] / 1000:.2f} ms; a run with the store timed: iteration "
        f"mean {timed['iteration_overhead_us']['mean'] / 1000:.2f} ms, of which 2 checkpoints "
        f"{in_store['checkpoint'] / 1000:.2f} ms and list_steps "
        f"{in_store['list_steps'] / 1000:.2f} ms",
    )
    wide = runs[f"{CONCURRENCY} at once"]
    out.add(
        bench="harness",
        backend=backend,
        name=f"agent loop throughput, {fewer} tasks, {CONCURRENCY} at once",
        value=wide["journal_steps_per_second"],
        unit="steps/s",
        note=f"{wide['iterations_per_second']:,.0f} iterations/s",
    )
    for journal_steps, budget, label in context_cases(quick):
        with fresh_database(backend) as url:
            ctx = await context_assembly(url, journal_steps, budget)
        out.details[f"context, {journal_steps} steps, {label}"] = ctx
        timing = ctx["assembly_us"]
        out.add(
            bench="harness",
            backend=backend,
            name=f"context assembly, task of {ctx['journal_steps']:,} steps, {label}, p50 / p99",
            value=round(timing["p50"] / 1000, 3),
            unit="ms",
            note=f"p99 {timing['p99'] / 1000:.2f} ms; first in an activation (reads the "
            f"window from the store) {ctx['first_assembly_us'] / 1000:.2f} ms; "
            f"prompt {ctx['prompt_tokens']:,} tokens; "
            f"{ctx['recent_steps']} recent steps verbatim after step "
            f"{ctx['summarized_through']:,}; iteration overhead p50 by tenth of the drive (ms): "
            + " ".join(f"{us / 1000:.1f}" for us in ctx["drive_iteration_overhead_p50_by_tenth"]),
        )
    return out


async def context_assembly(url: str, journal_steps: int, budget: ContextBudget) -> dict[str, Any]:
    """Drive one agent task through ``journal_steps`` steps (the activation's step budget stops
    it there), answer it so it is runnable again, claim it, and time the harness's context
    assembly for its next model call."""
    store = await Store.open(url)
    try:
        clock = Clock()
        person = await store.persons.create_person(name="bench", now=clock.now(), max_concurrency=4)
        model = TimedModel(ScriptedModel([call_tool("lookup", n=7)], loop_last=True))
        config = AgentConfig(budget=ActivationBudget(max_steps=journal_steps), context=budget)
        with tempfile.TemporaryDirectory(prefix="steward-bench-ws-") as ws:
            harness = AgentHarness(
                model=model,
                workspace=Workspace(Path(ws)),
                tools=[lookup],
                sentinel=AllowAll(),
                config=config,
            )
            spec = TaskSpec(kind="agent", title="long task", input={"instructions": "long task"})
            task = await store.tasks.create_task(spec, person_id=person.id, now=clock.now())
            worker = Worker(store, harness, clock, concurrency=1)
            start = time.perf_counter()
            await worker.run_until_idle()
            drive_seconds = time.perf_counter() - start
            waiting = await store.tasks.get_task(task.id)
            if waiting.status is not TaskStatus.WAITING or waiting.step_seq < journal_steps:
                raise RuntimeError(f"long task is {waiting.status} at step {waiting.step_seq}")
            await store.inbox.answer_input(task.id, "go on", now=clock.now())
            claims = await store.tasks.claim_tasks(
                worker="bench", limit=1, lease_seconds=300, now=clock.now()
            )
            run = TaskRun(store=store, clock=clock, claim=claims[0])
            # the harness's own context assembly: the thing being measured
            activation = Activation(harness, run)
            specs = [t.spec for t in activation.offered_tools()]
            first = time.perf_counter()
            context = await activation.context(specs, shrink=False)
            first_seconds = time.perf_counter() - first
            seconds = []
            for _ in range(CONTEXT_REPEATS):
                begin = time.perf_counter()
                context = await activation.context(specs, shrink=False)
                seconds.append(time.perf_counter() - begin)
            through = int(run.state["summarized_through"])
            recent = await store.activations.list_steps(task.id, after=through, limit=100_000)
            kinds = Counter(
                s.kind for s in await store.activations.list_steps(task.id, limit=100_000)
            )
    finally:
        await store.close()
    gaps = model.iteration_gaps()
    tenth = max(1, len(gaps) // 10)
    return {
        "journal_steps": waiting.step_seq,
        "step_kinds": dict(kinds),
        "context_budget": asdict(budget),
        "drive_seconds": round(drive_seconds, 3),
        "drive_iteration_overhead_us": _us(gaps),
        "drive_iteration_overhead_p50_by_tenth": [
            _us(gaps[i : i + tenth])["p50"] for i in range(0, tenth * 10, tenth)
        ],
        "summarized_through": through,
        "recent_steps": len(recent),
        "prompt_tokens": context.tokens,
        "prompt_messages": len(context.messages),
        "prompt_parts": {p.name: p.tokens for p in context.parts},
        "first_assembly_us": round(first_seconds * 1e6, 1),
        "assembly_us": _us(seconds),
    }


# --- LangGraph ------------------------------------------------------------------------------


def ensure_langgraph_venv() -> str | None:
    """Create /tmp/langgraph-venv with LangGraph and its SQLite checkpointer if missing. None if
    usable, else why not."""
    if not LANGGRAPH_PYTHON.exists():
        print(f"creating {LANGGRAPH_VENV} (pip install langgraph)...", file=sys.stderr, flush=True)
        made = subprocess.run(
            [sys.executable, "-m", "venv", str(LANGGRAPH_VENV)],
            capture_output=True,
            text=True,
            check=False,
        )
        if made.returncode != 0:
            return f"could not create {LANGGRAPH_VENV}: {made.stderr[-500:]}"
    probe = subprocess.run(
        [str(LANGGRAPH_PYTHON), "-c", "import langgraph.checkpoint.sqlite, aiosqlite"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        installed = subprocess.run(
            [str(LANGGRAPH_VENV / "bin" / "pip"), "install", "-q", *LANGGRAPH_PACKAGES],
            capture_output=True,
            text=True,
            check=False,
        )
        if installed.returncode != 0:
            return f"pip install langgraph failed: {installed.stderr[-500:]}"
    return None


def langgraph(tasks: int, *options: str) -> dict[str, Any]:
    """Run the LangGraph peer in a subprocess; its JSON line with percentiles computed here."""
    args = [str(LANGGRAPH_PYTHON), str(PEER_SCRIPT), "--tasks", str(tasks), *options]
    args += ["--steps", str(MODEL_CALLS)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"peer_langgraph.py exited {done.returncode}: {done.stderr[-1500:]}")
    lines = [line for line in done.stdout.splitlines() if line.strip().startswith("{")]
    if not lines:
        raise RuntimeError(f"peer_langgraph.py printed no JSON: {done.stdout[-500:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    gaps = [us / 1e6 for us in result.pop("iteration_overhead_us")]
    model_time = [us / 1e6 for us in result.pop("model_call_us")]
    seconds = result["seconds"]
    checkpoints = result["sqlite"]["checkpoints_rows"]
    result |= {
        "iterations_per_second": round(tasks * (MODEL_CALLS - 1) / seconds, 1),
        "checkpoints_per_task": checkpoints / tasks,
        "checkpoints_per_second": round(checkpoints / seconds, 1),
        "tasks_per_second": round(tasks / seconds, 2),
        "model_call_us": _us(model_time),
    }
    if gaps:
        result["iteration_overhead_us"] = _us(gaps)
        result["per_task_fixed_us"] = round(
            (seconds - sum(gaps) - sum(model_time)) / tasks * 1e6, 1
        )
    return result


LANGGRAPH_PAIRS = (
    (
        "SqliteSaver, durability=sync, synchronous=NORMAL",
        ("--saver", "sync", "--durability", "sync", "--synchronous", "normal"),
        False,
    ),
    (
        "SqliteSaver, durability=sync, synchronous=FULL",
        ("--saver", "sync", "--durability", "sync", "--synchronous", "full"),
        True,
    ),
    (
        "AsyncSqliteSaver, durability=async, synchronous=FULL",
        ("--saver", "async", "--durability", "async", "--synchronous", "full"),
        False,
    ),
)
"""(label, peer options, ours with every commit FULL) of each sequential comparison. The first
two commit each step before the next one starts, as ours does, at SQLite's NORMAL and FULL
sync levels (ours then at the same level); the third is LangGraph's own defaults (durability
``async``, ``sqlite3``'s FULL) on its async saver, the fastest LangGraph set-up measured."""


async def bench_langgraph(backend: str, quick: bool) -> Outcome:
    """LangGraph on the same tool loop (SQLite checkpointer), and our ratio to it.

    The machine's load drifts within minutes, so each LangGraph run is paired with a run of
    ours made just before it, and the ratio is taken within the pair."""
    out = Outcome()
    problem = await asyncio.to_thread(ensure_langgraph_venv)
    if problem is not None:
        out.details["skipped"] = problem
        out.add(
            bench="langgraph",
            backend="sqlite",
            name="LangGraph peer",
            value=None,
            unit="",
            note=problem,
        )
        return out
    tasks = 40 if quick else 100
    for label, options, durable in LANGGRAPH_PAIRS:
        with fresh_database("sqlite") as url:
            mine = await ours(url, tasks, every_commit_durable=durable)
        peer = await asyncio.to_thread(langgraph, tasks, *options)
        ours_gap, peer_gap = mine["iteration_overhead_us"], peer["iteration_overhead_us"]
        ratio = ours_gap["p50"] / peer_gap["p50"]
        out.details[label] = {
            "langgraph": peer,
            "ours": mine,
            "ratio_p50": round(ratio, 3),
            "ratio_p99": round(ours_gap["p99"] / peer_gap["p99"], 3),
            "ratio_iterations_per_second": round(
                mine["iterations_per_second"] / peer["iterations_per_second"], 3
            ),
        }
        out.details["version"] = peer["version"]
        out.add(
            bench="langgraph",
            backend="sqlite",
            name=f"LangGraph {peer['version']} overhead per iteration, {label}, p50 / p99",
            value=round(peer_gap["p50"] / 1000, 3),
            unit="ms",
            note=f"p99 {peer_gap['p99'] / 1000:.2f} ms; {peer['checkpoints_per_task']:.0f} "
            f"checkpoints per task; {peer['iterations_per_second']:,.0f} iterations/s",
        )
        same = "every commit FULL" if durable else "default"
        out.add(
            bench="langgraph",
            backend="sqlite",
            name=f"ratio ours ({same})/LangGraph per-iteration overhead p50, {label}",
            value=round(ratio, 3),
            unit="x",
            target="< 1",
            met=ratio < 1,
            note=f"ours {ours_gap['p50'] / 1000:.2f} / {ours_gap['p99'] / 1000:.2f} ms (p50 / "
            f"p99) in the run just before; p99 ratio {out.details[label]['ratio_p99']:.2f}; "
            f"iterations/s (whole run) ours {mine['iterations_per_second']:,.0f}, LangGraph "
            f"{peer['iterations_per_second']:,.0f}",
        )
    wide_tasks = 32 if quick else 96
    with fresh_database("sqlite") as url:
        mine_wide = await ours(url, wide_tasks, concurrency=CONCURRENCY)
    options = ("--saver", "async", "--durability", "async", "--concurrency", str(CONCURRENCY))
    peer_wide = await asyncio.to_thread(langgraph, wide_tasks, *options)
    ratio = mine_wide["iterations_per_second"] / peer_wide["iterations_per_second"]
    out.details[f"{CONCURRENCY} at once"] = {
        "langgraph": peer_wide,
        "ours": mine_wide,
        "ratio_iterations_per_second": round(ratio, 3),
    }
    out.add(
        bench="langgraph",
        backend="sqlite",
        name=f"ratio ours/LangGraph iterations/s, {wide_tasks} tasks, {CONCURRENCY} at once",
        value=round(ratio, 2),
        unit="x",
        note=f"ours {mine_wide['iterations_per_second']:,.0f}, LangGraph (AsyncSqliteSaver, "
        f"durability=async) {peer_wide['iterations_per_second']:,.0f} iterations/s",
    )
    return out
