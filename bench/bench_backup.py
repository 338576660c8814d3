"""Backup and restore: time and size for a database of 100,000 memories and 10,000 finished
tasks, plain and sealed with a passphrase.

    .venv/bin/python bench/bench_backup.py                        # SQLite
    .venv/bin/python bench/bench_backup.py --backend postgres
    .venv/bin/python bench/bench_backup.py --memories 10000 --tasks 1000

The memories come in through the bulk path (:meth:`Service.remember_many`, the statements of
:mod:`bench_memory_import`), the tasks are ``noop`` tasks a real worker finishes. Timed: the
backup (:func:`take_backup`), plain and sealed, and a restore of the plain one into a fresh
place; each also in CPU seconds of this process (pg_dump and pg_restore run as their own
processes: their time is in the wall figure only).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import platform
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_memory_import import NOW, bulk, items
from bench_support import fresh_database, quiet_logs
from steward.domain import TaskSpec, TaskStatus
from steward.domain.clock import Clock
from steward.runtime.builtin import builtin_harness
from steward.runtime.worker import Worker
from steward.service.backup import restore_backup, take_backup
from steward.store import Store


async def finished_tasks(url: str, count: int) -> None:
    store = await Store.open(url)
    try:
        clock = Clock()
        [person] = await store.persons.list_persons()
        spec = TaskSpec(kind="noop")
        for start in range(0, count, 500):
            await asyncio.gather(
                *(
                    store.tasks.create_task(spec, person_id=person.id, now=clock.now())
                    for _ in range(min(500, count - start))
                )
            )
        await Worker(store, builtin_harness(), clock, concurrency=64).run_until_idle()
        counts = await store.tasks.count_tasks()
        if counts.get(TaskStatus.SUCCEEDED.value) != count:
            raise RuntimeError(f"tasks did not all succeed: {counts}")
    finally:
        await store.close()


def timed(work: Callable[[], Any]) -> tuple[Any, float, float]:
    began, cpu = time.perf_counter(), time.process_time()
    result = work()
    return result, time.perf_counter() - began, time.process_time() - cpu


def run(backend: str, memories: int, tasks: int) -> dict[str, Any]:
    out: dict[str, Any] = {"backend": backend, "memories": memories, "tasks": tasks}
    with fresh_database(backend) as url, tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        data_dir = root / "data"
        data_dir.mkdir()
        asyncio.run(bulk(url, items(random.Random(7), memories), 10_000, None))
        asyncio.run(finished_tasks(url, tasks))
        for sealed in (False, True):
            made, seconds, cpu = timed(
                lambda s=sealed: take_backup(  # type: ignore[misc]
                    url=url,
                    data_dir=data_dir,
                    dest=root / ("sealed.bin" if s else "plain.tar.gz"),
                    now=NOW,
                    passphrase="correct horse battery staple" if s else None,
                )
            )
            key = "sealed" if sealed else "plain"
            out[f"backup_{key}_seconds"] = round(seconds, 2)
            out[f"backup_{key}_cpu_seconds"] = round(cpu, 2)
            out[f"backup_{key}_mib"] = round(made.size_bytes / 2**20, 1)
        restored = f"sqlite:///{root / 'restored' / 'steward.db'}"
        with (
            contextlib.nullcontext(restored)
            if backend == "sqlite"
            else fresh_database(backend) as target
        ):
            _, seconds, cpu = timed(
                lambda: restore_backup(
                    source=root / "plain.tar.gz", url=target, data_dir=root / "restored"
                )
            )
            out["restore_seconds"] = round(seconds, 2)
            out["restore_cpu_seconds"] = round(cpu, 2)
        if backend == "sqlite":
            out["database_mib"] = round(
                Path(url.removeprefix("sqlite:///")).stat().st_size / 2**20, 1
            )
    out["machine"] = f"{platform.machine()}, {platform.python_version()}"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--tasks", type=int, default=10_000)
    args = parser.parse_args()
    quiet_logs()
    print(json.dumps(run(args.backend, args.memories, args.tasks), indent=2))


if __name__ == "__main__":
    main()
