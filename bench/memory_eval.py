"""Memory quality, two evaluations in one table, for lexical, semantic and hybrid search (and
hybrid with a reranker when there is one):

* **old** — recall of the right memories, no stale facts, no leaks, on one person's extracted
  statements (:mod:`memory_dataset`);
* **new** — recall of the right dialog turns on long two-person chats stored raw, LoCoMo-like
  (:mod:`conversation_dataset`): single-turn, multi-turn, temporal and Chinese questions.

    .venv/bin/python bench/memory_eval.py                 # the table on stdout
    .venv/bin/python bench/memory_eval.py --json          # everything as JSON on stdout
    .venv/bin/python bench/memory_eval.py --only new --embedder hashing --seed 3
    .venv/bin/python bench/memory_eval.py --only new --by-question   # where each question fails

The old evaluation: every memory is written through :meth:`MemoryBook.write` as extraction
would write it — content, kind, slot, subjects, the conversation's audience, ``observed_at``
at the conversation's time, a stated ``valid_from`` / ``valid_to`` where the words give one,
the conversation as a trusted source — on a SQLite store in a temporary file (or a fresh
PostgreSQL database: ``--backend postgres``), with a :class:`SimulatedClock` moved to each
conversation's time and finally to the evaluation date (1 July 2026). Then each query is asked
with its audience and the moment it is about, in each search mode, top 10.

Figures (each a share of queries, 0 to 1):

* **recall@k** — for queries with evidence: the share of their evidence items found in the top
  k, averaged over queries (an item is answered by any one of its alternative memories, e.g. a
  preference and its later restatement);
* **stale@k** — for queries about a slot: the share whose top k holds a memory of that slot
  that, by the dataset's ground truth, was not (or no longer, or not yet) true at the moment
  asked about. The ground truth is the dataset's, not the store's, so a memory the store keeps
  valid for too long counts;
* **leak@k** — for queries in a group or public audience: the share whose top k holds a memory
  that audience may not hear (target 0);
* **exception-first@k** — for preference queries with planted one-off exceptions: the share
  where such an exception ranks above every memory of the standing preference (or is there
  while the preference is not).

The new evaluation writes every turn through :meth:`Service.remember` as "Speaker: text" (a
note, private), the service's :class:`SimulatedClock` moved to the turn's time, each
conversation for a person of its own; then asks each question through
:meth:`Service.search_memories` at the evaluation date, top 10. **recall@k** as above, each
evidence item answered by any one of its turns; per tag: multi-turn, temporal, Chinese.

The hybrid+rerank row needs a Retriever that takes ``reranker=`` and ``search(rerank=)`` and a
reranker class under ``steward.memory`` (a ``*Reranker`` that builds without arguments); without
them the row shows "—" and says why.

The semantic and hybrid figures need a real embedder: all-MiniLM-L6-v2 (the ``embeddings``
extra) when it is installed; otherwise the deterministic :class:`HashingEmbedder`, which is not
semantic, and the output says so.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import conversation_dataset
import conversation_eval
import memory_dataset
from bench_support import fresh_database, quiet_logs
from memory_dataset import Dataset, Query
from memory_modes import (
    KS,
    MODES,
    RERANKED,
    latency,
    mode_arguments,
    pick_embedder,
    pick_reranker,
    with_reranker,
)
from steward.domain.audience import Audience
from steward.domain.clock import SimulatedClock
from steward.domain.memory import Memory, MemoryHit, Source, SourceKind
from steward.memory.book import MemoryBook
from steward.memory.embedding import Embedder
from steward.memory.rerank import Reranker
from steward.memory.retrieval import SearchMode
from steward.store import Store


@dataclass(kw_only=True)
class Loaded:
    """The dataset as written: planted keys to the ids the store gave them."""

    ids: dict[str, str]
    keys: dict[str, str]
    outcomes: dict[str, int]
    write_seconds: float
    validity_disagreements: list[dict[str, Any]]


async def load(book: MemoryBook, clock: SimulatedClock, person: str, data: Dataset) -> Loaded:
    ids: dict[str, str] = {}
    outcomes: dict[str, int] = defaultdict(int)
    started = time.perf_counter()
    for session in data.sessions:
        if session.at > clock.now():
            clock.advance(session.at - clock.now())
        for memory in session.memories:
            written = await book.write(
                person_id=person,
                content=memory.content,
                kind=memory.kind,
                source=Source(kind=SourceKind.CONVERSATION, ref=session.id, trusted=True),
                actor=f"agent:{session.id}",
                subjects=memory.subjects,
                slot=memory.slot,
                audience=Audience.parse(session.audience),
                importance=memory.importance,
                observed_at=clock.now(),
                valid_from=memory.valid_from,
                valid_to=memory.valid_to,
            )
            outcomes[written.outcome.value] += 1
            if written.memory is not None:
                ids[memory.key] = written.memory.id
    seconds = time.perf_counter() - started
    if data.eval_at > clock.now():
        clock.advance(data.eval_at - clock.now())
    # where the store's idea of validity differs from the ground truth (slotted memories): an
    # end or start more than a day off, or missing where one is true (an open start counts only
    # for a memory that replaced another: it then overlaps what it replaced)
    planted = data.by_key()
    keys = {v: k for k, v in ids.items()}
    disagreements = []
    for stored_memory in await book.store.memory.get_memories(
        [ids[k] for k, p in planted.items() if p.slot]
    ):
        truth = planted[keys[stored_memory.id]]
        for bound, stored, true in (
            ("from", stored_memory.valid_from, truth.true_from),
            ("to", stored_memory.valid_to, truth.true_to),
        ):
            if bound == "from" and stored is None and stored_memory.supersedes is None:
                continue  # an unknown start; only wrong when it overlaps what it replaced
            off = (stored is None) != (true is None) or (
                stored is not None
                and true is not None
                and abs((stored - true).total_seconds()) > 86400
            )
            if off:
                disagreements.append(
                    {
                        "key": keys[stored_memory.id],
                        "content": stored_memory.content,
                        "bound": bound,
                        "stored": _iso(stored),
                        "true": _iso(true),
                        "expected": bound == "to" and truth.restated_by is not None,
                    }
                )
    return Loaded(
        ids=ids,
        keys=keys,
        outcomes=dict(outcomes),
        write_seconds=seconds,
        validity_disagreements=disagreements,
    )


def _iso(value: datetime | None) -> str | None:
    return value.date().isoformat() if value is not None else None


def judge(query: Query, hits: list[MemoryHit], data: Dataset, loaded: Loaded) -> dict[int, Any]:
    planted = data.by_key()
    audience = Audience.parse(query.audience)
    keys = [loaded.keys.get(h.memory.id, "?") for h in hits]
    out: dict[int, Any] = {}
    for k in KS:
        top = set(keys[:k])
        memories: list[Memory] = [h.memory for h in hits[:k]]
        recall = (
            sum(1 for item in query.evidence if top & set(item)) / len(query.evidence)
            if query.evidence
            else None
        )
        stale = (
            any(
                planted[key].slot in query.slots and not planted[key].true_at(query.at)
                for key in top
                if key in planted
            )
            if query.slots
            else None
        )
        leak = (
            any(not audience.may_hear(m.audience) for m in memories)
            if query.audience != "private"
            else None
        )
        exception_first = None
        if query.exceptions:
            preference = {key for item in query.evidence for key in item} - set(query.exceptions)
            ranks = {key: i for i, key in enumerate(keys[:k])}
            first_pref = min((ranks[key] for key in preference if key in ranks), default=None)
            first_exc = min((ranks[key] for key in query.exceptions if key in ranks), default=None)
            exception_first = first_exc is not None and (
                first_pref is None or first_exc < first_pref
            )
        out[k] = (recall, stale, leak, exception_first)
    return out


async def evaluate_old(
    data: Dataset, embedder: Embedder, reranker: Reranker | None, backend: str = "sqlite"
) -> dict[str, Any]:
    """The old evaluation: one person's extracted statements (:mod:`memory_dataset`)."""
    with fresh_database(backend) as url:
        store = await Store.open(url)
        try:
            clock = SimulatedClock(data.sessions[0].at)
            person = (await store.persons.create_person(name="maya", now=clock.now())).id
            book = MemoryBook(store, clock, embedder=embedder)
            with_reranker(book, reranker)
            loaded = await load(book, clock, person, data)
            counts = await store.memory.count_memories(person_id=person)
            # warm the vector index and the embedder before timing anything
            await book.retriever.search(
                person_id=person,
                query="warm up",
                audience=Audience.parse("private"),
                at=clock.now(),
                mode=SearchMode.SEMANTIC,
            )
            results: dict[str, Any] = {}
            for mode in MODES:
                if mode == RERANKED and reranker is None:
                    continue
                per_query: list[dict[str, Any]] = []
                seconds: list[float] = []
                for query in data.queries:
                    started = time.perf_counter()
                    hits = await book.retriever.search(
                        person_id=person,
                        query=query.text,
                        audience=Audience.parse(query.audience),
                        at=query.at,
                        limit=max(KS),
                        **mode_arguments(mode, reranker),
                    )
                    seconds.append(time.perf_counter() - started)
                    judged = judge(query, hits, data, loaded)
                    per_query.append(
                        {
                            "id": query.id,
                            "category": query.category,
                            "top": [loaded.keys.get(h.memory.id, "?") for h in hits],
                            **{
                                f"{name}@{k}": judged[k][i]
                                for k in KS
                                for i, name in enumerate(
                                    ("recall", "stale", "leak", "exception_first")
                                )
                            },
                        }
                    )
                results[mode] = {
                    "summary": _summarize(per_query),
                    "by_category": {
                        category: _summarize([q for q in per_query if q["category"] == category])
                        for category in sorted({q.category for q in data.queries})
                    },
                    "latency_ms": latency(seconds),
                    "queries": per_query,
                }
        finally:
            await store.close()
    planted = data.by_key()
    return {
        "dataset": {
            "seed": data.seed,
            "sessions": len(data.sessions),
            "sessions_by_audience": _count(s.audience for s in data.sessions),
            "memories_written": sum(loaded.outcomes.values()),
            "planted": sum(1 for k in planted if not k.startswith("chat.")),
            "chit_chat": sum(1 for k in planted if k.startswith("chat.")),
            "write_outcomes": loaded.outcomes,
            "stored_by_status": counts,
            "queries": len(data.queries),
            "queries_by_category": _count(q.category for q in data.queries),
            "eval_at": data.eval_at.isoformat(),
            "write_seconds": round(loaded.write_seconds, 2),
        },
        "validity_disagreements": loaded.validity_disagreements,
        "modes": results,
    }


