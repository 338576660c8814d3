"""What the harness needs from personal context (memory and skills). The memory layer
implements :class:`PersonalContext`; until one is configured, :class:`NoPersonalContext`
retrieves nothing and keeps proposals only in the task's journal."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from steward.domain.audience import PRIVATE, Audience


@dataclass(kw_only=True, frozen=True)
class RecallQuery:
    """What the current activation is about, for retrieval."""

    person_id: str
    """Whose memories."""
    text: str
    """The task's instructions and the event that woke it."""
    audience: Audience = PRIVATE
    """Who will hear the answer; only what this audience :meth:`~Audience.may_hear` is
    recalled."""
    goal_id: str | None = None
    """The goal, if any."""
    limit: int = 8
    """Most items to return."""


@dataclass(kw_only=True, frozen=True)
class Recalled:
    """One memory or skill entry for the context, with where it came from."""

    id: str
    """Memory or skill id."""
    text: str
    """What to show the model."""
    provenance: str = ""
    """Where it came from, shown with it."""


@dataclass(kw_only=True, frozen=True)
class MemoryProposal:
    """A memory the model proposes; the memory layer decides whether and how to keep it."""

    person_id: str
    """Whose memory."""
    content: str
    """The statement."""
    kind: str
    """``preference``, ``fact``, ``relationship``, ``decision``, ``episode`` or ``note``."""
    subjects: tuple[str, ...] = ()
    """Entities it is about."""
    task_id: str | None = None
    """The task that proposed it (provenance)."""
    goal_id: str | None = None
    """Its goal."""
    trusted: bool = True
    """False when it came from untrusted content; such proposals are never promoted silently."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Anything else the memory layer accepts (validity, audience...)."""


class PersonalContext(Protocol):
    async def recall(self, query: RecallQuery) -> list[Recalled]:
        """Memories relevant to the activation, filtered by audience and validity."""
        ...

    async def skills(self, query: RecallQuery) -> list[Recalled]:
        """The skill index entries relevant to the activation (name and one line each)."""
        ...

    async def propose(self, proposal: MemoryProposal) -> str:
        """Take a proposed memory; returns what happened, for the model."""
        ...


class NoPersonalContext:
    """No memory layer configured: nothing recalled; proposals stay in the journal only."""

    async def recall(self, query: RecallQuery) -> list[Recalled]:
        return []

    async def skills(self, query: RecallQuery) -> list[Recalled]:
        return []

    async def propose(self, proposal: MemoryProposal) -> str:
        return "recorded in this task's journal (no memory store is configured)"
