"""Memory retrieval latency: :meth:`Retriever.search` over 100,000 memories of one person on
SQLite, lexical, semantic and hybrid.

    .venv/bin/python bench/memory_latency.py                  # 100,000 memories
    .venv/bin/python bench/memory_latency.py --keep /tmp/m100k.db   # build once, then reuse
    .venv/bin/python bench/memory_latency.py --size 10000 --queries 100 --json

Building 100,000 memories takes about 2 minutes on the project's 2-core machine, 1,000,000
about 20; the searches 2-3 minutes more. ``--build-only`` builds (with ``--keep``) and stops,
so that the searches can be timed later on a quiet machine.

The memories are chit-chat of the sort :mod:`memory_dataset` makes (one or two clauses each),
over two years, in the person's three audiences (60 % private, 25 % family, 15 % work); 5 % are
no longer valid (a past ``valid_to``), 2 % archived and 1 % candidates, so the filters have
something to filter. They are written through the bulk path (``store.memory_bulk``, 2,000 a
transaction, as an import writes them; the write rules' look-ups for duplicates and slot
neighbours are not what is measured here).

Vectors: embedding 100,000 texts with MiniLM takes ~6 minutes on 2 cores, so only
``--unique-vectors`` texts (default 2,000) are embedded and every other memory gets the vector
of a random one of those plus Gaussian noise (cosine ≈ 0.9 to it), renormalised. The query is
embedded for real by the same embedder, inside the timed search. Without MiniLM installed the
vectors and queries come from :class:`HashingEmbedder` (dim 256, not semantic), and the output
says so; the cost of the search itself is the same shape.

Timed: each of ``--queries`` queries (texts from the evaluation set and chit-chat-style
questions, 70 % asked in private, 30 % in a group) once per mode, the modes interleaved, after
one untimed query per mode. The first semantic query also loads every vector into the
in-process index; it is reported apart as the cold start. Also timed apart, to show where a
search's time goes: the query embedding, the vector-index freshness check, the similarity over
the matrix, picking the nearest 200, filtering them by status, validity and audience, the
full-text query, and reading the ten results.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from bench_support import (
    fresh_database,
    percentile,
    quiet_logs,
    sqlite_bytes,
)
from memory_dataset import CITIES, DRINKS, FRIENDS, TOPICS, chit_chat, generate
from memory_eval import pick_embedder
from steward.domain.audience import Audience
from steward.domain.memory import Memory, MemoryKind, MemoryStatus, Source, SourceKind
from steward.memory.embedding import Embedder, pack, unit
from steward.memory.retrieval import CANDIDATES, Retriever, SearchMode
from steward.store import Store

TARGET_P99_MS = 50.0
NOW = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)
AUDIENCES = ["private", "group:family", "group:work"]
KINDS = [MemoryKind.EPISODE, MemoryKind.NOTE, MemoryKind.FACT, MemoryKind.PREFERENCE]


def corpus(rng: random.Random, size: int, person: str) -> list[Memory]:
    """``size`` memories of one person."""
    out: list[Memory] = []
    for i in range(size):
        audience = rng.choices(AUDIENCES, weights=[60, 25, 15])[0]
        _, text, subjects = chit_chat(rng, audience)
        if rng.random() < 0.5:
            _, more, extra = chit_chat(rng, audience)
            text = f"{text}; {more[0].lower()}{more[1:]}"
            subjects = (*subjects, *extra)
        observed = NOW - timedelta(minutes=rng.randrange(2 * 365 * 24 * 60))
        roll = rng.random()
        status = (
            MemoryStatus.ARCHIVED
            if roll < 0.02
            else MemoryStatus.CANDIDATE
            if roll < 0.03
            else MemoryStatus.ACTIVE
        )
        ended = rng.random() < 0.05
        out.append(
            Memory(
                id=f"mem_{i:020d}",
                person_id=person,
                kind=rng.choice(KINDS),
                content=text,
                sources=(Source(kind=SourceKind.CONVERSATION, ref=f"ses_{i // 4}", trusted=True),),
                subjects=tuple(dict.fromkeys(subjects)),
                slot=f"slot_{rng.randrange(500)}" if ended else None,
                audience=Audience.parse(audience),
                importance=round(rng.uniform(0.2, 0.8), 2),
                observed_at=observed,
                valid_to=observed + timedelta(days=rng.randrange(1, 60)) if ended else None,
                status=status,
                created_at=observed,
                updated_at=observed,
            )
        )
    return out


def queries(rng: random.Random, n: int) -> list[tuple[str, Audience]]:
    texts = [q.text for q in generate().queries]
    templates = [
        "What did she watch with {friend}?",
        "Where did she have {drink} last time?",
        "What does she think about {topic}?",
        "Who was talking about moving to {city}?",
        "Has she been to {city} recently?",
        "What did {friend} recommend to her?",
    ]
    fields = {"friend": FRIENDS, "drink": DRINKS, "topic": TOPICS, "city": CITIES}
    while len(texts) < n:
        template = rng.choice(templates)
        texts.append(template.format(**{k: rng.choice(v) for k, v in fields.items()}))
    rng.shuffle(texts)
    return [
        (
            text,
            Audience.parse("private")
            if rng.random() < 0.7
            else Audience.parse(rng.choice(AUDIENCES[1:])),
        )
        for text in texts[:n]
    ]


async def vectors(
    embedder: Embedder, texts: list[str], unique: int, rng: random.Random
) -> tuple[np.ndarray[Any, np.dtype[np.float32]], float]:
    """One vector per text: ``unique`` of them embedded, the rest reused with noise."""
    started = time.perf_counter()
    base = await embedder.embed(texts[:unique])
    seconds = time.perf_counter() - started
    dim = base.shape[1]
    picks = np.array([rng.randrange(len(base)) for _ in range(len(texts) - len(base))])
    noise = np.random.default_rng(rng.randrange(2**32)).normal(
        0.0, 0.49 / np.sqrt(dim), size=(len(picks), dim)
    )
    rest = unit(base[picks] + noise.astype(np.float32)) if len(picks) else base[:0]
    return np.vstack([base, rest]).astype(np.float32), seconds


def ms(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50": round(percentile(values, 50) * 1000, 2),
        "p90": round(percentile(values, 90) * 1000, 2),
        "p99": round(percentile(values, 99) * 1000, 2),
        "max": round(max(values) * 1000, 2),
        "mean": round(sum(values) / len(values) * 1000, 2),
    }


T = TypeVar("T")


def chunks(items: list[T], size: int = 2_000) -> Iterator[list[T]]:
    """``items`` in transactions of ``size`` (the bulk import's own batch)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


async def build(
    store: Store, size: int, unique: int, embedder: Embedder, rng: random.Random
) -> dict[str, Any]:
    """Write the person, their memories and the vectors; what it took."""
    person = (await store.persons.create_person(name="bench", now=NOW)).id
    memories = corpus(rng, size, person)
    started = time.perf_counter()
    for chunk in chunks(memories):
        await store.memory_bulk.add_memories(chunk, actor="bench")
    built: dict[str, Any] = {"person": person}
    built["write_memories_seconds"] = round(time.perf_counter() - started, 1)
    matrix, embed_seconds = await vectors(
        embedder, [m.content for m in memories], min(unique, size), rng
    )
    built["embedded_texts"] = min(unique, size)
    built["embed_seconds"] = round(embed_seconds, 1)
    started = time.perf_counter()
    for chunk in chunks(list(zip(memories, matrix, strict=True))):
        await store.memory_bulk.put_memory_vectors(
            [(m, pack(v)) for m, v in chunk], model=embedder.name
        )
    built["write_vectors_seconds"] = round(time.perf_counter() - started, 1)
    return built


async def run(
    url: str,
    size: int,
    n_queries: int,
    unique: int,
    embedder_choice: str,
    built: dict[str, Any] | None,
    *,
    build_only: bool = False,
) -> dict[str, Any]:
    """Build the database at ``url`` (unless ``built`` says it is there already) and time the
    searches."""
    embedder, embedder_note = pick_embedder(embedder_choice)
    if built is not None and (built["size"], built["embedder"]) != (size, embedder.name):
        raise SystemExit(
            f"{url} holds {built['size']} memories with {built['embedder']} vectors; "
            "remove it or ask for the same"
        )
    asked = queries(random.Random(12), n_queries)
    report: dict[str, Any] = {
        "size": size,
        "queries": n_queries,
        "embedder": {"name": embedder.name, "note": embedder_note},
    }
    store = await Store.open(url)
    try:
        reused = built is not None
        if built is None:
            built = await build(store, size, unique, embedder, random.Random(11))
            built |= {"size": size, "embedder": embedder.name}
        report["build"] = built | {"reused": reused}
        if build_only:
            return report
        person = built["person"]
        report["database_mib"] = round(sqlite_bytes(url) / 2**20, 1)
        report["counts"] = await store.memory.count_memories(person_id=person)

        retriever = Retriever(store, embedder=embedder)
        private = Audience.parse("private")
        # cold start: the first semantic search loads every vector into the index
        started = time.perf_counter()
        await retriever.search(
            person_id=person, query=asked[0][0], audience=private, at=NOW,
            mode=SearchMode.SEMANTIC,
        )  # fmt: skip
        report["cold_first_semantic_ms"] = round((time.perf_counter() - started) * 1000, 1)
        for mode in (SearchMode.LEXICAL, SearchMode.HYBRID):
            await retriever.search(
                person_id=person, query=asked[1][0], audience=private, at=NOW, mode=mode
            )

        timings: dict[str, list[float]] = {mode.value: [] for mode in SearchMode}
        found: dict[str, list[int]] = {mode.value: [] for mode in SearchMode}
        load = [os.getloadavg()[0]]
        for text, audience in asked:
            for mode in SearchMode:
                started = time.perf_counter()
                hits = await retriever.search(
                    person_id=person, query=text, audience=audience, at=NOW, mode=mode
                )
                timings[mode.value].append(time.perf_counter() - started)
                found[mode.value].append(len(hits))
        load.append(os.getloadavg()[0])
        report["load_average_1min"] = load
        report["latency_ms"] = {mode: ms(values) for mode, values in timings.items()}
        report["mean_hits"] = {m: round(sum(v) / len(v), 1) for m, v in found.items()}
        report["breakdown_ms"] = await breakdown(store, retriever, embedder, person, asked)
    finally:
        await store.close()
    return report


async def breakdown(
    store: Store, retriever: Retriever, embedder: Embedder, person: str, asked: list[Any]
) -> dict[str, Any]:
    """The parts of a search, timed apart over the same queries."""
    index = next(iter(retriever._indexes.values()))
    parts: dict[str, list[float]] = {
        "embed the query": [],
        "vector index freshness check": [],
        "similarity (matrix @ query)": [],
        "nearest 200 (argpartition)": [],
        "recall filter of the nearest 200": [],
        "full-text query": [],
        "fetch the 10 results": [],
    }
    window = CANDIDATES * 4
    for text, audience in asked:
        started = time.perf_counter()
        [needle] = await embedder.embed([text])
        parts["embed the query"].append(time.perf_counter() - started)
        started = time.perf_counter()
        await index.refresh()
        parts["vector index freshness check"].append(time.perf_counter() - started)
        started = time.perf_counter()
        similarity = index.matrix @ needle
        parts["similarity (matrix @ query)"].append(time.perf_counter() - started)
        started = time.perf_counter()
        top = np.argpartition(-similarity, window)[:window]
        top = top[np.argsort(-similarity[top], kind="stable")]
        parts["nearest 200 (argpartition)"].append(time.perf_counter() - started)
        nearest = [index.ids[i] for i in top]
        started = time.perf_counter()
        await store.memory_search.recallable_memories(
            person_id=person, ids=nearest, audience=audience, at=NOW
        )
        parts["recall filter of the nearest 200"].append(time.perf_counter() - started)
        started = time.perf_counter()
        await store.memory_search.search_memories_text(
            person_id=person, query=text, audience=audience, at=NOW, limit=CANDIDATES
        )
        parts["full-text query"].append(time.perf_counter() - started)
        started = time.perf_counter()
        await store.memory.get_memories(nearest[:10])
        parts["fetch the 10 results"].append(time.perf_counter() - started)
    return {name: ms(values) for name, values in parts.items()}


def print_report(report: dict[str, Any]) -> None:
    built = report["build"]
    print(
        f"{report['size']:,} memories of one person on SQLite ({report['database_mib']} MiB "
        f"with vectors; {report['counts']}); written in {built['write_memories_seconds']} s, "
        f"vectors in {built['write_vectors_seconds']} s{' (reused)' if built['reused'] else ''}"
    )
    print(
        f"embedder: {report['embedder']['name']} — {report['embedder']['note']}; "
        f"{built['embedded_texts']:,} texts embedded in {built['embed_seconds']} s, the "
        "other vectors reused with noise"
    )
    print(f"load average (1 min) before / after the timed queries: {report['load_average_1min']}")
    print(f"cold start, first semantic search (loads the vector index): "
          f"{report['cold_first_semantic_ms']} ms")  # fmt: skip
    print()
    head = f"{'mode':<9} {'n':>4} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'max ms':>8}  target"
    print(head)
    print("-" * len(head))
    for mode, s in report["latency_ms"].items():
        met = "met" if s["p99"] < TARGET_P99_MS else "NOT met"
        print(
            f"{mode:<9} {s['n']:>4} {s['p50']:>8.2f} {s['p90']:>8.2f} {s['p99']:>8.2f} "
            f"{s['max']:>8.2f}  p99 < {TARGET_P99_MS:g} ms: {met}"
        )
    print()
    print("where the time goes (timed apart, same queries):")
    for name, s in report["breakdown_ms"].items():
        print(f"  {name:<38} p50 {s['p50']:>7.2f} ms   p99 {s['p99']:>7.2f} ms")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000, help="memories (default 100000)")
    parser.add_argument("--queries", type=int, default=200, help="queries per mode (200)")
    parser.add_argument(
        "--unique-vectors", type=int, default=2_000, help="texts really embedded (2000)"
    )
    parser.add_argument("--embedder", choices=("auto", "minilm", "hashing"), default="auto")
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="FILE",
        help="build the database in FILE and keep it; reuse it when it is already there",
    )
    parser.add_argument(
        "--build-only", action="store_true", help="with --keep: build the database, time nothing"
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    if args.build_only and args.keep is None:
        parser.error("--build-only needs --keep FILE")
    quiet_logs()
    with contextlib.ExitStack() as stack:
        if args.keep is None:
            url = stack.enter_context(fresh_database("sqlite"))
        else:
            url = f"sqlite:///{args.keep.resolve()}"
        sidecar = Path(f"{args.keep}.json")
        built = json.loads(sidecar.read_text()) if args.keep and sidecar.exists() else None
        report = asyncio.run(
            run(
                url,
                args.size,
                args.queries,
                args.unique_vectors,
                args.embedder,
                built,
                build_only=args.build_only,
            )
        )
        if args.keep is not None and built is None:
            sidecar.write_text(json.dumps(report["build"]))
    if args.build_only:
        print(f"built {args.keep}: {json.dumps(report['build'])}")
    elif args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        print_report(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
