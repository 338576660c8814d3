"""The facade's memory part: what Steward remembers about the person — list, search, show with
provenance and history, edit, delete, archive, restore, promote, forget by source, and
``MEMORY.md`` export and import.

Every method acts for one person: a memory of anyone else is not found, exactly like one that
does not exist. Reading needs the ``read`` scope, changing ``control``. A change made through
the facade is the person's own (the agent writes through the harness), recorded as ``person``
or, through an API token, ``person/token:<id>`` — so the person may promote what the agent
could only propose.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TypeVar

from steward.domain.audience import Audience
from steward.domain.ids import new_id
from steward.domain.limits import MAX_JSON_CHARS, check_json, check_text
from steward.domain.memory import (
    Memory,
    MemoryHit,
    MemoryKind,
    MemoryStatus,
    MemoryVersion,
    Source,
    SourceKind,
    Tombstone,
    Written,
    content_hash,
)
from steward.domain.memory_item import MemoryItem
from steward.domain.memory_pass import MemoryPass, PassStatus
from steward.domain.tokens import CONTROL, READ
from steward.errors import UsageError
from steward.memory.markdown import ImportReport
from steward.service.base import ServiceBase

E = TypeVar("E", bound=StrEnum)

MOST_LISTED = 1000
"""The most memories one listing returns (page on with ``offset``)."""
MOST_IMPORTED = 10_000
"""The most memories one :meth:`MemoryService.remember_many` call takes (send more in parts)."""
_IMPORT_NAME = re.compile(r"^[A-Za-z0-9._-]{1,100}$")
_KEPT = (MemoryStatus.ACTIVE, MemoryStatus.CANDIDATE, MemoryStatus.ARCHIVED)
"""What a listing without a status shows: everything but deleted memories."""


@dataclass(kw_only=True, frozen=True)
class MemoryDetail:
    """A memory with where it came from and everything that happened to it."""

    memory: Memory
    """As it is now (its sources are its provenance)."""
    history: list[MemoryVersion]
    """Every version, oldest first."""
    supersedes: list[Memory]
    """The memories it replaced (their validity ends where its begins)."""
    superseded_by: Memory | None
    """The memory that replaced it, if any."""


@dataclass(kw_only=True, frozen=True)
class Forgotten:
    """What forgetting did."""

    tombstones: list[Tombstone]
    """One per source forgotten: nothing is derived from it again."""
    purged: int
    """Memories purged now, every version of them included."""
    skills: int = 0
    """Skills deleted with every version, because they were learned (in part) there."""


class MemoryService(ServiceBase):
    # --- memories: reading ------------------------------------------------------------------

    async def list_memories(
        self,
        *,
        person_id: str,
        status: str | None = None,
        kind: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[Memory]:
        """Newest first; without ``status``, every memory but the deleted ones."""
        person_id = self._for(person_id, READ)
        statuses = [_enum(MemoryStatus, status, "status")] if status else list(_KEPT)
        if not 1 <= limit <= MOST_LISTED:
            raise UsageError(f"limit must be from 1 to {MOST_LISTED}, not {limit}")
        if offset < 0:
            raise UsageError(f"offset must not be negative, not {offset}")
        return await self.store.memory.list_memories(
            person_id=person_id,
            statuses=statuses,
            kind=_enum(MemoryKind, kind, "kind") if kind else None,
            limit=limit,
            offset=offset,
        )

    async def search_memories(
        self,
        *,
        person_id: str,
        query: str,
        audience: Audience | str = "private",
        mode: str | None = None,
        limit: int = 10,
    ) -> list[MemoryHit]:
        """What recall would find now for a conversation heard by ``audience``: active, valid
        memories it may hear, best first. ``mode``: lexical, semantic or hybrid (the default:
        hybrid with an embedder, lexical without)."""
        from steward.memory.retrieval import SearchMode

        person_id = self._for(person_id, READ)
        heard_by = _audience(audience)
        chosen = _enum(SearchMode, mode, "search mode") if mode else None
        if not query.strip():
            raise UsageError("say what to search for")
        if not 1 <= limit <= MOST_LISTED:
            raise UsageError(f"limit must be from 1 to {MOST_LISTED}, not {limit}")
        if chosen not in (None, SearchMode.LEXICAL) and self.embedder is None:
            raise UsageError(
                f"{chosen} search needs an embedder and none is configured: search with "
                "mode lexical, or configure embeddings"
            )
        return await self.memory.retriever.search(
            person_id=person_id,
            query=query,
            audience=heard_by,
            at=self.clock.now(),
            limit=limit,
            mode=chosen,
        )

    async def memory_detail(self, memory_id: str) -> MemoryDetail:
        memory = await self._memory(memory_id, READ)
        earlier = await self.store.memory_search.memories_superseded_by(
            memory_id, person_id=memory.person_id
        )
        linked = [i for i in (memory.supersedes, memory.superseded_by) if i is not None]
        # links never cross persons (the store refuses that); checked anyway, as for any id
        near = {
            m.id: m
            for m in await self.store.memory.get_memories(linked)
            if m.person_id == memory.person_id
        }
        if memory.supersedes in near and all(m.id != memory.supersedes for m in earlier):
            earlier.insert(0, near[memory.supersedes])
        return MemoryDetail(
            memory=memory,
            history=await self.memory.history(memory_id),
            supersedes=earlier,
            superseded_by=near.get(memory.superseded_by or ""),
        )

    async def list_tombstones(self, *, person_id: str) -> list[Tombstone]:
        """The sources forgotten, oldest first."""
        return await self.store.memory.list_tombstones(person_id=self._for(person_id, READ))

    async def export_memories(self, *, person_id: str) -> str:
        """Every memory but the deleted and the superseded ones, as an editable ``MEMORY.md``
        (see :mod:`steward.memory.markdown`)."""
        from steward.memory.markdown import export_markdown

        return await export_markdown(self.memory, person_id=self._for(person_id, READ))

    # --- memories: changing -----------------------------------------------------------------

    async def remember(
        self,
        *,
        person_id: str,
        content: str,
        kind: str = MemoryKind.NOTE,
        subjects: Sequence[str] = (),
        slot: str | None = None,
        audience: Audience | str = "private",
        importance: float = 0.5,
        valid_from: datetime | None = None,
        valid_to: datetime | None = None,
    ) -> Written:
        """Remember what the person states. Each statement is its own source, so forgetting it
        purges just that statement and blocks nothing else the person says later."""
        person_id = self._for(person_id, CONTROL)
        check_json([list(subjects), slot], "a memory's subjects and slot")
        return await self.memory.write(
            person_id=person_id,
            content=content,
            kind=_enum(MemoryKind, kind, "kind"),
            source=Source(kind=SourceKind.PERSON, ref=new_id("say"), trusted=True),
            actor=self._changer(),
            subjects=subjects,
            slot=slot,
            audience=_audience(audience),
            importance=importance,
            valid_from=valid_from,
            valid_to=valid_to,
        )

    async def remember_many(
        self, *, person_id: str, items: Sequence[MemoryItem], import_name: str = "bulk"
    ) -> list[Written]:
        """Remember many statements at once (a chat history, a mailbox), by the rules of
        :meth:`remember` (see :mod:`steward.memory.bulk`). Item ``n`` cites
        ``import:<import_name>/<its ref>`` (its ref defaults to a digest of its text), so one
        item is forgotten by its key and the whole import by ``import:<import_name>``, and the
        same import given again writes nothing new. A bad item refuses the call, naming it,
        and nothing is written. One result per item, in order."""
        person_id = self._for(person_id, CONTROL)
        if len(items) > MOST_IMPORTED:
            raise UsageError(
                f"at most {MOST_IMPORTED} memories per call, not {len(items)}: send them in parts"
            )
        name = import_name.strip()
        if not _IMPORT_NAME.match(name):
            raise UsageError(
                f"bad import name {import_name!r}: 1 to 100 letters, digits and . _ - only"
            )
        sources = []
        for index, item in enumerate(items):
            try:
                check_json([list(item.subjects), item.slot], "a memory's subjects and slot")
                ref = item.ref if item.ref is not None else content_hash(item.content)[:16]
                sources.append(
                    Source(kind=SourceKind.IMPORT, ref=f"{name}/{ref}", trusted=item.trusted)
                )
            except UsageError as exc:
                raise UsageError(f"item {index}: {exc}") from None
        return await self.memory.write_many(
            person_id=person_id, items=items, sources=sources, actor=self._changer()
        )

    async def edit_memory(
        self,
        memory_id: str,
        *,
        expected_version: int | None = None,
        content: str | None = None,
        kind: str | None = None,
        subjects: Sequence[str] | None = None,
        slot: str | None = None,
        audience: Audience | str | None = None,
        importance: float | None = None,
        confidence: float | None = None,
        valid_from: datetime | None = None,
        valid_to: datetime | None = None,
    ) -> Memory:
        """Change a memory (a new version; the old one stays in its history). With
        ``expected_version``, a memory changed meanwhile is a :class:`Conflict`."""
        await self._memory(memory_id, CONTROL)
        check_json([list(subjects or ()), slot], "a memory's subjects and slot")
        return await self.memory.edit(
            memory_id,
            actor=self._changer(),
            expected_version=expected_version,
            content=content,
            kind=_enum(MemoryKind, kind, "kind") if kind else None,
            subjects=subjects,
            slot=slot,
            audience=_audience(audience) if audience is not None else None,
            importance=importance,
            confidence=confidence,
            valid_from=valid_from,
            valid_to=valid_to,
        )

    async def delete_memory(self, memory_id: str) -> Memory:
        """Deleted: never recalled; restorable until its source is forgotten."""
        await self._memory(memory_id, CONTROL)
        return await self._set(memory_id, MemoryStatus.DELETED, "deleted")

    async def archive_memory(self, memory_id: str) -> Memory:
        """Set aside: kept and exported, never recalled."""
        await self._memory(memory_id, CONTROL)
        return await self._set(memory_id, MemoryStatus.ARCHIVED, "archived")

    async def restore_memory(self, memory_id: str) -> Memory:
        """An archived or deleted memory back to active."""
        memory = await self._memory(memory_id, CONTROL)
        if memory.status is MemoryStatus.CANDIDATE:
            raise UsageError(f"memory {memory_id} is a candidate: promote it to make it active")
        return await self._set(memory_id, MemoryStatus.ACTIVE, "restored")

    async def promote_memory(self, memory_id: str) -> Memory:
        """A candidate (proposed, or from an untrusted source) made active by the person; it
        supersedes what its slot held."""
        memory = await self._memory(memory_id, CONTROL)
        if memory.status is not MemoryStatus.CANDIDATE:
            raise UsageError(f"memory {memory_id} is {memory.status}, not a candidate")
        return await self._set(memory_id, MemoryStatus.ACTIVE, "promoted")

    async def restore_memory_version(self, memory_id: str, version: int) -> Memory:
        """Make an earlier version current again (as a new version: nothing is lost)."""
        await self._memory(memory_id, CONTROL)
        return await self.memory.restore_version(memory_id, version, actor=self._changer())

    async def forget_source(self, source_key: str, *, person_id: str) -> Forgotten:
        """Purge every memory derived from a source, every version included, and leave a
        tombstone so nothing is derived from it again. ``connector:<connection>`` (without an
        item) forgets every item of the connection, ``import:<name>`` every item of a bulk
        import (:meth:`remember_many`)."""
        person_id = self._for(person_id, CONTROL)
        kind, ref = Source.parse_key(source_key.strip())
        key = Source(kind=kind, ref=ref, trusted=True).key  # checks the reference
        keys = [key]
        # a whole connection, or a whole bulk import: each of its items too
        if kind in (SourceKind.CONNECTOR, SourceKind.IMPORT) and "/" not in ref:
            keys += await self.store.memory_search.memory_source_keys(
                person_id=person_id, prefix=f"{key}/"
            )
        return await self._forget(person_id, keys)

    async def forget_conversation(self, task_id: str) -> Forgotten:
        """Forget a conversation: everything derived from the task and from all its subtasks."""
        task = await self._task(task_id, CONTROL)
        keys = [
            f"{kind}:{each}"
            for each in await self._conversation(task_id, task.person_id)
            for kind in (SourceKind.CONVERSATION, SourceKind.TASK)
        ]
        return await self._forget(task.person_id, keys)

    async def import_memories(
        self,
        markdown: str,
        *,
        person_id: str,
        file_name: str = "MEMORY.md",
        archive_missing: bool = False,
    ) -> ImportReport:
        """Apply an edited ``MEMORY.md`` (see :mod:`steward.memory.markdown`): nothing is
        applied when a line is malformed; a bullet whose memory changed since the export is a
        conflict, never overwritten; new bullets come from ``import:<file name>``."""
        from steward.memory.markdown import import_markdown

        person_id = self._for(person_id, CONTROL)
        check_text(markdown, "a MEMORY.md import", most=MAX_JSON_CHARS)
        ref = re.sub(r"[\s:]+", "_", file_name.strip())[:300] or "MEMORY.md"
        return await import_markdown(
            self.memory,
            markdown,
            person_id=person_id,
            source_ref=ref,
            actor=self._changer(),
            archive_missing=archive_missing,
        )

    # --- consolidation passes held for review --------------------------------------------

    async def list_memory_passes(
        self, *, person_id: str, status: PassStatus | None = None, limit: int = 50
    ) -> list[MemoryPass]:
        """Consolidation passes, newest first (``held`` ones wait for the person)."""
        person_id = self._for(person_id, READ)
        return await self.store.memory_passes.list_memory_passes(
            person_id=person_id, status=status, limit=limit
        )

    async def decide_memory_pass(self, pass_id: str, *, approve: bool) -> MemoryPass:
        """Apply a held pass (what changed since it was planned is skipped and said why), or
        reject it (nothing of it is applied)."""
        from steward.memory.consolidation import approve_pass, reject_pass

        self._may(CONTROL)
        held = await self.store.memory_passes.get_memory_pass(pass_id)
        self._owned("memory pass", pass_id, held.person_id)
        if approve:
            return await approve_pass(self.memory, pass_id)
        return await reject_pass(self.memory, pass_id)

    # --- helpers ----------------------------------------------------------------------------

    async def _memory(self, memory_id: str, scope: str) -> Memory:
        self._may(scope)
        memory = await self.store.memory.get_memory(memory_id)
        self._owned("memory", memory_id, memory.person_id)
        return memory

    def _changer(self) -> str:
        return "person" if self.principal is None else f"person/{self.principal.actor}"

    async def _set(self, memory_id: str, status: MemoryStatus, reason: str) -> Memory:
        return await self.memory.set_status(memory_id, status, actor=self._changer(), reason=reason)

    async def _conversation(self, task_id: str, person_id: str) -> list[str]:
        """The task and its subtasks, at any depth."""
        found = [task_id]
        seen = {task_id}
        for parent in found:  # grows while it is walked
            for child in await self.store.tasks.list_tasks(
                parent_id=parent, person_id=person_id, limit=1_000_000
            ):
                if child.id not in seen:
                    seen.add(child.id)
                    found.append(child.id)
        return found

    async def _forget(self, person_id: str, keys: Sequence[str]) -> Forgotten:
        before = {
            t.source_key: t.purged
            for t in await self.store.memory.list_tombstones(person_id=person_id)
        }
        stones = [
            await self.memory.forget_source(person_id, key, actor=self._changer()) for key in keys
        ]
        purged = sum(s.purged - before.get(s.source_key, 0) for s in stones)
        skills = await self.store.skills.purge_skills_from(
            person_id, keys, now=self.clock.now(), actor=self._changer()
        )
        return Forgotten(tombstones=stones, purged=purged, skills=skills)


def _enum(enum: type[E], value: str, what: str) -> E:
    try:
        return enum(value.strip().lower())
    except ValueError:
        known = ", ".join(e.value for e in enum)
        raise UsageError(f"unknown {what} {value!r}: use one of {known}") from None


def _audience(value: Audience | str) -> Audience:
    return value if isinstance(value, Audience) else Audience.parse(value)
