"""Finding memories: lexical search (FTS5 on SQLite, tsvector on PostgreSQL), the recall filter
for candidates found elsewhere, the vectors a semantic index is kept current from, and lookups
across records (what a memory superseded, the source keys under a prefix)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, select, text

from steward.domain import lexicon
from steward.domain.audience import Audience
from steward.domain.memory import Memory, MemoryStatus, Recallable
from steward.store import rows
from steward.store.backend import Backend
from steward.store.memory import memory_from_row
from steward.store.schema import memories, memory_sources, memory_vector_epochs, memory_vectors

_STOPWORD_TEXT = """
a about after again all also am an and any are as at be been before being but by can could did
do does doing done for from had has have having he her here hers him his how i if in into is it
its just me more most my no not now of on once only or other our ours out over own same she
should so some such than that the their theirs them then there these they this those through to
too under until up very was we were what when where which while who whom why will with would
you your yours
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())

POSTINGS_BUDGET = 4000
"""Matches a lexical search ranks in full. bm25 costs about a microsecond and a half per match
on SQLite, and a word said in thousands of memories tells little about which of them is meant:
the rarest words are kept while their matches fit this budget. A search left with one word
over it ranks that word's newest matches only (see :meth:`search_memories_text`). Matches
are the person's own (:data:`SAMPLE`): other people's words do not decide which are kept."""

SAMPLE = 128
"""A word's newest matches whose owners are looked up to estimate how many of a person's
memories hold it, when more memories than this (of everyone's) hold it."""


def search_terms(query: str, *, most: int = 32) -> list[str]:
    """The words of a query worth matching: no stop words, no duplicates, no syntax; a run
    of a script written without spaces (Chinese, Japanese...) gives its character bigrams,
    as the index holds it (:mod:`steward.domain.lexicon`)."""
    seen: dict[str, None] = {}
    for word in lexicon.terms(query):
        if word not in _STOPWORDS and len(seen) < most:
            seen.setdefault(word, None)
    return list(seen)


def statement_terms(content: str) -> list[str]:
    """All the words of a statement worth comparing with another's (near repeats): a query's
    cap would compare only the first few dozen characters of a statement in Chinese."""
    return search_terms(content, most=len(content))


@dataclass(kw_only=True, frozen=True)
class VectorDelta:
    """What changed in a person's vectors since a reader last looked."""

    rows: list[tuple[int, str, bytes]]
    """``(seq, memory id, vector)`` written since, oldest first."""
    epoch: int
    """Bumped whenever vectors were deleted: a reader holding another epoch reloads."""
    newest: int
    """The newest seq (0 when there are none)."""


