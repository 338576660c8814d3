"""Consolidation ("dreaming"): a pass over one person's memories that promotes confirmed
candidates, merges duplicates, lets newer facts supersede older ones and archives stale items.

The plan is deterministic (rules, no model), so the same memories always give the same diff.
Every pass is recorded with its diff. A pass that would take more than ``max_share`` of the
active memories out of recall is *held*: nothing changes until the person approves it.

Each operation is applied in its own transaction, which first checks that every memory it
touches is still at the version the operation was planned on; one that changed meanwhile (an
edit, a recall does not count) is skipped and reported, never applied over the change. Every
change is a new version of the memory with ``consolidation:<pass id>`` as its actor.

What a pass never does: promote a candidate from an untrusted source (only the person does),
let an episode supersede anything, or rewrite a memory's content.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any

from steward.domain.ids import new_id
from steward.domain.memory import Memory, MemoryKind, MemoryStatus, closed_by, normalized
from steward.domain.memory_pass import MemoryPass, OperationKind, PassOperation, PassStatus
from steward.errors import Conflict, InvalidTransition, NotFound, UsageError
from steward.memory.book import NEAR_DUPLICATE, MemoryBook
from steward.memory.retrieval import terms_overlap
from steward.store.memory_search import statement_terms

_LIVE = [MemoryStatus.ACTIVE, MemoryStatus.CANDIDATE]
_ALL = 1_000_000
"""No limit on the memories a pass reads (a person has thousands, not millions)."""


@dataclass(kw_only=True, frozen=True)
class PassRules:
    """What a pass may do, and when it must ask first."""

    max_share: float = 0.2
    """Largest share of the active memories a pass may take out of recall by itself; a pass
    that would take more is held for the person."""
    stale_after: timedelta = timedelta(days=180)
    """A low-importance note or episode never recalled for this long is archived."""
    stale_importance: float = 0.3
    """At or below this importance a note or episode can go stale."""
    confirm_after: timedelta = timedelta(days=14)
    """A trusted candidate that nothing contradicted for this long is promoted (one heard from
    two sources is promoted at once)."""
    max_operations: int | None = None
    """Most operations one pass plans (its work budget); the rest wait for the next pass."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.max_share <= 1.0:
            raise UsageError(f"max_share must be between 0 and 1, not {self.max_share}")
        if self.max_operations is not None and self.max_operations < 0:
            raise UsageError("max_operations cannot be negative")

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "max_share": self.max_share,
            "stale_after_days": self.stale_after / timedelta(days=1),
            "stale_importance": self.stale_importance,
            "confirm_after_days": self.confirm_after / timedelta(days=1),
        }
        if self.max_operations is not None:
            data["max_operations"] = self.max_operations
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PassRules:
        """From a task's input; what it leaves out keeps its default."""
        default = cls()
        limit = data.get("max_operations")
        return cls(
            max_share=float(data.get("max_share", default.max_share)),
            stale_after=_days(data.get("stale_after_days"), default.stale_after),
            stale_importance=float(data.get("stale_importance", default.stale_importance)),
            confirm_after=_days(data.get("confirm_after_days"), default.confirm_after),
            max_operations=int(limit) if limit is not None else None,
        )


async def consolidate(
    book: MemoryBook,
    person_id: str,
    *,
    rules: PassRules | None = None,
    task_id: str | None = None,
    pass_id: str | None = None,
) -> MemoryPass:
    """Plan a pass over the person's memories, and apply it unless it takes too much out of
    recall at once (then it is held for :func:`approve_pass`). Returns the recorded pass."""
    rules = rules or PassRules()
    pass_id = pass_id or new_id("mps")
    operations, active = await plan_pass(book, person_id, rules)
    drops = sum(op.drops for op in operations)
    share = drops / active if active else 0.0
    planned = MemoryPass(
        id=pass_id,
        person_id=person_id,
        task_id=task_id,
        status=PassStatus.HELD,
        operations=tuple(operations),
        active=active,
        share=share,
        created_at=book.clock.now(),
    )
    if share > rules.max_share:
        return await book.store.memory_passes.add_memory_pass(planned)
    applied = await _apply(book, operations, actor=f"consolidation:{pass_id}")
    return await book.store.memory_passes.add_memory_pass(
        replace(
            planned,
            status=PassStatus.APPLIED,
            operations=tuple(applied),
            decided_at=book.clock.now(),
        )
    )


