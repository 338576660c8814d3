"""Finding the memories an activation needs: lexical (full text), semantic (embeddings) or both,
fused by their scores with the head of each list kept in front (:mod:`steward.memory.ranking`;
a word search whose matches are all alike sits out), importance and recency as tie-breakers
only; a time the question names (:mod:`steward.memory.timeframe`) ranks what falls in it first
and recalls what was valid then; on request, a second, lexical hop through the entities of the
best first results; an optional reranker over the fused top. Only active memories, valid at the
moment asked (or asked about), that the conversation's audience may hear."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

import structlog

from steward.domain.audience import Audience
from steward.domain.memory import Memory, MemoryHit, Recallable
from steward.errors import NotFound, StewardError, StewardRuntimeError
from steward.memory.embedding import Embedder, Vectors, unpack_many
from steward.memory.ranking import fuse, incidental, ordered, prior, tie_broken
from steward.memory.rerank import Reranker
from steward.memory.timeframe import TimeFrame, parse_timeframe
from steward.store import Store
from steward.store.memory_search import search_terms

log = structlog.get_logger(__name__)

LEXICAL_WEIGHT = 1.0
"""The lexical list's share in a hybrid fusion, the semantic list's being 1 (see
docs/benchmarks.md, "Memory recall (issue 20)", for the grid it was chosen on)."""
HOP_WEIGHT = 0.25
"""The second hop's share: it finds what the first results lead to, never what they are.
Asked for (``hops=2``), not by default: on 100,000 memories it added about a third to a
lexical search's time, and none of the evaluations gained from it (docs/benchmarks.md)."""
HOP_SEEDS = 3
"""The first results whose entities the second hop follows."""
HOP_LIMIT = 10
"""What the second hop brings at most."""
WINDOW_BOOST = 1.0
"""How much more a memory in the time a question names is worth (its relevance doubled)."""
EARLIEST_SPAN = timedelta(days=30)
""""At the start": the first month of what the searches found."""
RERANK_DEPTH = 30
"""Fused results a reranker looks at again."""
CANDIDATES = 50
"""Results each search contributes to the fusion."""
_TICK = timedelta(microseconds=1)


class SearchMode(StrEnum):
    LEXICAL = "lexical"
    SEMANTIC = "semantic"
    HYBRID = "hybrid"


