"""What the harness needs from personal context (memory and skills). The memory layer
implements :class:`PersonalContext`; until one is configured, :class:`NoPersonalContext`
retrieves nothing and keeps proposals only in the task's journal."""

from __future__ import annotations

from collections.abc import Sequence
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
    audience: Audience | None = None
    """Who a memory is kept for (its private ones never leave without a grant); None for a
    skill."""
    workflow: tuple[dict[str, Any], ...] = ()
    """For a skill with a workflow: its tool calls (``{"tool", "arguments"}``), which the
    harness can run without a model."""


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
    items: tuple[str, ...] = ()
    """Items of the person's connections the task had read (``<connection>/<item>``): the
    memory cites them too, so it is forgotten with them."""


@dataclass(kw_only=True, frozen=True)
class SkillProposal:
    """A skill (or a change to one) the model proposes after a task; the skill layer decides
    whether it applies now or waits for the person."""

    person_id: str
    """Whose skill."""
    name: str
    """Which skill: a new name, or one from the index to change it."""
    description: str
    """One line: what it does."""
    procedure: str
    """How to do it, in Markdown."""
    when_to_use: str = ""
    """The situations it is for."""
    when_not: str = ""
    """Situations it is not for."""
    inputs: tuple[str, ...] = ()
    """What it needs to be told."""
    checks: tuple[str, ...] = ()
    """How to verify it worked."""
    workflow: tuple[dict[str, Any], ...] = ()
    """Tool calls (``{"tool": ..., "arguments": {...}}``) that do it, if it is mechanical."""
    task_id: str | None = None
    """The task it was learned in (provenance)."""
    trusted: bool = True
    """False when the task had read others' text: such proposals wait for the person."""
    audience: Audience = PRIVATE
    """Who heard the conversation it was learned in."""


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

    async def load_skill(self, query: RecallQuery, name: str) -> Recalled | None:
        """The whole of an active skill (procedure, checks...), counted as a use; None when
        the person has no such skill or the query's audience may not hear it."""
        ...

    async def propose_skill(self, proposal: SkillProposal) -> str:
        """Take a proposed skill or change; returns what happened, for the model."""
        ...

    async def skill_outcome(
        self, person_id: str, skill_ids: Sequence[str], *, success: bool
    ) -> None:
        """Count how a task that loaded these skills ended."""
        ...


class NoPersonalContext:
    """No memory layer configured: nothing recalled; proposals stay in the journal only."""

    async def recall(self, query: RecallQuery) -> list[Recalled]:
        return []

    async def skills(self, query: RecallQuery) -> list[Recalled]:
        return []

    async def propose(self, proposal: MemoryProposal) -> str:
        return "recorded in this task's journal (no memory store is configured)"

    async def load_skill(self, query: RecallQuery, name: str) -> Recalled | None:
        return None

    async def propose_skill(self, proposal: SkillProposal) -> str:
        return "recorded in this task's journal (no skill library is configured)"

    async def skill_outcome(
        self, person_id: str, skill_ids: Sequence[str], *, success: bool
    ) -> None:
        return None
