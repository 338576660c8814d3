"""Checkpointed steps per second for a no-op step, ours and DBOS's, on the same WxN shape.

Ours: W tasks of the built-in ``noop`` kind with ``{"steps": N}``, run by one real
:class:`~steward.runtime.worker.Worker` (claim under lease, fenced checkpoint per step, heartbeat,
finish) with concurrency C, on the system clock. The timed span is from the first claim to the
last task finished; creating the tasks is not timed. Every step is one committed checkpoint (the
task row's state and a ``steps`` row, one transaction); concurrent checkpoints share commits on
SQLite (group commit).

DBOS: ``bench/peer_dbos.py`` in its own virtualenv (``dbos`` is not a project dependency), W
workflows of N ``@DBOS.step()`` no-ops on a SQLite system database, sequential or C at a time.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_support import REPO, Outcome, fresh_database
from steward.domain import TaskSpec, TaskStatus
from steward.domain.clock import Clock
from steward.runtime.builtin import builtin_harness
from steward.runtime.worker import Worker
from steward.store import Store

DBOS_VENV = Path("/tmp/dbos-venv")
DBOS_PYTHON = DBOS_VENV / "bin" / "python"
PEER_SCRIPT = REPO / "bench" / "peer_dbos.py"
TARGET_STEPS = 3000.0
TARGET_RATIO = 5.0
REPEATS = 3


def shapes(quick: bool) -> list[tuple[int, int, int]]:
    """(workflows W, steps N, concurrency C) for each case: sequential, 16 and 64 at once."""
    # sized so that ours runs for 0.5-1 s and DBOS (350-550 steps/s here) for 15-25 s
    if quick:
        return [(1, 1000, 1), (16, 200, 16)]
    return [(1, 5000, 1), (16, 500, 16), (64, 125, 64)]


async def ours(
    url: str, workflows: int, steps: int, concurrency: int, *, every_commit_durable: bool = False
) -> dict[str, Any]:
    """Run W noop tasks of N steps with one worker of concurrency C; steps/s over the run.

    ``every_commit_durable`` sends every write down the store's durable path (on SQLite:
    ``synchronous=FULL``, as for effect intents), to compare with a peer that syncs every commit.
    """
    store = await Store.open(url)
    if every_commit_durable:
        write = store.backend.write

        async def durable_write(op: Any, *, durable: bool = False) -> Any:
            return await write(op, durable=True)

        store.backend.write = durable_write  # type: ignore[method-assign]
    try:
        clock = Clock()
        person = await store.persons.create_person(
            name="bench", now=clock.now(), max_concurrency=max(concurrency, 4)
        )
        spec = TaskSpec(kind="noop", input={"steps": steps})
        task_ids = [
            t.id
            for t in await asyncio.gather(
                *(
                    store.tasks.create_task(spec, person_id=person.id, now=clock.now())
                    for _ in range(workflows)
                )
            )
        ]
        worker = Worker(store, builtin_harness(), clock, concurrency=concurrency)
        start = time.perf_counter()
        activations = await worker.run_until_idle()
        seconds = time.perf_counter() - start
        done = [await store.tasks.get_task(tid) for tid in task_ids]
        bad = [t.id for t in done if t.status is not TaskStatus.SUCCEEDED or t.step_seq != steps]
        if bad:
            raise RuntimeError(f"{len(bad)} tasks did not finish all {steps} steps: {bad[:3]}")
    finally:
        await store.close()
    total = workflows * steps
    return {
        "system": "steward",
        "every_commit_durable": every_commit_durable,
        "workflows": workflows,
        "steps_per_workflow": steps,
        "concurrency": concurrency,
        "activations": activations,
        "seconds": round(seconds, 6),
        "steps_per_second": round(total / seconds, 2),
    }


def ensure_dbos_venv() -> str | None:
    """Create /tmp/dbos-venv with ``pip install dbos`` if missing. None if usable, else why not."""
    if not PEER_SCRIPT.exists():
        return f"{PEER_SCRIPT} does not exist"
    if not DBOS_PYTHON.exists():
        print(f"creating {DBOS_VENV} (pip install dbos)...", file=sys.stderr, flush=True)
        # a venv made from the project's interpreter uses the same base Python
        made = subprocess.run(
            [sys.executable, "-m", "venv", str(DBOS_VENV)],
            capture_output=True,
            text=True,
            check=False,
        )
        if made.returncode != 0:
            return f"could not create {DBOS_VENV}: {made.stderr[-500:]}"
    probe = subprocess.run(
        [str(DBOS_PYTHON), "-c", "import dbos"], capture_output=True, text=True, check=False
    )
    if probe.returncode != 0:
        installed = subprocess.run(
            [str(DBOS_VENV / "bin" / "pip"), "install", "-q", "dbos"],
            capture_output=True,
            text=True,
            check=False,
        )
        if installed.returncode != 0:
            return f"pip install dbos failed: {installed.stderr[-500:]}"
    return None


def dbos(workflows: int, steps: int, concurrency: int) -> dict[str, Any]:
    """Run the DBOS peer in a subprocess and return its JSON result line."""
    with tempfile.TemporaryDirectory(prefix="steward-bench-dbos-") as tmp:
        args = [
            str(DBOS_PYTHON),
            str(PEER_SCRIPT),
            "--workflows",
            str(workflows),
            "--steps",
            str(steps),
            "--db",
            str(Path(tmp) / "dbos.sqlite"),
        ]
        if concurrency > 1:
            args += ["--concurrency", str(concurrency)]
        done = subprocess.run(args, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"peer_dbos.py exited {done.returncode}: {done.stderr[-1500:]}")
    lines = [line for line in done.stdout.splitlines() if line.strip().startswith("{")]
    if not lines:
        raise RuntimeError(f"peer_dbos.py printed no JSON: {done.stdout[-500:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def _case(workflows: int, steps: int, concurrency: int) -> str:
    return f"{workflows}x{steps} c={concurrency}"


async def bench_steps(backend: str, quick: bool) -> Outcome:
    """Checkpointed no-op steps per second on one backend."""
    out = Outcome()
    # PostgreSQL runs take ~20 s each; one run keeps the whole suite near ten minutes
    repeats = 1 if quick or backend != "sqlite" else REPEATS
    for workflows, steps, concurrency in shapes(quick):
        runs = []
        for _ in range(repeats):
            with fresh_database(backend) as url:
                runs.append(await ours(url, workflows, steps, concurrency))
        rates = sorted(r["steps_per_second"] for r in runs)
        result = runs[0] | {
            "runs": runs,
            "steps_per_second": statistics.median(rates),
            "seconds": statistics.median(r["seconds"] for r in runs),
        }
        out.details[_case(workflows, steps, concurrency)] = result
        rate = result["steps_per_second"]
        on_sqlite = backend == "sqlite"
        spread = f"median of {repeats}: {rates[0]:,.0f}..{rates[-1]:,.0f}" if repeats > 1 else ""
        out.add(
            bench="steps",
            backend=backend,
            name=f"no-op steps/s, {_case(workflows, steps, concurrency)}",
            value=rate,
            unit="steps/s",
            target=f">= {TARGET_STEPS:,.0f} (SQLite)" if on_sqlite else "",
            met=rate >= TARGET_STEPS if on_sqlite else None,
            note=spread,
        )
    return out


async def bench_dbos(backend: str, quick: bool) -> Outcome:
    """DBOS on the same shapes (SQLite system database), and our ratio to it.

    The machine is shared and its load drifts within minutes, so each DBOS run is paired with
    a run of ours on the same shape made just before it, and the ratio is taken within the pair.
    """
    out = Outcome()
    problem = await asyncio.to_thread(ensure_dbos_venv)
    if problem is not None:
        out.details["skipped"] = problem
        out.add(bench="dbos", backend="sqlite", name="DBOS peer", value=None, unit="", note=problem)
        return out
    probe = await asyncio.to_thread(
        subprocess.run,
        [str(DBOS_PYTHON), "-c", "import sys; print(sys.version.split()[0])"],
        capture_output=True,
        text=True,
        check=False,
    )
    out.details["python"] = probe.stdout.strip()
    for workflows, steps, concurrency in shapes(quick):
        case = _case(workflows, steps, concurrency)
        with fresh_database("sqlite") as url:
            mine = await ours(url, workflows, steps, concurrency)
        with fresh_database("sqlite") as url:
            synced = await ours(url, workflows, steps, concurrency, every_commit_durable=True)
        result = await asyncio.to_thread(dbos, workflows, steps, concurrency)
        rate = result["steps_per_second"]
        ratio = mine["steps_per_second"] / rate
        synced_ratio = synced["steps_per_second"] / rate
        out.details[case] = {
            "dbos": result,
            "ours": mine,
            "ours_every_commit_full": synced,
            "ratio_ours_to_dbos": round(ratio, 2),
            "ratio_ours_every_commit_full_to_dbos": round(synced_ratio, 2),
        }
        out.details["version"] = result.get("version")
        out.add(
            bench="dbos",
            backend="sqlite",
            name=f"DBOS {result.get('version')} steps/s, {case}",
            value=rate,
            unit="steps/s",
        )
        out.add(
            bench="dbos",
            backend="sqlite",
            name=f"ratio ours/DBOS, {case}",
            value=round(ratio, 2),
            unit="x",
            target=f">= {TARGET_RATIO:.0f}x",
            met=ratio >= TARGET_RATIO,
            note=f"ours {mine['steps_per_second']:,.0f} steps/s in the run just before",
        )
        out.add(
            bench="dbos",
            backend="sqlite",
            name=f"ratio ours (every commit FULL)/DBOS, {case}",
            value=round(synced_ratio, 2),
            unit="x",
            note=f"ours {synced['steps_per_second']:,.0f} steps/s with synchronous=FULL "
            "on every commit (DBOS syncs every step)",
        )
    return out
