"""Bulk memory import: :meth:`Service.remember_many` over 100,000 generated statements, against
one :meth:`Service.remember` per statement on a smaller count.

    .venv/bin/python bench/bench_memory_import.py                     # SQLite, lexical
    .venv/bin/python bench/bench_memory_import.py --backend postgres
    .venv/bin/python bench/bench_memory_import.py --embedder minilm --size 20000
    .venv/bin/python bench/bench_memory_import.py --size 10000 --single 500 --json

The statements are what a chat history gives (:mod:`memory_dataset`'s chit-chat: one or two
clauses, plus a detail that makes most of them distinct), spread over three years, in three
audiences; about 10 % repeat an earlier one (half word for word, half nearly: another word
order, a word more), and about 3 % are values of one of 40 slots (a later value supersedes).
They go in calls of ``--per-call`` (the facade's most, 10,000), as an import would send them.
Timed: the whole import (memories/s) and the per-item ``remember`` rate on ``--single`` items
into a fresh database; each also per second of the process's CPU time (every thread), which
stays meaningful on a machine shared with other work, where wall time does not. With
``--embedder minilm`` every new memory is also embedded (in batches of 500); without, the
search is lexical only, as by default.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from bench_support import fresh_database, quiet_logs
from memory_dataset import chit_chat
from memory_eval import pick_embedder
from steward.domain.audience import Audience
from steward.domain.clock import SimulatedClock
from steward.domain.memory import MemoryKind, WriteOutcome
from steward.domain.memory_item import MemoryItem
from steward.memory.embedding import Embedder
from steward.service import Service
from steward.service.memory import MOST_IMPORTED
from steward.store import Store

TARGET_PER_SECOND = 1000.0
NOW = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)
AUDIENCES = ["private", "group:family", "group:work"]
SLOTS = [f"slot_{n}" for n in range(40)]
DETAILS = ["at breakfast", "on the train", "after the call", "at the market", "by the lake"]


def items(rng: random.Random, size: int) -> list[MemoryItem]:
    """``size`` statements in the order they were said, ~10 % of them repeats."""
    start = NOW - timedelta(days=3 * 365)
    step = (NOW - start) / size
    out: list[MemoryItem] = []
    for n in range(size):
        at = start + step * n
        if out and rng.random() < 0.1:
            earlier = rng.choice(out)
            content = earlier.content
            if rng.random() < 0.5:  # nearly the same: a word more
                content = f"{content} indeed"
            out.append(MemoryItem(content=content, audience=earlier.audience, observed_at=at))
            continue
        audience = rng.choices(AUDIENCES, weights=[60, 25, 15])[0]
        kind, text, subjects = chit_chat(rng, audience)
        if rng.random() < 0.5:
            _, more, extra = chit_chat(rng, audience)
            text, subjects = f"{text}; {more[0].lower()}{more[1:]}", (*subjects, *extra)
        text = f"{text} ({rng.choice(DETAILS)}, day {n // 7} of the diary, note {n})"
        slot = None
        if rng.random() < 0.03:
            kind, slot = MemoryKind.FACT, rng.choice(SLOTS)
        out.append(
            MemoryItem(
                content=text,
                kind=kind,
                subjects=subjects,
                slot=slot,
                audience=Audience.parse(audience),
                importance=round(rng.uniform(0.2, 0.9), 2),
                observed_at=at,
                ref=f"msg{n}",
            )
        )
    return out


async def bulk(url: str, batch: list[MemoryItem], per_call: int, embedder: Embedder | None) -> Any:
    store = await Store.open(url)
    try:
        svc = Service(store, SimulatedClock(NOW), embedder=embedder)
        me = (await svc.ensure_person()).id
        outcomes: dict[str, int] = {}
        began, cpu = time.perf_counter(), time.process_time()
        for start in range(0, len(batch), per_call):
            part = batch[start : start + per_call]
            for written in await svc.remember_many(person_id=me, items=part, import_name="chat"):
                outcomes[written.outcome] = outcomes.get(written.outcome, 0) + 1
        seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
        return {
            "items": len(batch),
            "seconds": round(seconds, 2),
            "per_second": round(len(batch) / seconds, 1),
            "cpu_seconds": round(cpu, 2),
            "per_cpu_second": round(len(batch) / cpu, 1),
            "outcomes": {str(k): v for k, v in outcomes.items()},
            "stored": await store.memory.count_memories(person_id=me),
        }
    finally:
        await store.close()


async def single(url: str, batch: list[MemoryItem], embedder: Embedder | None) -> Any:
    store = await Store.open(url)
    try:
        svc = Service(store, SimulatedClock(NOW), embedder=embedder)
        me = (await svc.ensure_person()).id
        began, cpu = time.perf_counter(), time.process_time()
        created = 0
        for item in batch:
            written = await svc.remember(
                person_id=me,
                content=item.content,
                kind=item.kind,
                subjects=item.subjects,
                slot=item.slot,
                audience=item.audience,
                importance=item.importance,
            )
            created += written.outcome is WriteOutcome.CREATED
        seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
        return {
            "items": len(batch),
            "created": created,
            "seconds": round(seconds, 2),
            "per_second": round(len(batch) / seconds, 1),
            "cpu_seconds": round(cpu, 2),
            "per_cpu_second": round(len(batch) / cpu, 1),
        }
    finally:
        await store.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--single", type=int, default=1_000, help="items for remember()")
    parser.add_argument("--per-call", type=int, default=MOST_IMPORTED)
    parser.add_argument("--embedder", choices=["none", "minilm", "hashing"], default="none")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    quiet_logs()
    embedder: Embedder | None = None
    note = "none (lexical)"
    if args.embedder != "none":
        embedder, note = pick_embedder(args.embedder)
    batch = items(random.Random(20), args.size)
    report: dict[str, Any] = {
        "backend": args.backend,
        "embedder": note,
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {sys.version.split()[0]}",
    }
    with fresh_database(args.backend) as url:
        report["bulk"] = await bulk(url, batch, args.per_call, embedder)
    if args.single:
        with fresh_database(args.backend) as url:
            report["single"] = await single(url, batch[: args.single], embedder)
    report["target_per_second"] = TARGET_PER_SECOND
    if args.json:
        print(json.dumps(report, indent=2))
        return
    b = report["bulk"]
    print(f"{args.backend}, embedder {note}; {report['machine']}")
    print(
        f"remember_many: {b['items']:,} items in {b['seconds']} s = {b['per_second']:,}/s "
        f"({b['per_cpu_second']:,}/s of CPU time; target {TARGET_PER_SECOND:,.0f}/s); "
        f"outcomes {b['outcomes']}; stored {b['stored']}"
    )
    if "single" in report:
        s = report["single"]
        print(
            f"remember:      {s['items']:,} items in {s['seconds']} s = {s['per_second']:,}/s "
            f"({s['per_cpu_second']:,}/s of CPU time)"
        )


if __name__ == "__main__":
    asyncio.run(main())
