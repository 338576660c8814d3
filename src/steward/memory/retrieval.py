"""Finding the memories an activation needs: lexical (full text), semantic (embeddings) or both,
fused by reciprocal rank and nudged by importance and recency; only active memories, valid at
the moment asked, that the conversation's audience may hear."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Coroutine, Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any

import numpy as np

from steward.domain.audience import Audience
from steward.domain.memory import MemoryHit, Recallable
from steward.errors import StewardRuntimeError
from steward.memory.embedding import Embedder, Vectors, unpack_many
from steward.store import Store

RRF_K = 60
"""Reciprocal-rank-fusion constant: a result's share is ``1 / (RRF_K + rank)``."""
LEXICAL_WEIGHT = 0.25
"""The lexical list's share in a hybrid fusion: word matches are noisier than meaning (on the
evaluation set, weights 1 / 0.5 / 0.25 gave hybrid recall@5 of 0.54 / 0.57 / 0.60)."""
IMPORTANCE_WEIGHT = 0.004
RECENCY_WEIGHT = 0.004
"""Worth up to about half a top rank's share: on the evaluation set, a tenth of this cut
semantic recall@5 from 0.70 to 0.60 without ranking exceptions below preferences any better."""
RECENCY_HALF_LIFE_DAYS = 180.0
CANDIDATES = 50
"""Results each search contributes to the fusion."""


class SearchMode(StrEnum):
    LEXICAL = "lexical"
    SEMANTIC = "semantic"
    HYBRID = "hybrid"


class Retriever:
    """Searches one person's memories."""

    def __init__(self, store: Store, *, embedder: Embedder | None = None) -> None:
        self.store = store
        self.embedder = embedder
        self._indexes: dict[tuple[str, str], VectorIndex] = {}

    @property
    def default_mode(self) -> SearchMode:
        return SearchMode.HYBRID if self.embedder is not None else SearchMode.LEXICAL

    async def search(
        self,
        *,
        person_id: str,
        query: str,
        audience: Audience,
        at: datetime,
        limit: int = 10,
        mode: SearchMode | None = None,
    ) -> list[MemoryHit]:
        mode = mode or self.default_mode
        if mode is not SearchMode.LEXICAL and self.embedder is None:
            raise StewardRuntimeError(
                f"{mode} search needs an embedder; none is configured (lexical-only mode)"
            )
        wanted = max(CANDIDATES, limit)

        async def lexical() -> list[Recallable]:
            return await self.store.memory_search.search_memories_text(
                person_id=person_id, query=query, audience=audience, at=at, limit=wanted
            )

        searches: dict[str, Coroutine[Any, Any, list[Recallable]]] = {}
        if mode is not SearchMode.SEMANTIC:
            searches["lexical"] = lexical()
        if mode is not SearchMode.LEXICAL:
            searches["semantic"] = self._semantic(person_id, query, audience, at, wanted)
        ranked = dict(zip(searches, await asyncio.gather(*searches.values()), strict=True))
        weight = {"lexical": LEXICAL_WEIGHT if len(ranked) > 1 else 1.0, "semantic": 1.0}
        scores: dict[str, float] = {}
        found_by: dict[str, list[str]] = {}
        for name, found in ranked.items():
            for rank, candidate in enumerate(found, start=1):
                if candidate.id not in scores:
                    scores[candidate.id] = _prior(candidate, at)
                scores[candidate.id] += weight[name] / (RRF_K + rank)
                found_by.setdefault(candidate.id, []).append(name)
        best = sorted(scores, key=lambda memory_id: (-scores[memory_id], memory_id))[:limit]
        # only the results are read in full: ranking needs no more than a search returns
        memories = {m.id: m for m in await self.store.memory.get_memories(best)}
        return [
            MemoryHit(
                memory=memories[memory_id],
                score=scores[memory_id],
                matched=tuple(found_by[memory_id]),
            )
            for memory_id in best
            if memory_id in memories
        ]

    async def _semantic(
        self, person_id: str, query: str, audience: Audience, at: datetime, wanted: int
    ) -> list[Recallable]:
        """Nearest memories by cosine similarity, over an in-process copy of the vectors
        (brute force with numpy), filtered afterwards by status, validity and audience."""
        assert self.embedder is not None
        if not query.strip():
            return []
        index = self._indexes.setdefault(
            (person_id, self.embedder.name), VectorIndex(self.store, person_id, self.embedder.name)
        )
        # the index catches up on the database while the model embeds the query
        _, [needle] = await asyncio.gather(index.refresh(), self.embedder.embed([query]))
        ids, matrix = index.ids, index.matrix  # a consistent pair, whatever refreshes meanwhile
        if not ids:
            return []
        similarity = matrix @ needle
        window = min(len(similarity), wanted * 4)
        while True:
            # the nearest `window`, best first, without sorting the whole collection
            top = np.argpartition(-similarity, window - 1)[:window]
            top = top[np.argsort(-similarity[top], kind="stable")]
            nearest = [ids[i] for i in top if similarity[i] > 0]
            allowed = await self.store.memory_search.recallable_memories(
                person_id=person_id, ids=nearest, audience=audience, at=at
            )
            kept = [allowed[memory_id] for memory_id in nearest if memory_id in allowed][:wanted]
            if len(kept) >= wanted or window == len(similarity) or len(nearest) < window:
                return kept
            window = min(len(similarity), window * 4)