async def approve_pass(book: MemoryBook, pass_id: str) -> MemoryPass:
    """Apply a held pass. Operations whose memories changed since it was planned are skipped,
    and say why in the returned diff."""
    held = await _held(book, pass_id)
    applied = await _apply(book, held.operations, actor=f"consolidation:{pass_id}")
    return await book.store.memory_passes.decide_memory_pass(
        pass_id, PassStatus.APPLIED, operations=applied, now=book.clock.now()
    )


async def reject_pass(book: MemoryBook, pass_id: str) -> MemoryPass:
    """Refuse a held pass: nothing of it is applied."""
    held = await _held(book, pass_id)
    return await book.store.memory_passes.decide_memory_pass(
        pass_id, PassStatus.REJECTED, operations=held.operations, now=book.clock.now()
    )


async def plan_pass(
    book: MemoryBook, person_id: str, rules: PassRules
) -> tuple[list[PassOperation], int]:
    """The operations a pass would apply, in order, and how many memories are active now."""
    memories = await book.store.memory.list_memories(
        person_id=person_id, statuses=_LIVE, limit=_ALL
    )
    active = sum(1 for m in memories if m.status is MemoryStatus.ACTIVE)
    planner = _Planner(memories, now=book.clock.now(), rules=rules)
    planner.promote()
    planner.merge()
    planner.supersede()
    planner.archive()
    operations = planner.operations
    if rules.max_operations is not None:
        # later operations may build on earlier ones, never the reverse: a prefix is safe
        operations = operations[: rules.max_operations]
    return operations, active


# --- planning ---------------------------------------------------------------------------------


