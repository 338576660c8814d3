"""Writing and curating memories: the rules every write follows, whoever writes.

* A memory from an untrusted source is a *candidate*; only the person promotes it.
* The same statement is not written twice: a repeat adds nothing (and a trusted repeat of a
  candidate confirms it), so text recalled into a context is never re-learned as new.
* A newer, active memory with the same kind and ``slot`` supersedes the older one: the older
  one's validity ends where the newer one's begins, and it stays in history. Episodes never
  supersede anything: a one-off exception leaves the standing preference as it was.
* A source that was forgotten (a tombstone) gives nothing, ever again.
* Every change is a new version; any version can be restored.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

import structlog

from steward.domain.audience import PRIVATE, Audience
from steward.domain.clock import Clock
from steward.domain.memory import (
    MAX_CONTENT,
    Memory,
    MemoryKind,
    MemoryStatus,
    MemoryVersion,
    Source,
    Tombstone,
    WriteOutcome,
    Written,
)
from steward.domain.memory_item import MemoryItem
from steward.errors import StewardRuntimeError, UsageError
from steward.memory.bulk import write_new
from steward.memory.embedding import Embedder, pack
from steward.memory.rerank import Reranker
from steward.memory.retrieval import Retriever, terms_overlap
from steward.store import Store
from steward.store.memory_search import statement_terms

log = structlog.get_logger(__name__)

NEAR_DUPLICATE = 0.85
"""Term overlap above which a statement counts as one already remembered."""


class MemoryBook:
    """One person's memories, through the store, with the write rules above."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        *,
        embedder: Embedder | None = None,
        reranker: Reranker | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.embedder = embedder
        self.retriever = Retriever(store, embedder=embedder, reranker=reranker)

    # --- writing ----------------------------------------------------------------------------

    async def write(
        self,
        *,
        person_id: str,
        content: str,
        kind: MemoryKind,
        source: Source,
        actor: str,
        also: Sequence[Source] = (),
        subjects: Sequence[str] = (),
        slot: str | None = None,
        audience: Audience = PRIVATE,
        confidence: float = 1.0,
        importance: float = 0.5,
        observed_at: datetime | None = None,
        valid_from: datetime | None = None,
        valid_to: datetime | None = None,
        candidate: bool = False,
    ) -> Written:
        """Remember one statement from ``source`` (and the sources in ``also`` it may derive
        from: the connection items a task had read). ``candidate`` keeps it for review even
        when trusted."""
        content = " ".join(content.split())
        _check(content, confidence, importance, valid_from, valid_to)
        now = self.clock.now()
        cited = tuple(dict.fromkeys((source, *also)))
        trusted = all(s.trusted for s in cited)
        status = MemoryStatus.CANDIDATE if candidate or not trusted else MemoryStatus.ACTIVE
        if await self.store.memory.source_forgotten(person_id, list(cited)):
            return Written(outcome=WriteOutcome.FORGOTTEN, memory=None)
        same = await self._same(person_id, content, audience)
        if same is not None:
            return await self._confirm(same, cited, status, actor)
        memory = Memory(
            id=f"mem_{uuid.uuid4().hex[:20]}",
            person_id=person_id,
            kind=kind,
            content=content,
            sources=cited,
            subjects=tuple(dict.fromkeys(s.strip() for s in subjects if s.strip())),
            slot=(slot or "").strip() or None,
            audience=audience,
            confidence=confidence,
            importance=importance,
            observed_at=observed_at or now,
            valid_from=valid_from,
            valid_to=valid_to,
            status=status,
            created_at=now,
            updated_at=now,
        )
        written = await self.store.memory.add_memory(memory, actor=actor)
        if written is None:
            return Written(outcome=WriteOutcome.FORGOTTEN, memory=None)
        await self._embed([written])
        return Written(outcome=WriteOutcome.CREATED, memory=written)

    async def write_many(
        self,
        *,
        person_id: str,
        items: Sequence[MemoryItem],
        sources: Sequence[Source],
        actor: str,
    ) -> list[Written]:
        """Remember many statements at once, each item citing its source (the same index in
        ``sources``), by the rules of :meth:`write` (see :mod:`steward.memory.bulk`: repeats
        of stored memories and of earlier items, forgotten sources, slots in item order).
        Every item is checked first: a bad one refuses the call (:class:`UsageError` naming
        its index and why) and nothing is written. One :class:`Written` per item, in order."""
        if len(items) != len(sources):
            raise UsageError(f"{len(items)} items but {len(sources)} sources: give one each")
        now = self.clock.now()
        memories = [
            _new_memory(index, item, source, person_id=person_id, now=now)
            for index, (item, source) in enumerate(zip(items, sources, strict=True))
        ]
        outcomes = await write_new(
            self.store,
            self.embedder,
            person_id=person_id,
            memories=memories,
            actor=actor,
            now=now,
            near_duplicate=NEAR_DUPLICATE,
        )
        return [Written(outcome=WriteOutcome(o), memory=m) for o, m in outcomes]

    async def edit(
        self,
        memory_id: str,
        *,
        actor: str,
        expected_version: int | None = None,
        content: str | None = None,
        kind: MemoryKind | None = None,
        subjects: Sequence[str] | None = None,
        slot: str | None = None,
        audience: Audience | None = None,
        importance: float | None = None,
        confidence: float | None = None,
        valid_from: datetime | None = None,
        valid_to: datetime | None = None,
    ) -> Memory:
        """Change a memory; the old text stays in its history."""
        current = await self.store.memory.get_memory(memory_id)
        changed = replace(
            current,
            content=" ".join(content.split()) if content is not None else current.content,
            kind=kind or current.kind,
            subjects=tuple(subjects) if subjects is not None else current.subjects,
            slot=slot if slot is not None else current.slot,
            audience=audience or current.audience,
            importance=importance if importance is not None else current.importance,
            confidence=confidence if confidence is not None else current.confidence,
            valid_from=valid_from if valid_from is not None else current.valid_from,
            valid_to=valid_to if valid_to is not None else current.valid_to,
            updated_at=self.clock.now(),
        )
        _check(
            changed.content,
            changed.confidence,
            changed.importance,
            changed.valid_from,
            changed.valid_to,
        )
        if changed == replace(current, updated_at=changed.updated_at):
            raise UsageError("nothing to change: give a new value")
        written = await self.store.memory.update_memory(
            changed, actor=actor, reason="edited", expected_version=expected_version
        )
        if written.content != current.content:
            await self._embed([written])
        return written

    async def set_status(
        self, memory_id: str, status: MemoryStatus, *, actor: str, reason: str = ""
    ) -> Memory:
        """Archive, delete, restore (to active) or promote a memory."""
        current = await self.store.memory.get_memory(memory_id)
        if current.status is status:
            raise UsageError(f"memory {memory_id} is already {status}")
        if status is MemoryStatus.ACTIVE and not current.trusted and not actor.startswith("person"):
            raise UsageError("a memory from an untrusted source is promoted only by the person")
        changed = replace(current, status=status, updated_at=self.clock.now())
        return await self.store.memory.update_memory(
            changed,
            actor=actor,
            reason=reason or f"{current.status} -> {status}",
            # promoted or restored: it takes its place in its slot's history (again)
            place=status is MemoryStatus.ACTIVE,
        )

    async def restore_version(self, memory_id: str, version: int, *, actor: str) -> Memory:
        """Make an earlier version current again (as a new version; nothing is lost)."""
        history = await self.store.memory.memory_history(memory_id)
        chosen = next((v for v in history if v.version == version), None)
        if chosen is None:
            known = ", ".join(str(v.version) for v in history)
            raise UsageError(f"memory {memory_id} has no version {version} (it has {known})")
        current = await self.store.memory.get_memory(memory_id)
        if await self.store.memory.source_forgotten(current.person_id, chosen.memory.sources):
            raise UsageError(
                f"version {version} of memory {memory_id} came (in part) from a source you "
                "had forgotten; it cannot come back"
            )
        restored = replace(
            chosen.memory,
            # its place in its slot's history stays: a superseded value is not reopened
            superseded_by=current.superseded_by,
            supersedes=current.supersedes,
            valid_to=current.valid_to if current.superseded_by else chosen.memory.valid_to,
            updated_at=self.clock.now(),
        )
        written = await self.store.memory.update_memory(
            restored, actor=actor, reason=f"restored version {version}"
        )
        if written.content != current.content:
            await self._embed([written])
        return written

    async def forget_source(self, person_id: str, source_key: str, *, actor: str) -> Tombstone:
        """Purge everything derived from a source, and never derive from it again."""
        Source.parse_key(source_key)
        return await self.store.memory.forget_source(
            person_id, source_key, now=self.clock.now(), actor=actor
        )

    async def history(self, memory_id: str) -> list[MemoryVersion]:
        return await self.store.memory.memory_history(memory_id)

    # --- helpers ----------------------------------------------------------------------------

    async def _same(self, person_id: str, content: str, audience: Audience) -> Memory | None:
        """A live memory that already says this (exactly, or nearly word for word)."""
        live = [MemoryStatus.ACTIVE, MemoryStatus.CANDIDATE]
        for memory in await self.store.memory.list_memories(
            person_id=person_id, statuses=live, same_as=content, limit=5
        ):
            if memory.audience == audience:
                return memory
        terms = statement_terms(content)
        hits = await self.store.memory_search.search_memories_text(
            person_id=person_id, query=content, audience=audience, at=self.clock.now(), limit=5
        )
        for memory in await self.store.memory.get_memories([hit.id for hit in hits]):
            close = terms_overlap(terms, statement_terms(memory.content)) >= NEAR_DUPLICATE
            if close and memory.audience == audience:
                return memory
        return None

    async def _confirm(
        self, same: Memory, cited: tuple[Source, ...], status: MemoryStatus, actor: str
    ) -> Written:
        """A repeat: add its sources; a trusted repeat of a trusted candidate promotes it (one
        from others' text waits for the person, whoever repeats it)."""
        source = cited[0]
        sources = (*same.sources, *(s for s in cited if s not in same.sources))
        promote = (
            same.status is MemoryStatus.CANDIDATE
            and status is MemoryStatus.ACTIVE
            and all(s.trusted for s in sources)
        )
        if sources == same.sources and not promote:
            return Written(outcome=WriteOutcome.DUPLICATE, memory=same)
        changed = replace(
            same,
            sources=sources,
            status=MemoryStatus.ACTIVE if promote else same.status,
            updated_at=self.clock.now(),
        )
        written = await self.store.memory.update_memory(
            changed,
            actor=actor,
            reason="confirmed" if promote else f"also from {source.key}",
            place=promote,
        )
        return Written(outcome=WriteOutcome.DUPLICATE, memory=written)

    async def _embed(self, memories: Sequence[Memory]) -> None:
        if self.embedder is None or not memories:
            return
        try:
            vectors = await self.embedder.embed([m.content for m in memories])
        except StewardRuntimeError as exc:
            # the memory is kept, and lexical recall finds it
            log.warning("embedding failed", error=str(exc), memories=len(memories))
            return
        for memory, vector in zip(memories, vectors, strict=True):
            await self.store.memory.put_memory_vector(
                memory.id, person_id=memory.person_id, model=self.embedder.name, vector=pack(vector)
            )