def _count(values: Any) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for value in values:
        out[value] += 1
    return dict(out)


def _summarize(per_query: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in ("recall", "stale", "leak", "exception_first"):
        for k in KS:
            values = [q[f"{name}@{k}"] for q in per_query if q[f"{name}@{k}"] is not None]
            out[f"{name}@{k}"] = round(sum(values) / len(values), 3) if values else None
            out[f"{name}@{k}_n"] = len(values)
    return out


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def print_report(report: dict[str, Any], *, by_question: bool = False) -> None:
    old, new = report.get("old"), report.get("new")
    if old is not None:
        d = old["dataset"]
        print(
            f"old: seed {d['seed']}, {d['sessions']} conversations {d['sessions_by_audience']}, "
            f"{d['memories_written']} statements ({d['planted']} planted, {d['chit_chat']} "
            f"chit-chat; outcomes {d['write_outcomes']}), stored {d['stored_by_status']}, "
            f"{d['queries']} queries, evaluated at {d['eval_at']}"
        )
    if new is not None:
        d = new["dataset"]
        print(
            f"new: seed {d['seed']}, {d['conversations']} conversations, {d['sessions']} "
            f"sessions, {d['turns']} turns ({d['turns_in_chinese_or_mixed']} with Chinese; "
            f"outcomes {d['write_outcomes']}, stored {d['stored']}, evidence turns taken for "
            f"repeats {d['evidence_turns_repeating'] or 'none'}), {d['questions']} "
            f"questions {d['questions_by_tag']}, evaluated at {d['eval_at']}"
        )
    print(f"store: {report.get('backend', 'sqlite')}")
    print(f"embedder: {report['embedder']['name']} — {report['embedder']['note']}")
    print(f"reranker: {report['reranker']}")
    print()
    head = f"{'mode':<14}"
    if old is not None:
        head += f" | {'old R@5':>7} {'R@10':>6} {'stale@10':>8} {'leak@10':>7}"
    if new is not None:
        head += (
            f" | {'new R@5':>7} {'R@10':>6} {'multi@5':>7} {'temp@5':>6} {'zh@5':>6}"
            f" | {'new p50 ms':>10}"
        )
    print(head)
    print("-" * len(head))
    for mode in MODES:
        line = f"{mode:<14}"
        if old is not None:
            s = old["modes"].get(mode, {}).get("summary", {})
            line += (
                f" | {_fmt(s.get('recall@5')):>7} {_fmt(s.get('recall@10')):>6} "
                f"{_fmt(s.get('stale@10')):>8} {_fmt(s.get('leak@10')):>7}"
            )
        if new is not None:
            result = new["modes"].get(mode, {})
            s, tags = result.get("summary", {}), result.get("by_tag", {})
            p50 = result.get("latency_ms", {}).get("p50")
            line += (
                f" | {_fmt(s.get('recall@5')):>7} {_fmt(s.get('recall@10')):>6} "
                + " ".join(
                    f"{_fmt(tags.get(t, {}).get('recall@5')):>{w}}"
                    for t, w in zip(conversation_eval.TAGS, (7, 6, 6), strict=True)
                )
                + f" | {'—' if p50 is None else f'{p50:.1f}':>10}"
            )
        print(line)
    print()
    print("seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in report["seconds"].items()))
    if new is not None and by_question:
        print_by_question(new)
    if old is None:
        return
    print()
    modes = old["modes"]
    print("old, recall@5 by category (queries):")
    print(f"{'category':<12} {'n':>3} " + " ".join(f"{m:>13}" for m in modes))
    for category, summary in modes["lexical"]["by_category"].items():
        if summary["recall@5_n"]:
            cells = " ".join(
                f"{_fmt(r['by_category'][category]['recall@5']):>13}" for r in modes.values()
            )
            print(f"{category:<12} {summary['recall@5_n']:>3} {cells}")
    for mode, result in modes.items():
        bad = [
            f"{q['id']} (top: {', '.join(q['top'][:5])})"
            for q in result["queries"]
            if q["stale@10"] or q["leak@10"]
        ]
        if bad:
            print(f"old, {mode}: stale or leaking at 10: {'; '.join(bad)}")
    for item in old["validity_disagreements"]:
        why = " (expected: closed by its restatement)" if item["expected"] else ""
        print(
            f"old, store validity differs from the ground truth: {item['key']} "
            f"({item['content']!r}): valid_{item['bound']} stored {item['stored']}, true "
            f"{item['true']}{why}"
        )


def print_by_question(new: dict[str, Any]) -> None:
    """The new evaluation's recall@5 per question, averaged over the conversations (each asks
    the same questions of its own story)."""
    modes = new["modes"]
    print()
    print("new, recall@5 by question (mean over conversations):")
    print(f"{'question':<20} {'tags':<15} " + " ".join(f"{m:>13}" for m in modes))
    by: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    tags: dict[str, str] = {}
    for mode, result in modes.items():
        for q in result["queries"]:
            name = q["id"].split(".", 1)[1]
            by[name][mode].append(q["recall@5"])
            tags[name] = " ".join(q["tags"])
    for name, per_mode in by.items():
        cells = " ".join(f"{_fmt(sum(v) / len(v)):>13}" for v in per_mode.values())
        print(f"{name:<20} {tags[name]:<15} {cells}")


async def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    embedder, embedder_note = pick_embedder(args.embedder)
    reranker, reranker_note = pick_reranker(args.reranker)
    report: dict[str, Any] = {
        "backend": args.backend,
        "embedder": {"name": embedder.name, "note": embedder_note},
        "reranker": reranker_note if reranker is not None else f"none — {reranker_note}",
        "seconds": {},
    }
    if args.only in (None, "old"):
        started = time.perf_counter()
        report["old"] = await evaluate_old(
            memory_dataset.generate(args.seed), embedder, reranker, args.backend
        )
        report["seconds"]["old"] = round(time.perf_counter() - started, 1)
    if args.only in (None, "new"):
        started = time.perf_counter()
        conversations = conversation_dataset.generate(args.seed, conversations=args.conversations)
        report["new"] = await conversation_eval.evaluate(
            conversations, embedder, reranker, args.backend
        )
        report["seconds"]["new"] = round(time.perf_counter() - started, 1)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=7, help="dataset seed (default 7)")
    parser.add_argument("--only", choices=("old", "new"), help="run one evaluation only")
    parser.add_argument(
        "--backend",
        choices=("sqlite", "postgres"),
        default="sqlite",
        help="the store (postgres: a fresh database on $STEWARD_BENCH_POSTGRES_URL's server)",
    )
    parser.add_argument(
        "--conversations", type=int, default=5, help="conversations in the new one (default 5)"
    )
    parser.add_argument(
        "--embedder",
        default="auto",
        help="auto (MiniLM when the embeddings extra is installed, else hashing), minilm, "
        "hashing, or module:Class",
    )
    parser.add_argument(
        "--reranker",
        default="auto",
        help="auto (the hybrid+rerank row when a reranker is available), none, or module:Class",
    )
    parser.add_argument("--json", action="store_true", help="print the full report as JSON")
    parser.add_argument(
        "--by-question", action="store_true", help="the new one's recall@5 question by question"
    )
    args = parser.parse_args(argv)
    quiet_logs()
    report = asyncio.run(evaluate(args))
    if args.json:
        json.dump(report, sys.stdout, indent=2, ensure_ascii=False)
        print()
    else:
        print_report(report, by_question=args.by_question)
    return 0


if __name__ == "__main__":
    sys.exit(main())