class MemorySearchRepository:
    """Finding memories: text search, recall candidates, vectors, and lookups across records."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    async def search_memories_text(
        self,
        *,
        person_id: str,
        query: str,
        audience: Audience,
        at: datetime,
        limit: int = 50,
    ) -> list[Recallable]:
        """Active memories valid ``at`` that ``audience`` may hear and whose text matches a
        word of ``query`` (stemmed), best first.

        Words of scripts written without spaces (Chinese, Japanese, Korean, Thai) match as
        character bigrams. On SQLite only the words rarest among the person's memories are
        searched (:data:`POSTINGS_BUDGET`); when even the rarest is in more of them than the
        budget, its newest matches are ranked, more of them until ``limit`` pass the
        filters."""
        terms = search_terms(query)
        if not terms:
            return []
        if self.backend.name == "sqlite":
            return await self.backend.read(
                lambda conn: _search_fts5(conn, terms, person_id, audience, at, limit)
            )
        return await self.backend.read(
            lambda conn: _search_tsvector(conn, terms, person_id, audience, at, limit)
        )

    async def recallable_memories(
        self, *, person_id: str, ids: Sequence[str], audience: Audience, at: datetime
    ) -> dict[str, Recallable]:
        """Which of ``ids`` are the person's active memories, valid ``at``, that ``audience``
        may hear: a filter for candidates found outside SQL."""
        if not ids:
            return {}

        def op(conn: Connection) -> dict[str, Recallable]:
            # looked up by primary key and judged here: with the conditions in SQL, the planner
            # prefers the (person, status) index and walks all of the person's memories
            query = select(
                memories.c.id,
                memories.c.person_id,
                memories.c.status,
                memories.c.valid_from,
                memories.c.valid_to,
                memories.c.audience,
                memories.c.importance,
                memories.c.observed_at,
            ).where(memories.c.id.in_(list(ids)))
            when = rows.ts(at)
            heard = audience.heard()
            return {
                r.id: _recallable(r)
                for r in conn.execute(query)
                if r.person_id == person_id
                and r.status == MemoryStatus.ACTIVE.value
                and (r.valid_from is None or r.valid_from <= when)
                and (r.valid_to is None or r.valid_to > when)
                and (heard is None or r.audience in heard)
            }

        return await self.backend.read(op)

    async def memory_vectors_since(
        self, *, person_id: str, model: str, after_seq: int, known: Sequence[int] = ()
    ) -> VectorDelta:
        """The person's vectors of ``model`` written after ``after_seq`` (but for the seqs in
        ``known``, which the reader has already), the newest seq and the deletion epoch:
        enough for a reader to keep its copy current."""

        def op(conn: Connection) -> VectorDelta:
            mine = (memory_vectors.c.person_id == person_id) & (memory_vectors.c.model == model)
            newest = conn.execute(
                select(func.coalesce(func.max(memory_vectors.c.seq), 0)).where(mine)
            ).scalar_one()
            epoch = conn.execute(
                select(memory_vector_epochs.c.epoch).where(
                    memory_vector_epochs.c.person_id == person_id
                )
            ).scalar_one_or_none()
            query = (
                select(memory_vectors.c.seq, memory_vectors.c.memory_id, memory_vectors.c.vector)
                .where(mine, memory_vectors.c.seq > after_seq, memory_vectors.c.seq <= newest)
                .order_by(memory_vectors.c.seq)
            )
            if known:
                query = query.where(memory_vectors.c.seq.not_in(list(known)))
            fresh = [(int(r[0]), r[1], bytes(r[2])) for r in conn.execute(query)]
            return VectorDelta(rows=fresh, epoch=epoch or 0, newest=int(newest))

        return await self.backend.read(op)

    async def memories_superseded_by(self, memory_id: str, *, person_id: str) -> list[Memory]:
        """The person's memories that ``memory_id`` replaced, oldest first."""

        def op(conn: Connection) -> list[Memory]:
            query = (
                select(memories)
                .where(memories.c.person_id == person_id, memories.c.superseded_by == memory_id)
                .order_by(memories.c.observed_at, memories.c.id)
            )
            return [memory_from_row(r) for r in conn.execute(query)]

        return await self.backend.read(op)

    async def memory_source_keys(self, *, person_id: str, prefix: str) -> list[str]:
        """The distinct source keys of the person's memories that start with ``prefix``
        (taken literally: ``_`` and ``%`` in it match only themselves)."""

        def op(conn: Connection) -> list[str]:
            query = (
                select(memory_sources.c.source_key)
                .where(
                    memory_sources.c.person_id == person_id,
                    memory_sources.c.source_key.startswith(prefix, autoescape=True),
                )
                .distinct()
                .order_by(memory_sources.c.source_key)
            )
            return [r[0] for r in conn.execute(query)]

        return await self.backend.read(op)