class _Planner:
    """Plans operations on a working copy of the memories, so each phase sees what the earlier
    ones did (a promoted candidate can then be merged, or supersede an older fact)."""

    def __init__(self, memories: Sequence[Memory], *, now: datetime, rules: PassRules) -> None:
        # oldest first, so that "the oldest is kept" and every ordering below are stable
        ordered = sorted(memories, key=lambda m: (m.created_at, m.id))
        self.working = {m.id: m for m in ordered}
        self.now = now
        self.rules = rules
        self.operations: list[PassOperation] = []

    def promote(self) -> None:
        for memory in list(self.working.values()):
            if memory.status is not MemoryStatus.CANDIDATE or not memory.trusted:
                continue
            heard_twice = len({s.key for s in memory.sources}) >= 2
            settled = self.now - memory.created_at >= self.rules.confirm_after
            if heard_twice:
                self._plan(OperationKind.PROMOTE, [memory], "confirmed by more than one source")
            elif settled and not self._contradicted(memory):
                days = self.rules.confirm_after.days
                self._plan(OperationKind.PROMOTE, [memory], f"uncontradicted for {days} days")

    def merge(self) -> None:
        groups: dict[tuple[Any, ...], list[Memory]] = defaultdict(list)
        for memory in self._current():
            # episodes told on different days are different events, even in the same words
            day = memory.observed_at.date() if memory.kind is MemoryKind.EPISODE else None
            key = (memory.kind, str(memory.audience), memory.slot, memory.valid_to, day)
            groups[key].append(memory)
        for group in groups.values():
            for cluster in _duplicates(group):
                if len(cluster) > 1:
                    others = ", ".join(m.id for m in cluster[1:])
                    reason = f"same statement: {others} merged into {cluster[0].id}"
                    self._plan(OperationKind.MERGE, cluster, reason)

    def supersede(self) -> None:
        slots: dict[tuple[MemoryKind, str], list[Memory]] = defaultdict(list)
        for memory in self._current():
            if memory.slot is not None and memory.kind is not MemoryKind.EPISODE:
                slots[(memory.kind, memory.slot)].append(memory)
        for (_, slot), group in slots.items():
            chain = sorted(group, key=lambda m: (m.start, m.created_at, m.id))
            for older, newer in pairwise(chain):
                # the working copy: the previous link may have just given ``older`` a version
                older, newer = self.working[older.id], self.working[newer.id]
                reason = f"newer value of {slot}: {newer.id} replaces {older.id}"
                self._plan(OperationKind.SUPERSEDE, [older, newer], reason)

    def archive(self) -> None:
        days = self.rules.stale_after.days
        for memory in self._current():
            stale = (
                memory.kind in (MemoryKind.NOTE, MemoryKind.EPISODE)
                and memory.uses == 0
                and memory.importance <= self.rules.stale_importance
                and self.now - memory.created_at > self.rules.stale_after
            )
            if stale:
                self._plan(OperationKind.ARCHIVE, [memory], f"never recalled in {days} days")

    def _current(self) -> list[Memory]:
        """Active memories that no other one has replaced."""
        return [
            m
            for m in self.working.values()
            if m.status is MemoryStatus.ACTIVE and m.superseded_by is None
        ]

    def _contradicted(self, candidate: Memory) -> bool:
        """A current memory of the same kind and slot says something else."""
        if candidate.slot is None or candidate.kind is MemoryKind.EPISODE:
            return False
        return any(
            m.kind is candidate.kind
            and m.slot == candidate.slot
            and normalized(m.content) != normalized(candidate.content)
            for m in self._current()
        )

    def _plan(self, kind: OperationKind, memories: Sequence[Memory], reason: str) -> None:
        changes = _changes(kind, memories, now=self.now)
        by_id = {m.id: m for m in memories}
        self.operations.append(
            PassOperation(
                kind=kind,
                memory_ids=tuple(by_id),
                versions={m.id: m.version for m in memories},
                before={changed.id: _describe(by_id[changed.id]) for changed, _ in changes},
                after={changed.id: _describe(changed) for changed, _ in changes},
                reason=reason,
            )
        )
        for changed, _ in changes:
            self.working[changed.id] = replace(changed, version=changed.version + 1)


def _duplicates(group: Sequence[Memory]) -> list[list[Memory]]:
    """Clusters of the same statement (exactly, or nearly word for word), oldest first; each
    memory is compared with a cluster's first member, so clusters do not drift."""
    clusters: list[list[Memory]] = []
    heads: list[list[str]] = []
    exact: dict[str, int] = {}
    by_term: dict[str, list[int]] = defaultdict(list)
    for memory in group:
        text = normalized(memory.content)
        terms = statement_terms(memory.content)
        found = exact.get(text)
        if found is None:
            sharing = sorted({i for term in terms for i in by_term[term]})
            found = next(
                (i for i in sharing if terms_overlap(terms, heads[i]) >= NEAR_DUPLICATE), None
            )
        if found is not None:
            clusters[found].append(memory)
            continue
        exact[text] = len(clusters)
        for term in terms:
            by_term[term].append(len(clusters))
        clusters.append([memory])
        heads.append(terms)
    return clusters


# --- the operations ---------------------------------------------------------------------------


