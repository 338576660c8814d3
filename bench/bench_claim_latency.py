"""Claim-to-start latency across processes on PostgreSQL: LISTEN/NOTIFY against polling.

This process creates tasks through a store of its own; a worker runtime runs in a child
process (``bench_claim_latency.py --worker URL``), so nothing in-process can wake it. With
LISTEN/NOTIFY the task's insert notifies the worker's LISTEN connection as it commits; without
it the worker finds the task at its next idle poll (1 s, ``RuntimeConfig.poll_seconds``).
Latency per task: its first activation's ``started_at`` - its ``created_at`` (see
``bench_latency``). Tasks are single-step ``noop`` tasks created one at a time, spaced and
jittered so creations do not line up with the poll period.

    .venv/bin/python bench/bench_claim_latency.py [--tasks 200] [--spacing 0.05]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator

from bench_latency import SPEC, _create_spaced, _latencies, _wait_done
from bench_support import fresh_database, postgres_problem, quiet_logs, summary
from steward.domain.clock import Clock
from steward.runtime.builtin import builtin_harness
from steward.runtime.runtime import Runtime, RuntimeConfig
from steward.service import Service
from steward.store import Store


async def worker(url: str, *, listen: bool) -> None:
    """The child: one worker runtime until SIGTERM."""
    quiet_logs()
    store = await Store.open(url, migrate_schema=False)
    runtime = Runtime(
        store, builtin_harness(), Clock(), RuntimeConfig(scheduler=False, listen=listen)
    )
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, runtime.stop)
    try:
        await runtime.run()
    finally:
        await store.close()


@contextlib.asynccontextmanager
async def child_worker(url: str, *, listen: bool) -> AsyncIterator[None]:
    mode = "--listen" if listen else "--poll"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--worker", url, mode, env={**os.environ}
    )
    try:
        yield
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), timeout=60)


async def measure(url: str, *, listen: bool, n: int, spacing: float) -> list[float]:
    store = await Store.open(url)
    try:
        clock = Clock()
        service = Service(store, clock)  # no runtime here: the worker is another process
        person = await service.ensure_person()
        async with child_worker(url, listen=listen):
            # a first task shows the worker is up and idle (not part of the sample)
            warm = await service.create_task(person_id=person.id, spec=SPEC)
            await _wait_done(store, [warm.id], within=120)
            await asyncio.sleep(1.5)
            ids = await _create_spaced(service, person.id, n, spacing)
            await _wait_done(store, ids, within=120)
        return await _latencies(store, ids)
    finally:
        await store.close()


async def main(n: int, spacing: float) -> None:
    quiet_logs()
    problem = postgres_problem()
    if problem:
        raise SystemExit(f"PostgreSQL is needed: {problem}")
    print(f"{n} tasks, ~{spacing * 1000:.0f} ms apart, worker in another process")
    for label, listen in (("LISTEN/NOTIFY", True), ("polling only (1 s)", False)):
        with fresh_database("postgres") as url:
            stats = summary(await measure(url, listen=listen, n=n, spacing=spacing))
        print(
            f"{label:>20}: p50 {stats['p50'] * 1000:7.1f} ms   p99 {stats['p99'] * 1000:7.1f} ms"
            f"   max {stats['max'] * 1000:7.1f} ms"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--spacing", type=float, default=0.05)
    parser.add_argument("--worker", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--poll", dest="listen", action="store_false", help=argparse.SUPPRESS)
    parser.add_argument("--listen", dest="listen", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        asyncio.run(worker(args.worker, listen=args.listen))
    else:
        asyncio.run(main(args.tasks, args.spacing))