def _new_memory(
    index: int, item: MemoryItem, source: Source, *, person_id: str, now: datetime
) -> Memory:
    """Item ``index`` of a bulk write as a new memory, checked as :meth:`MemoryBook.write`
    checks one (and its times: with a time zone, said no later than now)."""
    content = " ".join(item.content.split())
    try:
        for name, value in (
            ("observed_at", item.observed_at),
            ("valid_from", item.valid_from),
            ("valid_to", item.valid_to),
        ):
            if value is not None and value.utcoffset() is None:
                raise UsageError(f"{name} needs a time zone (e.g. 2024-05-01T09:30:00Z)")
        _check(content, 1.0, item.importance, item.valid_from, item.valid_to)
        if item.observed_at is not None and item.observed_at > now:
            raise UsageError(
                f"observed_at {item.observed_at.isoformat()} is in the future: a memory is "
                "of something already said or seen"
            )
    except UsageError as exc:
        raise UsageError(f"item {index}: {exc}") from None
    return Memory(
        id=f"mem_{uuid.uuid4().hex[:20]}",
        person_id=person_id,
        kind=item.kind,
        content=content,
        sources=(source,),
        subjects=tuple(dict.fromkeys(s.strip() for s in item.subjects if s.strip())),
        slot=(item.slot or "").strip() or None,
        audience=item.audience,
        importance=item.importance,
        observed_at=item.observed_at or now,
        valid_from=item.valid_from,
        valid_to=item.valid_to,
        status=MemoryStatus.ACTIVE if source.trusted else MemoryStatus.CANDIDATE,
        created_at=now,
        updated_at=now,
    )


def _check(
    content: str,
    confidence: float,
    importance: float,
    valid_from: datetime | None,
    valid_to: datetime | None,
) -> None:
    if not content:
        raise UsageError("a memory needs content")
    if len(content) > MAX_CONTENT:
        raise UsageError(
            f"a memory is one statement of at most {MAX_CONTENT} characters, not {len(content)}"
        )
    for name, value in (("confidence", confidence), ("importance", importance)):
        if not 0.0 <= value <= 1.0:
            raise UsageError(f"{name} must be between 0 and 1, not {value}")
    if valid_from is not None and valid_to is not None and valid_to <= valid_from:
        raise UsageError("valid_to must be after valid_from")
