"""Remembering many statements at once (an imported chat history or mailbox) by the rules of
:meth:`~steward.memory.book.MemoryBook.write`, at a cost per statement a thousand times lower.

One write looks for a repeat with a full-text search and writes in several transactions; a bulk
write reads the person's live statements once, finds repeats in memory (of what is stored and of
the earlier items of the same call), and writes new memories a chunk per transaction, with one
embedding call per chunk. What stays the same:

* an exact repeat (same normalized text and audience, active or candidate) or a near one (term
  overlap of :data:`~steward.memory.book.NEAR_DUPLICATE` or more with an active, valid memory for
  the same audience) writes nothing new: its sources are added to the memory it repeats, and a
  trusted repeat of a trusted candidate promotes it;
* an item from a forgotten source gives nothing;
* slot placement: each new memory takes its place in its slot's history in item order, so a
  later value (in observed time, or in the list when the times are equal) supersedes an
  earlier one, within the call too; episodes never supersede;
* untrusted items are candidates; every memory's versions and sources are recorded.

Near repeats are found by prefix filtering (Bayardo et al., "Scaling up all pairs similarity
search", 2007): two term sets with a Jaccard overlap of at least *t* share a term among the
first ``n - ceil(t·n) + 1`` of each set's terms in one fixed order (rarest first), so only
memories sharing one of those terms are looked at, and of those only the ones whose first
shared term leaves room for enough overlap after it are compared (positional filtering, Xiao
et al., "Efficient similarity joins for near duplicate detection", 2008).
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

import structlog

from steward.domain.audience import Audience
from steward.domain.memory import Memory, MemoryStatus, Source, content_hash
from steward.errors import StewardRuntimeError
from steward.memory.embedding import Embedder, pack
from steward.store import Store
from steward.store.memory import blocking_keys
from steward.store.memory_bulk import Change
from steward.store.memory_search import statement_terms

log = structlog.get_logger(__name__)

CHUNK = 500
"""New memories written per transaction (and embedded per call)."""

Key = tuple[str, int]
"""A known statement: ``("stored", i)`` or ``("new", i)``, i its index in its list."""


Terms = tuple[str, ...]
"""A statement's search terms, distinct, interned (they are kept for every live statement)."""


def terms_of(content: str) -> Terms:
    return tuple(sys.intern(t) for t in statement_terms(content))


@dataclass(kw_only=True)
class RepeatIndex:
    """The statements a repeat may repeat: stored and live, or new in this call."""

    near_duplicate: float
    """Term overlap from which a statement counts as a repeat."""
    rarity: Counter[str]
    """How many of the statements (stored, and this call's) have each term: rarer terms come
    first in a prefix, so that its postings are short. Fixed for the call, as prefix filtering
    needs one order."""
    exact: dict[tuple[str, Audience], Key] = field(default_factory=dict)
    """By normalized text and audience."""
    postings: dict[tuple[str, Audience], list[tuple[Key, int]]] = field(default_factory=dict)
    """By each term of a statement's prefix and its audience: the statement, and the term's
    position in its terms (see the module's docstring)."""
    terms: dict[Key, Terms] = field(default_factory=dict)
    """The ordered terms of each statement that has postings."""

    def order(self, terms: Terms) -> Terms:
        """``terms`` in the call's one order: rarest first."""
        return tuple(sorted(terms, key=lambda t: (self.rarity[t], t)))

    def add(
        self, key: Key, content: str, audience: Audience, ordered: Terms, *, near: bool
    ) -> None:
        """Know ``key`` (its terms :meth:`order`-ed); ``near``: as a statement a near repeat
        may repeat (active and valid now)."""
        # stored statements come oldest first: the newest one says it, as for one write
        self.exact[(content_hash(content), audience)] = key
        if not near or not ordered:
            return
        self.terms[key] = ordered
        for position, term in enumerate(ordered[: self._prefix(len(ordered))]):
            self.postings.setdefault((term, audience), []).append((key, position))

    def same(self, content: str, audience: Audience, ordered: Terms) -> Key | None:
        """What already says this to ``audience`` (terms :meth:`order`-ed): exactly, else the
        closest near repeat."""
        exact = self.exact.get((content_hash(content), audience))
        if exact is not None or not ordered:
            return exact
        mine = frozenset(ordered)
        size = len(ordered)
        # Jaccard >= t means an overlap of t/(1+t) of both sizes together
        share = self.near_duplicate / (1 + self.near_duplicate)
        best: tuple[float, Key] | None = None
        seen: set[Key] = set()
        for position, term in enumerate(ordered[: self._prefix(size)]):
            for key, theirs in self.postings.get((term, audience), ()):
                if key in seen:
                    continue
                # met first at this term: no term before it in the order is shared, so at
                # most the rest of the shorter remainder is (positional filtering, PPJoin)
                seen.add(key)
                other = self.terms[key]
                need = share * (size + len(other)) - 1e-9
                if min(size - position, len(other) - theirs) < need:
                    continue
                common = len(mine.intersection(other))
                # the Jaccard overlap (terms_overlap) of the two, both sets already
                overlap = common / (size + len(other) - common)
                if overlap >= self.near_duplicate and (best is None or overlap > best[0]):
                    best = (overlap, key)
        return None if best is None else best[1]

    def _prefix(self, size: int) -> int:
        """How many of a statement's first terms a near repeat shares one of (see the
        module's docstring)."""
        # a hair below, so that a float rounded high never makes the prefix too short
        return size - math.ceil(self.near_duplicate * size - 1e-9) + 1


