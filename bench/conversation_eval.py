"""The conversation evaluation of :mod:`memory_eval`: raw dialog turns
(:mod:`conversation_dataset`) written through :meth:`Service.remember`, each conversation for a
person of its own on one :class:`SimulatedClock`, and questions asked through
:meth:`Service.search_memories` at the evaluation date; recall of evidence turns, overall and
per tag (multi-turn, temporal, Chinese)."""

from __future__ import annotations

import time
from collections import defaultdict
from inspect import signature
from typing import Any

from bench_support import fresh_database
from conversation_dataset import ConversationDataset
from memory_modes import KS, MODES, RERANKED, latency, mode_arguments, with_reranker
from steward.domain.audience import Audience
from steward.domain.clock import SimulatedClock
from steward.domain.memory import MemoryHit, WriteOutcome
from steward.memory.embedding import Embedder
from steward.memory.rerank import Reranker
from steward.service import Service
from steward.store import Store

TAGS = ("multi", "temporal", "chinese")


async def evaluate(
    data: ConversationDataset,
    embedder: Embedder,
    reranker: Reranker | None,
    backend: str = "sqlite",
) -> dict[str, Any]:
    """The new evaluation: raw dialog turns through the service (:mod:`conversation_dataset`)."""
    first = min(s.at for c in data.conversations for s in c.sessions)
    with fresh_database(backend) as url:
        store = await Store.open(url)
        try:
            clock = SimulatedClock(first)
            service = Service(store, clock, embedder=embedder)
            with_reranker(service.memory, reranker)
            persons = {
                c.id: (await store.persons.create_person(name=c.owner, now=clock.now())).id
                for c in data.conversations
            }
            ids: dict[str, str] = {}
            outcomes: dict[str, int] = defaultdict(int)
            repeats: set[str] = set()
            started = time.perf_counter()
            # all conversations on one clock, turn by turn in time order
            for conversation, turn in sorted(data.turns(), key=lambda ct: (ct[1].at, ct[0].id)):
                if turn.at > clock.now():
                    clock.advance(turn.at - clock.now())
                written = await service.remember(
                    person_id=persons[conversation.id], content=turn.content
                )
                outcomes[written.outcome.value] += 1
                if written.memory is not None:
                    ids[turn.key] = written.memory.id
                if written.outcome is not WriteOutcome.CREATED:
                    repeats.add(turn.key)
            write_seconds = time.perf_counter() - started
            clock.advance(data.eval_at - clock.now())
            results: dict[str, Any] = {}
            for mode in MODES:
                if mode == RERANKED and reranker is None:
                    continue
                per_query: list[dict[str, Any]] = []
                seconds: list[float] = []
                for question in data.questions:
                    began = time.perf_counter()
                    hits = await ask(
                        service, persons[question.conversation], question.text, mode, reranker
                    )
                    seconds.append(time.perf_counter() - began)
                    top = [h.memory.id for h in hits]
                    per_query.append(
                        {
                            "id": question.id,
                            "tags": sorted(question.tags),
                            "top": [h.memory.content for h in hits[:5]],
                            **{
                                f"recall@{k}": sum(
                                    1
                                    for item in question.evidence
                                    if any(ids.get(key) in top[:k] for key in item)
                                )
                                / len(question.evidence)
                                for k in KS
                            },
                        }
                    )
                results[mode] = {
                    "summary": _recall(per_query),
                    "by_tag": {
                        tag: _recall([q for q in per_query if tag in q["tags"]]) for tag in TAGS
                    },
                    "latency_ms": latency(seconds),
                    "queries": per_query,
                }
            stored = 0
            for person in persons.values():
                stored += sum((await store.memory.count_memories(person_id=person)).values())
        finally:
            await store.close()
    return {
        "dataset": {
            "seed": data.seed,
            "conversations": len(data.conversations),
            "sessions": sum(len(c.sessions) for c in data.conversations),
            "turns": sum(1 for _ in data.turns()),
            "turns_in_chinese_or_mixed": sum(
                1 for _, t in data.turns() if any("\u4e00" <= ch <= "\u9fff" for ch in t.text)
            ),
            "write_outcomes": dict(outcomes),
            "stored": stored,
            # an evidence turn taken for a repeat of an earlier one is judged by that one
            "evidence_turns_repeating": sorted(
                {k for q in data.questions for item in q.evidence for k in item} & repeats
            ),
            "questions": len(data.questions),
            "questions_by_tag": {
                tag: sum(1 for q in data.questions if tag in q.tags) for tag in TAGS
            },
            "eval_at": data.eval_at.isoformat(),
            "write_seconds": round(write_seconds, 2),
        },
        "modes": results,
    }


async def ask(
    service: Service, person: str, text: str, mode: str, reranker: Reranker | None
) -> list[MemoryHit]:
    """Top 10 through :meth:`Service.search_memories`; a rerank through the service's retriever
    while the service cannot ask for one."""
    arguments = mode_arguments(mode, reranker)
    if "rerank" in arguments and "rerank" not in signature(service.search_memories).parameters:
        return await service.memory.retriever.search(
            person_id=person,
            query=text,
            audience=Audience.parse("private"),
            at=service.clock.now(),
            limit=max(KS),
            **arguments,
        )
    arguments["mode"] = arguments["mode"].value
    return await service.search_memories(person_id=person, query=text, limit=max(KS), **arguments)


def _recall(per_query: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(per_query)}
    for k in KS:
        values = [q[f"recall@{k}"] for q in per_query]
        out[f"recall@{k}"] = round(sum(values) / len(values), 3) if values else None
    return out