class Retriever:
    """Searches one person's memories."""

    def __init__(
        self,
        store: Store,
        *,
        embedder: Embedder | None = None,
        reranker: Reranker | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.reranker = reranker
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
        timezone: str | None = None,
        rerank: bool | None = None,
        hops: int = 1,
    ) -> list[MemoryHit]:
        """The ``limit`` best memories for ``query`` asked ``at`` (times it names are read in
        ``timezone``, an IANA name; None: the person's own). ``rerank``: whether the configured
        reranker reorders the fused top (None: when one is configured); a reranked hit's score
        is the reranker's. ``hops``: 2 also follows the entities of the best first results (a
        lexical or hybrid search only; it costs another full-text search)."""
        mode = mode or self.default_mode
        if mode is not SearchMode.LEXICAL and self.embedder is None:
            raise StewardRuntimeError(
                f"{mode} search needs an embedder; none is configured (lexical-only mode)"
            )
        if rerank and self.reranker is None:
            raise StewardRuntimeError("reranking needs a reranker; none is configured")
        wanted = max(CANDIDATES, limit)
        frame = parse_timeframe(query, at, timezone or "UTC")
        if frame is not None and timezone is None:
            # only a question that names a time needs the person's zone
            frame = parse_timeframe(query, at, await self._zone_of(person_id))
        words = frame.remainder(query) if frame is not None else query
        if frame is not None and frame.anchor is not None:
            frame = await self._anchored(frame, person_id, audience, at)
            words = query if frame is None else words
        # a question about a past time recalls what was valid then
        valid_at = frame.end - _TICK if frame and frame.end and frame.end <= at else at
        ranked = await self._ranked(person_id, words, audience, valid_at, wanted, mode)
        lexical = ranked.get("lexical", [])
        if ranked.get("semantic") and incidental(lexical, words=len(search_terms(words))):
            # matches on common words only: the meaning ranks alone (its heads and its 6th to
            # 10th are not pushed out by a page of memories that merely share those words)
            del ranked["lexical"]
        weights = {"lexical": LEXICAL_WEIGHT if len(ranked) > 1 else 1.0, "hop": HOP_WEIGHT}
        if hops > 1 and mode is not SearchMode.SEMANTIC:  # a semantic search stays semantic
            hop = await self._second_hop(ranked, weights, words, person_id, audience, valid_at)
            if hop:
                ranked["hop"] = hop
        found = {c.id: c for found in ranked.values() for c in found}
        priors = {memory_id: prior(candidate, at) for memory_id, candidate in found.items()}
        relevance, heads = fuse(ranked, weights, priors)
        found_by: dict[str, list[str]] = {}
        for name, listed in ranked.items():
            for candidate in listed:
                found_by.setdefault(candidate.id, []).append(name)
        if frame is not None:
            relevance, inside = await self._in_frame(frame, relevance)
            # a list's best, said at another time, does not go first
            heads = {i: rank for i, rank in heads.items() if i in inside}
        scores = {i: tie_broken(r, priors[i]) for i, r in relevance.items()}
        # a question naming a time keeps the frame's order: the reranker sees no dates
        reranking = self.reranker is not None and rerank is not False and frame is None
        best = ordered(scores, heads)[: max(limit, RERANK_DEPTH) if reranking else limit]
        # only the results are read in full: ranking needs no more than a search returns
        memories = {m.id: m for m in await self.store.memory.get_memories(best)}
        hits = [
            MemoryHit(
                memory=memories[memory_id],
                score=scores[memory_id],
                matched=tuple(found_by[memory_id]),
            )
            for memory_id in best
            if memory_id in memories
        ]
        if reranking and hits:
            # one look at the fused top, never more than RERANK_DEPTH memories a call
            hits = await self._reranked(words, hits[:RERANK_DEPTH]) + hits[RERANK_DEPTH:]
        return hits[:limit]

    async def _ranked(
        self,
        person_id: str,
        query: str,
        audience: Audience,
        at: datetime,
        wanted: int,
        mode: SearchMode,
    ) -> dict[str, list[Recallable]]:
        """Each search's results, best first, by name."""

        async def lexical() -> list[Recallable]:
            return await self.store.memory_search.search_memories_text(
                person_id=person_id, query=query, audience=audience, at=at, limit=wanted
            )

        searches: dict[str, Coroutine[Any, Any, list[Recallable]]] = {}
        if mode is not SearchMode.SEMANTIC:
            searches["lexical"] = lexical()
        if mode is not SearchMode.LEXICAL:
            searches["semantic"] = self._semantic(person_id, query, audience, at, wanted)
        return dict(zip(searches, await asyncio.gather(*searches.values()), strict=True))

    async def _second_hop(
        self,
        ranked: dict[str, list[Recallable]],
        weights: dict[str, float],
        query: str,
        person_id: str,
        audience: Audience,
        at: datetime,
    ) -> list[Recallable]:
        """What the entities of the first results lead to ("the person my sister married" →
        Tom → where Tom works): a lexical search for the subjects of the best few that the
        question does not name."""
        relevance, heads = fuse(ranked, weights, {})
        seeds = ordered(relevance, heads)[:HOP_SEEDS]
        asked = query.casefold()
        entities: dict[str, None] = {}
        for memory in await self.store.memory.get_memories(seeds):
            for subject in memory.subjects:
                if subject.casefold() not in asked:
                    entities.setdefault(subject, None)
        if not entities:
            return []
        # the names alone, and few results: names are rarer words than a question's, so this
        # costs less than the first search
        led_to = await self.store.memory_search.search_memories_text(
            person_id=person_id, query=" ".join(entities), audience=audience, at=at, limit=HOP_LIMIT
        )
        # only what the first hop missed: the rest already ranks on its own merit
        first = {c.id for found in ranked.values() for c in found}
        return [c for c in led_to if c.id not in first]

    async def _anchored(
        self, frame: TimeFrame, person_id: str, audience: Audience, at: datetime
    ) -> TimeFrame | None:
        """The window before (or after) the anchor event, where the best memory of it starts;
        None when memory holds no such event."""
        assert frame.anchor is not None
        found = await self.store.memory_search.search_memories_text(
            person_id=person_id, query=frame.anchor, audience=audience, at=at, limit=1
        )
        event = await self.store.memory.get_memories([found[0].id]) if found else []
        if not event:
            return None
        when = event[0].start
        if frame.before_anchor:
            return replace(frame, start=None, end=min(when, at))
        return replace(frame, start=when, end=None)

    async def _in_frame(
        self, frame: TimeFrame, relevance: dict[str, float]
    ) -> tuple[dict[str, float], set[str]]:
        """``relevance`` with what falls in ``frame`` — said then, or stated to hold then —
        raised by :data:`WINDOW_BOOST`, and which those are."""
        candidates = await self.store.memory.get_memories(list(relevance))
        if frame.earliest:
            if not candidates:
                return relevance, set()
            first = min(m.observed_at for m in candidates)
            frame = replace(frame, start=first, end=first + EARLIEST_SPAN)
        inside = {m.id for m in candidates if _falls_in(m, frame)}
        boosted = {i: r * (1 + WINDOW_BOOST) if i in inside else r for i, r in relevance.items()}
        return boosted, inside

    async def _reranked(self, query: str, hits: list[MemoryHit]) -> list[MemoryHit]:
        assert self.reranker is not None
        try:
            marks = await self.reranker.score(query, [hit.memory.content for hit in hits])
        except StewardError as exc:
            # a second look that failed leaves the first: the search still answers
            log.warning("memory search not reranked", reranker=self.reranker.name, why=str(exc))
            return hits
        rescored = [
            replace(hit, score=mark, matched=(*hit.matched, "rerank"))
            for hit, mark in zip(hits, marks, strict=True)
        ]
        return sorted(rescored, key=lambda hit: -hit.score)  # stable: fused order breaks ties

    async def _zone_of(self, person_id: str) -> str:
        try:
            return (await self.store.persons.get_person(person_id)).timezone
        except NotFound:  # a person not (or no longer) known: the searches will find nothing
            return "UTC"

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
        # NumPy is imported where vectors are computed: every command imports this module
        import numpy as np

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
            kept = [
                replace(allowed[ids[i]], score=float(similarity[i]))
                for i in top
                if similarity[i] > 0 and ids[i] in allowed
            ][:wanted]
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
        import numpy as np

        self.ids: list[str] = []
        self.matrix: Vectors = np.zeros((0, 0), dtype=np.float32)
        self._seq_of: dict[str, int] = {}
        self._recent: list[int] = []
        self._newest = 0
        self._epoch: int | None = None

    async def refresh(self) -> None:
        import numpy as np

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
    import numpy as np

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


def _falls_in(memory: Memory, frame: TimeFrame) -> bool:
    """Said in the frame, or stated to hold during it (an open validity on both ends says
    nothing about when)."""
    stated = memory.valid_from is not None or memory.valid_to is not None
    return frame.contains(memory.observed_at) or (
        stated and frame.overlaps(memory.valid_from, memory.valid_to)
    )


def terms_overlap(a: Sequence[str], b: Sequence[str]) -> float:
    """Jaccard overlap of two term lists (0 when both are empty)."""
    left, right = set(a), set(b)
    return len(left & right) / len(left | right) if left | right else 0.0