def _search_fts5(
    conn: Connection,
    terms: list[str],
    person_id: str,
    audience: Audience,
    at: datetime,
    limit: int,
) -> list[Recallable]:
    params: dict[str, Any] = {"person": person_id, "at": rows.ts(at), "limit": limit}
    counts = _person_counts(conn, terms, person_id)
    chosen: list[str] = []
    postings = 0
    for count, term in sorted((c, t) for c, t in zip(counts, terms, strict=True) if c):
        if chosen and postings + count > POSTINGS_BUDGET:
            break
        chosen.append(term)
        postings += count
    if not chosen:
        return []
    params |= {"match": " OR ".join(f'"{t}"' for t in chosen)} | _audience_params(audience)
    # bm25 is computed for the person's matches only: the join and its filter come first
    mine = (
        "SELECT m.id, m.importance, m.observed_at, m.status, m.valid_from, m.valid_to, "
        "m.audience, -bm25(memory_fts, 1.0, 0.5) AS score FROM memory_fts CROSS JOIN memories m "
        "ON m.fts_doc = memory_fts.rowid WHERE memory_fts MATCH :match AND m.person_id = :person"
    )
    filters = (
        "WHERE m.status = 'active' "
        "AND (m.valid_from IS NULL OR m.valid_from <= :at) "
        "AND (m.valid_to IS NULL OR m.valid_to > :at) "
        f"{_audience_sql(audience)} ORDER BY m.score DESC LIMIT :limit"
    )
    columns = "m.id, m.score, m.importance, m.observed_at"
    if postings <= POSTINGS_BUDGET:
        sql = f"SELECT {columns} FROM ({mine}) m {filters}"
        return [_recallable(r) for r in conn.execute(text(sql), params)]
    # one word, in too many of the person's memories to rank them all: rank its newest matches
    # (bm25 is only computed for the rows the window lets through), and look further back if
    # too few of them are valid and audible
    newest = (
        f"SELECT {columns} FROM ({mine} ORDER BY memory_fts.rowid DESC LIMIT :window) m {filters}"
    )
    everyone = conn.execute(
        text("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH :match"), params
    ).scalar_one()
    window = max(POSTINGS_BUDGET // 4, limit * 8)
    while True:
        found = [_recallable(r) for r in conn.execute(text(newest), params | {"window": window})]
        if len(found) == limit or window >= everyone:
            return found
        window *= 4


def _person_counts(conn: Connection, terms: list[str], person_id: str) -> list[int]:
    """How many of the person's memories hold each term, as far as choosing the words needs:
    counted over everyone when all of those fit the budget (the person's are fewer, and every
    word fits either way); otherwise exact for a term in at most :data:`SAMPLE` memories, else
    its count over everyone scaled by the person's share of its newest :data:`SAMPLE` matches
    (at least 1: the person may have older ones). Counting the person's matches exactly would
    look up the owner of each match, ten times the cost of counting them in the index."""
    params = {f"t{i}": f'"{term}"' for i, term in enumerate(terms)}
    counted = ", ".join(
        f"(SELECT count(*) FROM memory_fts WHERE memory_fts MATCH :t{i})" for i in range(len(terms))
    )
    everyone = [int(c) for c in conn.execute(text(f"SELECT {counted}"), params).one()]
    if sum(everyone) <= POSTINGS_BUDGET:
        return everyone
    sampled = ", ".join(
        "(SELECT count(*) FROM (SELECT m.person_id AS owner FROM memory_fts "
        "CROSS JOIN memories m ON m.fts_doc = memory_fts.rowid "
        f"WHERE memory_fts MATCH :t{i} ORDER BY memory_fts.rowid DESC LIMIT :sample) "
        "WHERE owner = :person)"
        for i in range(len(terms))
    )
    mine = conn.execute(
        text(f"SELECT {sampled}"), params | {"person": person_id, "sample": SAMPLE}
    ).one()
    return [
        m if n <= SAMPLE else max(1, round(m * n / SAMPLE)) if n else 0
        for n, m in zip(everyone, mine, strict=True)
    ]


def _search_tsvector(
    conn: Connection,
    terms: list[str],
    person_id: str,
    audience: Audience,
    at: datetime,
    limit: int,
) -> list[Recallable]:
    # the expression of the GIN index (migration 0016), for the planner to use it
    indexed = "to_tsvector('english', coalesce(m.lexical, m.content || ' ' || m.subjects))"
    sql = (
        f"SELECT m.id, ts_rank_cd({indexed}, q) AS score, m.importance, m.observed_at "
        "FROM memories m, to_tsquery('english', :match) q "
        f"WHERE {indexed} @@ q "
        "AND m.person_id = :person AND m.status = 'active' "
        "AND (m.valid_from IS NULL OR m.valid_from <= :at) "
        "AND (m.valid_to IS NULL OR m.valid_to > :at) "
        f"{_audience_sql(audience)} ORDER BY score DESC LIMIT :limit"
    )
    params: dict[str, Any] = {"match": " | ".join(terms)}
    params |= {"person": person_id, "at": rows.ts(at), "limit": limit}
    params |= _audience_params(audience)
    return [_recallable(r) for r in conn.execute(text(sql), params)]


def _recallable(row: Any) -> Recallable:
    mapping = row._mapping
    return Recallable(
        id=mapping["id"],
        score=float(mapping.get("score") or 0.0),
        importance=float(mapping["importance"]),
        observed_at=rows.dt(mapping["observed_at"]),
    )


def _audience_sql(audience: Audience) -> str:
    heard = audience.heard()
    if heard is None:
        return ""
    names = ", ".join(f":aud{i}" for i in range(len(heard)))
    return f"AND m.audience IN ({names})"


def _audience_params(audience: Audience) -> dict[str, str]:
    return {f"aud{i}": value for i, value in enumerate(audience.heard() or ())}