class VectorIndex:
    """One person's vectors of one model, kept in memory and brought up to date before each
    search by reading only what was written since (a full reload after a deletion).

    A refresh builds new arrays and swaps them in at once, so a search that holds the previous
    ``ids`` and ``matrix`` keeps a consistent pair. Sequence numbers are handed out at insert
    time, and on PostgreSQL concurrent writers may commit them out of order: each refresh
    re-reads the last :data:`TRAILING` of them, so a late commit is still picked up.
    """

    TRAILING = 256

    def __init__(self, store: Store, person_id: str, model: str) -> None:
        self.store = store
        self.person_id = person_id
        self.model = model
        self.ids: list[str] = []
        self.matrix: Vectors = np.zeros((0, 0), dtype=np.float32)
        self._seq_of: dict[str, int] = {}
        self._recent: list[int] = []
        self._newest = 0
        self._epoch: int | None = None

    async def refresh(self) -> None:
        trailing_from = max(0, self._newest - self.TRAILING)
        delta = await self.store.memory_search.memory_vectors_since(
            person_id=self.person_id,
            model=self.model,
            after_seq=trailing_from,
            known=[seq for seq in self._recent if seq > trailing_from],
        )
        ids, matrix, seq_of, recent = self.ids, self.matrix, self._seq_of, self._recent
        if delta.epoch != self._epoch:  # vectors were deleted (or never loaded): start over
            delta = await self.store.memory_search.memory_vectors_since(
                person_id=self.person_id, model=self.model, after_seq=0
            )
            ids, matrix, seq_of, recent = [], np.zeros((0, 0), dtype=np.float32), {}, []
        if delta.rows:
            ids, matrix, seq_of = _merged(ids, matrix, seq_of, delta.rows)
        newest = max(self._newest, delta.newest)
        # the seqs within the next refresh's trailing window, so that it reads no vector twice
        recent = [
            seq
            for seq in (*recent, *(row[0] for row in delta.rows))
            if seq > newest - self.TRAILING
        ]
        self.ids, self.matrix, self._seq_of, self._recent = ids, matrix, seq_of, recent
        self._newest, self._epoch = newest, delta.epoch


def _merged(
    ids: list[str],
    matrix: Vectors,
    seq_of: dict[str, int],
    rows: list[tuple[int, str, bytes]],
) -> tuple[list[str], Vectors, dict[str, int]]:
    """New arrays with ``rows`` added (or replacing older vectors of the same memory)."""
    fresh_rows = [
        (seq, memory_id, blob) for seq, memory_id, blob in rows if seq_of.get(memory_id, -1) < seq
    ]
    if not fresh_rows:
        return ids, matrix, seq_of
    dim = len(fresh_rows[0][2]) // 4
    fresh = unpack_many([blob for _, _, blob in fresh_rows], dim)
    position = {memory_id: at for at, memory_id in enumerate(ids)}
    new_ids = list(ids)
    new_seq = dict(seq_of)
    base = matrix if matrix.size else np.empty((0, dim), dtype=np.float32)
    replaced = [(position[m], row) for row, (_, m, _) in enumerate(fresh_rows) if m in position]
    if replaced:  # re-embedded after an edit: a copy, never the array a search may hold
        base = base.copy()
        for at, row in replaced:
            base[at] = fresh[row]
    appended: list[int] = []
    for row, (seq, memory_id, _) in enumerate(fresh_rows):
        new_seq[memory_id] = seq
        if memory_id not in position:
            position[memory_id] = len(new_ids)
            new_ids.append(memory_id)
            appended.append(row)
    if appended:
        base = np.vstack([base, fresh[appended]])
    return new_ids, base, new_seq


def _prior(memory: Recallable, at: datetime) -> float:
    """What makes a relevant memory worth more: importance, and having been seen lately."""
    age_days = max(0.0, (at - memory.observed_at).total_seconds() / 86400)
    recency = math.pow(0.5, age_days / RECENCY_HALF_LIFE_DAYS)
    return IMPORTANCE_WEIGHT * memory.importance + RECENCY_WEIGHT * recency


def terms_overlap(a: Sequence[str], b: Sequence[str]) -> float:
    """Jaccard overlap of two term lists (0 when both are empty)."""
    left, right = set(a), set(b)
    return len(left & right) / len(left | right) if left | right else 0.0