def confirmed(memory: Memory, cited: Sequence[Source], status: MemoryStatus) -> Memory:
    """``memory`` as a repeat citing ``cited`` (with ``status``) leaves it: its sources added,
    and a trusted repeat of a trusted candidate promotes it (one from others' text waits for
    the person, whoever repeats it)."""
    sources = (*memory.sources, *(s for s in cited if s not in memory.sources))
    promote = (
        memory.status is MemoryStatus.CANDIDATE
        and status is MemoryStatus.ACTIVE
        and all(s.trusted for s in sources)
    )
    return replace(
        memory, sources=sources, status=MemoryStatus.ACTIVE if promote else memory.status
    )


Outcome = tuple[str, Memory | None]
"""``created``, ``duplicate`` or ``forgotten``, and the memory written or matched."""


async def write_new(
    store: Store,
    embedder: Embedder | None,
    *,
    person_id: str,
    memories: Sequence[Memory],
    actor: str,
    now: datetime,
    near_duplicate: float,
) -> list[Outcome]:
    """Write ``memories`` (new, the person's, each citing its own sources) by the rules in
    the module's docstring; one outcome per memory, in order."""
    stones = await store.memory_bulk.forgotten_keys(person_id=person_id)
    stored = await store.memory_bulk.live_statements(person_id=person_id)
    stored_terms = [terms_of(s.content) for s in stored]
    new_terms = [terms_of(m.content) for m in memories]
    rarity = Counter(t for terms in (*stored_terms, *new_terms) for t in terms)
    known = RepeatIndex(near_duplicate=near_duplicate, rarity=rarity)
    stored_terms = [known.order(terms) for terms in stored_terms]
    new_terms = [known.order(terms) for terms in new_terms]
    for index, (statement, terms) in enumerate(zip(stored, stored_terms, strict=True)):
        valid = (statement.valid_from is None or statement.valid_from <= now) and (
            statement.valid_to is None or statement.valid_to > now
        )
        near = statement.status is MemoryStatus.ACTIVE and valid
        known.add(("stored", index), statement.content, statement.audience, terms, near=near)
    del stored_terms
    created: list[Memory] = []
    repeated: dict[str, list[Memory]] = {}
    plan: list[Key | None] = []
    for memory, terms in zip(memories, new_terms, strict=True):
        if stones & set(blocking_keys(memory.sources)):
            plan.append(None)
            continue
        key = known.same(memory.content, memory.audience, terms)
        if key is None:
            key = ("new", len(created))
            created.append(memory)
            near = _valid_active(memory, now)
            known.add(key, memory.content, memory.audience, terms, near=near)
        elif key[0] == "new":
            created[key[1]] = confirmed(created[key[1]], memory.sources, memory.status)
        else:
            repeated.setdefault(stored[key[1]].id, []).append(memory)
        plan.append(key)

    written: list[Memory | None] = []
    for start in range(0, len(created), CHUNK):
        chunk = await store.memory_bulk.add_memories(created[start : start + CHUNK], actor=actor)
        written += chunk
        await _embed(store, embedder, [m for m in chunk if m is not None])
    confirmed_stored = await _confirm_stored(store, repeated, actor=actor, now=now)

    outcomes: list[Outcome] = []
    first: set[int] = set()
    for key in plan:
        if key is None:
            outcomes.append(("forgotten", None))
        elif key[0] == "stored":
            # gone only when its source was forgotten since it was read
            repeated_memory = confirmed_stored.get(stored[key[1]].id)
            outcomes.append(
                ("forgotten" if repeated_memory is None else "duplicate", repeated_memory)
            )
        elif written[key[1]] is None:
            outcomes.append(("forgotten", None))  # its source was forgotten meanwhile
        else:
            outcomes.append(("duplicate" if key[1] in first else "created", written[key[1]]))
            first.add(key[1])
    return outcomes


async def _confirm_stored(
    store: Store, repeated: dict[str, list[Memory]], *, actor: str, now: datetime
) -> dict[str, Memory]:
    """Fold each stored memory's repeats into it, in order; write those it changed (one new
    version each), a chunk per transaction. Returns every repeated memory as it now is."""
    result: dict[str, Memory] = {}
    changes: list[Change] = []
    ids = list(repeated)
    for start in range(0, len(ids), CHUNK):
        for memory in await store.memory.get_memories(ids[start : start + CHUNK]):
            current = memory
            for repeat in repeated[memory.id]:
                current = confirmed(current, repeat.sources, repeat.status)
            result[memory.id] = memory
            if current == memory:
                continue
            promoted = current.status is not memory.status
            added = [s.key for s in current.sources if s not in memory.sources]
            reason = "confirmed" if promoted else f"also from {added[0]}"
            if len(added) > 1:
                reason += f" and {len(added) - 1} more"
            changes.append(
                Change(memory=replace(current, updated_at=now), reason=reason, place=promoted)
            )
    for start in range(0, len(changes), CHUNK):
        chunk = changes[start : start + CHUNK]
        for memory in await store.memory_bulk.change_memories(chunk, actor=actor):
            result[memory.id] = memory
    return result


async def _embed(store: Store, embedder: Embedder | None, memories: Sequence[Memory]) -> None:
    """One embedding call for a chunk, its vectors written in one transaction."""
    if embedder is None or not memories:
        return
    try:
        vectors = await embedder.embed([m.content for m in memories])
    except StewardRuntimeError as exc:
        # the memories are kept, and lexical recall finds them
        log.warning("embedding failed", error=str(exc), memories=len(memories))
        return
    await store.memory_bulk.put_memory_vectors(
        [(m, pack(v)) for m, v in zip(memories, vectors, strict=True)], model=embedder.name
    )


def _valid_active(memory: Memory, now: datetime) -> bool:
    return (
        memory.status is MemoryStatus.ACTIVE
        and (memory.valid_from is None or memory.valid_from <= now)
        and (memory.valid_to is None or memory.valid_to > now)
    )
