"""Peer benchmark: a LangGraph tool loop with a zero-latency model, checkpointed to SQLite.

The same workload as Steward's harness benchmark (``bench/bench_harness.py``): T threads (tasks),
run one after another, each a loop of N model calls where the first N-1 answer with one call
of a trivial read-only tool and the last answers in words. The graph is the standard ReAct
shape: ``StateGraph(MessagesState)`` with an ``agent`` node (the chat model), a prebuilt
``ToolNode`` and ``tools_condition`` routing between them; it is compiled with LangGraph's
SQLite checkpointer, which saves a checkpoint after every super-step (the default).

The chat model is a ``BaseChatModel`` subclass whose ``_generate`` answers at once, counting
the tool results already in the conversation to decide between a tool call and the final
answer. The agent node times each ``model.invoke`` call: the interval from the end of one call
to the start of the next in the same thread is LangGraph's overhead for one loop iteration
(agent super-step checkpoint, routing, ToolNode, tools super-step checkpoint, next task set-up).

Settings:
  * ``--saver sync`` (default): ``SqliteSaver`` on a ``sqlite3`` connection, ``graph.invoke``;
    ``--saver async``: ``AsyncSqliteSaver`` on ``aiosqlite``, ``graph.ainvoke``.
  * ``--durability sync|async|exit``: LangGraph's durability mode. ``async`` is LangGraph's
    default (a checkpoint is written while the next step runs); ``sync`` waits for it.
  * ``--synchronous default|normal|full``: the connection's SQLite ``PRAGMA synchronous``.
    ``default`` leaves what ``sqlite3`` gives (FULL); the saver switches the file to WAL.
  * ``--concurrency C`` (async saver only): C threads in flight at once, for throughput.

This module is not imported by the project; ``langgraph`` is deliberately not a project
dependency. Run it with a separate virtualenv, e.g.::

    python3 -m venv /tmp/langgraph-venv
    /tmp/langgraph-venv/bin/pip install langgraph langgraph-checkpoint-sqlite
    /tmp/langgraph-venv/bin/python bench/peer_langgraph.py --tasks 200 --steps 20

Output: exactly one JSON line on stdout (diagnostics to stderr), with every iteration's
overhead in microseconds so the caller computes percentiles the same way for both systems.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any

import aiosqlite
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

Timings = list[tuple[float, float]]
"""(start, end) of each model call of one thread, perf_counter seconds."""


@tool
def lookup(n: int) -> str:
    """Look up item n."""
    return f"item {n}: ok"


class ToolLoopModel(BaseChatModel):
    """Zero-latency chat model: calls ``lookup`` until ``tool_calls`` results are in the
    conversation, then answers in words."""

    tool_calls: int

    @property
    def _llm_type(self) -> str:
        return "tool-loop-fake"

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, **kwargs: Any
    ) -> ChatResult:
        seen = sum(isinstance(m, ToolMessage) for m in messages)
        if seen < self.tool_calls:
            call = {"name": "lookup", "args": {"n": seen}, "id": f"call_{seen + 1}"}
            message = AIMessage(content="", tool_calls=[call])
        else:
            message = AIMessage(content="done")
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, **kwargs: Any
    ) -> ChatResult:
        # the base class would hop to a thread pool; the model is meant to cost nothing
        return self._generate(messages, stop, **kwargs)


def build_graph(model: ToolLoopModel, timings: dict[str, Timings], *, use_async: bool) -> Any:
    """The ReAct graph; the agent node records each model call's (start, end) per thread."""
    builder = StateGraph(MessagesState)
    if use_async:

        async def agent_async(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
            start = time.perf_counter()
            answer = await model.ainvoke(state["messages"])
            end = time.perf_counter()
            timings.setdefault(config["configurable"]["thread_id"], []).append((start, end))
            return {"messages": [answer]}

        builder.add_node("agent", agent_async)
    else:

        def agent(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
            start = time.perf_counter()
            answer = model.invoke(state["messages"])
            end = time.perf_counter()
            timings.setdefault(config["configurable"]["thread_id"], []).append((start, end))
            return {"messages": [answer]}

        builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([lookup]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder


def _pragma(setting: str) -> str | None:
    return None if setting == "default" else f"PRAGMA synchronous={setting.upper()}"


@contextmanager
def sync_saver(path: Path, synchronous: str) -> Iterator[tuple[SqliteSaver, sqlite3.Connection]]:
    # check_same_thread=False as in SqliteSaver.from_conn_string: LangGraph writes async
    # checkpoints from its executor threads
    conn = sqlite3.connect(str(path), check_same_thread=False)
    try:
        pragma = _pragma(synchronous)
        if pragma:
            conn.execute(pragma)
        yield SqliteSaver(conn), conn
    finally:
        conn.close()


def _check(result: dict[str, Any], steps: int) -> None:
    messages = result["messages"]
    tools = sum(isinstance(m, ToolMessage) for m in messages)
    if tools != steps - 1 or messages[-1].content != "done":
        raise RuntimeError(f"thread ended after {tools} tool results: {messages[-1]!r}")


def run_sync(
    tasks: int, steps: int, durability: str, synchronous: str, db: Path
) -> tuple[float, dict[str, Timings], dict[str, Any]]:
    model = ToolLoopModel(tool_calls=steps - 1)
    timings: dict[str, Timings] = {}
    with sync_saver(db, synchronous) as (saver, conn):
        graph = build_graph(model, timings, use_async=False).compile(checkpointer=saver)
        saver.setup()
        settings = _settings(conn.execute)
        start = time.perf_counter()
        for index in range(tasks):
            config = {"configurable": {"thread_id": f"t{index}"}}
            result = graph.invoke(
                {"messages": [HumanMessage(f"bench task {index}")]},
                config,
                durability=durability,
            )
            _check(result, steps)
        seconds = time.perf_counter() - start
        settings |= _counts(conn.execute)
    return seconds, timings, settings


async def run_async(
    tasks: int, steps: int, durability: str, synchronous: str, db: Path, concurrency: int
) -> tuple[float, dict[str, Timings], dict[str, Any]]:
    model = ToolLoopModel(tool_calls=steps - 1)
    timings: dict[str, Timings] = {}
    async with aiosqlite.connect(str(db)) as conn:
        pragma = _pragma(synchronous)
        if pragma:
            await conn.execute(pragma)
        saver = AsyncSqliteSaver(conn)
        await saver.setup()
        graph = build_graph(model, timings, use_async=True).compile(checkpointer=saver)
        settings = await _settings_async(conn)
        gate = asyncio.Semaphore(concurrency)

        async def one(index: int) -> None:
            async with gate:
                config = {"configurable": {"thread_id": f"t{index}"}}
                result = await graph.ainvoke(
                    {"messages": [HumanMessage(f"bench task {index}")]},
                    config,
                    durability=durability,
                )
                _check(result, steps)

        start = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(tasks)))
        seconds = time.perf_counter() - start
        for table in ("checkpoints", "writes"):
            async with conn.execute(f"SELECT count(*) FROM {table}") as cur:
                row = await cur.fetchone()
                settings[f"{table}_rows"] = row[0] if row else None
    return seconds, timings, settings


def _settings(execute: Callable[[str], Any]) -> dict[str, Any]:
    return {
        "journal_mode": execute("PRAGMA journal_mode").fetchone()[0],
        "synchronous": {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}[
            execute("PRAGMA synchronous").fetchone()[0]
        ],
    }


async def _settings_async(conn: aiosqlite.Connection) -> dict[str, Any]:
    values = []
    for pragma in ("journal_mode", "synchronous"):
        async with conn.execute(f"PRAGMA {pragma}") as cur:
            row = await cur.fetchone()
            values.append(row[0] if row else None)
    names = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
    return {"journal_mode": values[0], "synchronous": names.get(values[1], values[1])}


def _counts(execute: Callable[[str], Any]) -> dict[str, Any]:
    return {
        f"{table}_rows": execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        for table in ("checkpoints", "writes")
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="steward-peer-langgraph-") as tmp:
        db = Path(tmp) / "checkpoints.sqlite"
        if args.saver == "sync":
            seconds, timings, settings = run_sync(
                args.tasks, args.steps, args.durability, args.synchronous, db
            )
        else:
            seconds, timings, settings = asyncio.run(
                run_async(
                    args.tasks,
                    args.steps,
                    args.durability,
                    args.synchronous,
                    db,
                    args.concurrency,
                )
            )
    overhead_us: list[int] = []
    model_us: list[int] = []
    for calls in timings.values():
        if len(calls) != args.steps:
            raise RuntimeError(f"a thread made {len(calls)} model calls, expected {args.steps}")
        model_us += [round((end - start) * 1e6) for start, end in calls]
        overhead_us += [round((calls[i + 1][0] - calls[i][1]) * 1e6) for i in range(len(calls) - 1)]
    return {
        "system": "langgraph",
        "version": version("langgraph"),
        "checkpoint_sqlite_version": version("langgraph-checkpoint-sqlite"),
        "langchain_core_version": version("langchain-core"),
        "saver": "SqliteSaver" if args.saver == "sync" else "AsyncSqliteSaver",
        "durability": args.durability,
        "tasks": args.tasks,
        "model_calls_per_task": args.steps,
        "concurrency": args.concurrency if args.saver == "async" else 1,
        "seconds": round(seconds, 6),
        "sqlite": settings,
        # only meaningful when threads run one at a time: concurrent ones interleave
        "iteration_overhead_us": overhead_us if args.concurrency == 1 else [],
        "model_call_us": model_us,
    }


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tasks", type=_positive_int, default=200, help="threads, in turn")
    parser.add_argument(
        "--steps", type=_positive_int, default=20, help="model calls per thread (N-1 tool calls)"
    )
    parser.add_argument("--saver", choices=["sync", "async"], default="sync")
    parser.add_argument("--durability", choices=["sync", "async", "exit"], default="async")
    parser.add_argument("--synchronous", choices=["default", "normal", "full"], default="default")
    parser.add_argument(
        "--concurrency", type=_positive_int, default=1, help="threads at once (async saver)"
    )
    args = parser.parse_args(argv)
    if args.concurrency > 1 and args.saver != "async":
        parser.error("--concurrency needs --saver async")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    real_stdout = sys.stdout
    sys.stdout = sys.stderr
    try:
        result = run(args)
    finally:
        sys.stdout = real_stdout
    real_stdout.write(json.dumps(result) + "\n")
    real_stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