def _changes(
    kind: OperationKind, memories: Sequence[Memory], *, now: datetime
) -> list[tuple[Memory, str]]:
    """What an operation writes, as ``(memory, reason)``: used both to plan it and, on the
    memories as they are then, to apply it."""
    if kind is OperationKind.MERGE:
        kept, *merged = memories
        everything = [kept, *merged]
        union = replace(
            kept,
            sources=tuple(_unique(s for m in everything for s in m.sources)),
            subjects=tuple(_unique(s for m in everything for s in m.subjects)),
            importance=max(m.importance for m in everything),
            confidence=max(m.confidence for m in everything),
            valid_from=_earliest(m.valid_from for m in everything),
            updated_at=now,
        )
        ids = ", ".join(m.id for m in merged)
        return [(union, f"merged {ids} into it")] + [
            (replace(m, status=MemoryStatus.ARCHIVED, updated_at=now), f"merged into {kept.id}")
            for m in merged
        ]
    if kind is OperationKind.SUPERSEDE:
        older, newer = memories
        changes = [(closed_by(older, newer, at=now), f"superseded by {newer.id}")]
        if newer.supersedes is None:
            changes.append(
                (replace(newer, supersedes=older.id, updated_at=now), f"supersedes {older.id}")
            )
        return changes
    (memory,) = memories
    if kind is OperationKind.PROMOTE:
        return [(replace(memory, status=MemoryStatus.ACTIVE, updated_at=now), "promoted")]
    return [(replace(memory, status=MemoryStatus.ARCHIVED, updated_at=now), "archived: stale")]


async def _apply(
    book: MemoryBook, operations: Iterable[PassOperation], *, actor: str
) -> list[PassOperation]:
    """Apply each operation to the memories as they are now; report the ones skipped."""
    done: list[PassOperation] = []
    for op in operations:
        memories = await book.store.memory.get_memories(op.memory_ids)
        why = _stale(op, memories)
        if why is None:
            changes = _changes(op.kind, memories, now=book.clock.now())
            try:
                await book.store.memory_passes.apply_memory_changes(
                    changes, expected=op.versions, actor=actor
                )
            except (Conflict, NotFound) as exc:  # changed between the check and the write
                why = str(exc)
        done.append(op if why is None else replace(op, skipped=why))
    return done


def _stale(op: PassOperation, memories: Sequence[Memory]) -> str | None:
    """Why an operation no longer fits its memories, or None when it still does."""
    found = {m.id for m in memories}
    gone = [i for i in op.memory_ids if i not in found]
    if gone:
        return f"memory {gone[0]} no longer exists"
    for memory in memories:
        planned = op.versions[memory.id]
        if memory.version != planned:
            return f"memory {memory.id} changed since (version {memory.version}, planned {planned})"
    if op.kind is OperationKind.PROMOTE and not memories[0].trusted:
        return f"memory {memories[0].id} has an untrusted source: only the person promotes it"
    if op.kind is OperationKind.ARCHIVE and memories[0].uses:
        # archived for never being recalled; a recall does not make a new version
        return f"memory {memories[0].id} was recalled since the pass was planned"
    return None


async def _held(book: MemoryBook, pass_id: str) -> MemoryPass:
    found = await book.store.memory_passes.get_memory_pass(pass_id)
    if found.status is not PassStatus.HELD:
        raise InvalidTransition(f"memory pass {pass_id} is {found.status}: only a held pass waits")
    return found


def _describe(memory: Memory) -> str:
    """A memory in one line, for a diff: what it says and where it stands."""
    valid = ""
    if memory.valid_from is not None:
        valid += f"; valid from {memory.valid_from.date().isoformat()}"
    if memory.valid_to is not None:
        valid += f"; valid until {memory.valid_to.date().isoformat()}"
    replaced = f"; superseded by {memory.superseded_by}" if memory.superseded_by else ""
    sources = ", ".join(s.key for s in memory.sources)
    return (
        f"({memory.kind}, {memory.status}) {memory.content}{valid}{replaced}; "
        f"importance {memory.importance:g}; from {sources}"
    )


def _unique(items: Iterable[Any]) -> list[Any]:
    return list(dict.fromkeys(items))


def _earliest(times: Iterable[datetime | None]) -> datetime | None:
    """The earliest start; None ("always was") when any of them has none."""
    known = list(times)
    return None if any(t is None for t in known) else min(t for t in known if t is not None)


def _days(value: Any, default: timedelta) -> timedelta:
    return default if value is None else timedelta(days=float(value))
