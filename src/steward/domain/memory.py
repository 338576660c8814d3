"""Personal memory: what Steward knows about the person, where it learned it, when it is true and
who may hear it. Kept apart from task, environment and authorization state."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from steward.domain.audience import PRIVATE, Audience
from steward.errors import UsageError


class MemoryKind(StrEnum):
    PREFERENCE = "preference"
    """A standing liking or rule ("prefers aisle seats")."""
    FACT = "fact"
    """Something true about the person or their world ("lives in Berlin")."""
    RELATIONSHIP = "relationship"
    """Who someone is to the person ("Ana is my sister")."""
    DECISION = "decision"
    """Something the person decided ("we will not renew the gym")."""
    EPISODE = "episode"
    """Something that happened once, an exception included ("this time I'll take the
    red-eye"): it never changes a standing preference."""
    NOTE = "note"
    """Anything else worth keeping."""


class MemoryStatus(StrEnum):
    CANDIDATE = "candidate"
    """Proposed (extracted, or from an untrusted source); not recalled until promoted."""
    ACTIVE = "active"
    """Recalled when relevant, valid and audible."""
    ARCHIVED = "archived"
    """Kept, not recalled (stale, or set aside by the person or a consolidation pass)."""
    DELETED = "deleted"
    """Deleted by the person; restorable from its history until forgotten."""


class SourceKind(StrEnum):
    CONVERSATION = "conversation"
    """A chat or ask (its task id)."""
    CONNECTOR = "connector"
    """An item a connector fetched (a mail, an event), ``<connection id>/<item id>``."""
    TASK = "task"
    """Something a task found or did."""
    PERSON = "person"
    """The person's own edit or statement outside a conversation."""
    IMPORT = "import"
    """An imported ``MEMORY.md``."""
    CONSOLIDATION = "consolidation"
    """A consolidation pass (a merge of other memories)."""


_REF = re.compile(r"^[^\s:]{1,300}$")


@dataclass(kw_only=True, frozen=True)
class Source:
    """Where a memory came from."""

    kind: SourceKind
    """What sort of thing."""
    ref: str
    """Its id (a task id, ``<connection>/<item>``, a file name…)."""
    trusted: bool
    """False when the text came from others (a mail body, a web page, a shared file)."""
    detail: str = ""
    """Where inside it (a step number, a quote), for the person."""

    def __post_init__(self) -> None:
        if not _REF.match(self.ref):
            raise UsageError(f"bad source reference {self.ref!r}: no spaces or colons")

    @property
    def key(self) -> str:
        """``<kind>:<ref>``: what forgetting a source names."""
        return f"{self.kind}:{self.ref}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": str(self.kind),
            "ref": self.ref,
            "trusted": self.trusted,
            "detail": self.detail,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Source:
        return cls(
            kind=SourceKind(data["kind"]),
            ref=str(data["ref"]),
            trusted=bool(data["trusted"]),
            detail=str(data.get("detail", "")),
        )

    @classmethod
    def parse_key(cls, key: str) -> tuple[SourceKind, str]:
        kind, _, ref = key.partition(":")
        try:
            return SourceKind(kind), ref
        except ValueError:
            kinds = ", ".join(k.value for k in SourceKind)
            raise UsageError(
                f"bad source {key!r}: use <kind>:<id> with kind one of {kinds}"
            ) from None


def connector_sources(items: Sequence[str]) -> tuple[Source, ...]:
    """Items of the person's connections a task read (``<connection>/<item>``), as the
    untrusted sources of what it learned from them."""
    return tuple(Source(kind=SourceKind.CONNECTOR, ref=ref, trusted=False) for ref in items)


@dataclass(kw_only=True, frozen=True)
class Memory:
    """One thing Steward remembers about the person."""

    id: str
    """Stable id; edits keep it and add a version."""
    person_id: str
    """Whose memory."""
    kind: MemoryKind
    """Preference, fact, relationship, decision, episode or note."""
    content: str
    """The statement, in words."""
    sources: tuple[Source, ...]
    """Where it came from (more than one after a merge)."""
    subjects: tuple[str, ...] = ()
    """The people, places and things it is about."""
    slot: str | None = None
    """What it is the value of (``home_city``, ``seat_preference``): a newer valid memory of the
    same kind and slot supersedes an older one. Episodes have none."""
    audience: Audience = PRIVATE
    """Who it may be disclosed to (see :meth:`Audience.may_hear`)."""
    confidence: float = 1.0
    """0 to 1: how sure Steward is that it is right."""
    importance: float = 0.5
    """0 to 1: how much it matters when relevant."""
    observed_at: datetime
    """When it was said or seen."""
    valid_from: datetime | None = None
    """From when it is true (None: always was, as far as known)."""
    valid_to: datetime | None = None
    """Until when it was true (None: still is). Set when superseded; history is kept."""
    supersedes: str | None = None
    """The memory this one replaced."""
    superseded_by: str | None = None
    """The memory that replaced this one."""
    status: MemoryStatus = MemoryStatus.ACTIVE
    """Candidate, active, archived or deleted."""
    version: int = 1
    """Increases with every change; every version is kept."""
    created_at: datetime
    """First written."""
    updated_at: datetime
    """Last changed."""
    uses: int = 0
    """How often it was recalled into a context."""

    @property
    def trusted(self) -> bool:
        """Every source is trusted."""
        return all(source.trusted for source in self.sources)

    @property
    def start(self) -> datetime:
        """When it became true, as far as known: its valid-from, else when it was said."""
        return self.valid_from or self.observed_at

    def provenance(self) -> str:
        """One line for the context and the person: where it came from, and when."""
        parts = [
            f"{s.key}{'' if s.trusted else ' (untrusted)'}{f' {s.detail}' if s.detail else ''}"
            for s in self.sources
        ]
        return f"{', '.join(parts)}; observed {self.observed_at.date().isoformat()}"


@dataclass(kw_only=True, frozen=True)
class Recallable:
    """A memory a search may return, with what ranking it needs (not the whole record)."""

    id: str
    """The memory."""
    importance: float
    """Its importance, 0 to 1."""
    observed_at: datetime
    """When it was said or seen."""
    score: float = 0.0
    """The search's own score, higher is better (0 from a search that gives none)."""


@dataclass(kw_only=True, frozen=True)
class Placement:
    """Where a memory goes in its slot's history."""

    memory: Memory
    """The memory as it is to be stored (its validity and successor set)."""
    supersedes: tuple[str, ...] = ()
    """The values it closes: they end where it starts."""


def place_in_slot(memory: Memory, slot_values: Sequence[Memory]) -> Placement:
    """Place an active, slotted, non-episode memory among the active values of its slot (same
    person, kind and slot); any other memory has no place in a slot's history.

    It supersedes the values current at its start (the current value, or — for news older than
    what is known — the one its successor had superseded), starts when it was said if it names
    no start, and ends where its successor starts."""
    if (
        memory.slot is None
        or memory.kind is MemoryKind.EPISODE
        or memory.status is not (MemoryStatus.ACTIVE)
    ):
        return Placement(memory=memory)
    others = [m for m in slot_values if m.id != memory.id]
    later = [m for m in others if m.start > memory.start]
    successor = min(later, key=lambda m: m.start) if later else None
    ended_by = successor.id if successor is not None else None
    older = [m.id for m in others if m.start <= memory.start and m.superseded_by == ended_by]
    if older:
        memory = replace(
            memory,
            supersedes=older[0],
            # a changed value is known from when it was said, not "always"
            valid_from=memory.valid_from or memory.observed_at,
        )
    if successor is not None:
        until = successor.start
        memory = replace(
            memory,
            valid_to=until if memory.valid_to is None else min(memory.valid_to, until),
            superseded_by=successor.id,
        )
    return Placement(memory=memory, supersedes=tuple(older))


def closed_by(old: Memory, successor: Memory, *, at: datetime) -> Memory:
    """``old`` as superseded by ``successor`` at ``at``: ended where the successor starts (or
    earlier, if it had ended already), and linked to it."""
    until = successor.start
    return replace(
        old,
        valid_to=until if old.valid_to is None or old.valid_to > until else old.valid_to,
        superseded_by=successor.id,
        updated_at=at,
    )


def followed_by(later: Memory, placed: Memory, *, at: datetime) -> Memory:
    """``later`` as the successor of ``placed``, an older value learnt after it: linked to it,
    and, if it named no start, starting where ``placed`` ends (a changed value is known from
    the change, not "always": asked about a time before it, the older value answers alone)."""
    start = later.valid_from
    if start is None and placed.valid_to is not None:
        start = min(placed.valid_to, later.observed_at)
    return replace(later, supersedes=placed.id, valid_from=start, updated_at=at)


@dataclass(kw_only=True, frozen=True)
class MemoryVersion:
    """One version of a memory, as it was after a change."""

    memory_id: str
    """Which memory."""
    version: int
    """Its number."""
    memory: Memory
    """The memory as it was."""
    actor: str
    """Who changed it (``person``, ``agent:<task>``, ``consolidation:<pass>``…)."""
    reason: str
    """Why (``created``, ``edited``, ``superseded by mem_…``, ``restored v2``…)."""
    at: datetime
    """When."""


@dataclass(kw_only=True, frozen=True)
class Tombstone:
    """A forgotten source: nothing is ever derived from it again."""

    person_id: str
    """Whose."""
    source_key: str
    """``<kind>:<ref>``."""
    at: datetime
    """When it was forgotten."""
    purged: int = 0
    """How many memories were purged with it."""


@dataclass(kw_only=True, frozen=True)
class MemoryHit:
    """A memory found by a search, with why it ranked where it did."""

    memory: Memory
    """The memory."""
    score: float
    """Higher is better (fused rank, importance and recency)."""
    matched: tuple[str, ...] = field(default_factory=tuple)
    """Which searches found it: ``lexical``, ``semantic``."""


def normalized(text: str) -> str:
    """Lower case, single spaces, no trailing punctuation: what makes two statements the same."""
    return re.sub(r"\s+", " ", text).strip().rstrip(".!").lower()


def content_hash(text: str) -> str:
    return hashlib.sha256(normalized(text).encode()).hexdigest()[:32]


MAX_CONTENT = 2000
"""Characters in one memory: a memory is a statement, not a document."""


class WriteOutcome(StrEnum):
    CREATED = "created"
    """A new memory."""
    DUPLICATE = "duplicate"
    """Already remembered; nothing new written (a candidate may have been confirmed)."""
    FORGOTTEN = "forgotten"
    """Its source was forgotten: nothing is derived from it."""


@dataclass(kw_only=True, frozen=True)
class Written:
    """What a write did."""

    outcome: WriteOutcome
    """Created, duplicate, or refused for a forgotten source."""
    memory: Memory | None
    """The memory written or matched (None when refused)."""

    def describe(self) -> str:
        """In words, for the model's observation."""
        if self.memory is None:
            return "not remembered: its source was forgotten by the person"
        if self.outcome is WriteOutcome.DUPLICATE:
            return f"already remembered ({self.memory.id})"
        if self.memory.status is MemoryStatus.CANDIDATE:
            return f"kept as a candidate for the person to confirm ({self.memory.id})"
        return f"remembered ({self.memory.id})"
