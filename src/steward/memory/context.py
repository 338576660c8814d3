"""The memory layer as the harness sees it: recall for an activation, and proposals the model
makes with ``propose_memory``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from steward.domain.audience import Audience
from steward.domain.memory import MemoryKind, Source, SourceKind, connector_sources
from steward.domain.personal import MemoryProposal, Recalled, RecallQuery, SkillProposal
from steward.errors import UsageError
from steward.memory.book import MemoryBook
from steward.memory.skills import SkillLibrary


class PersonalMemory:
    """:class:`~steward.domain.personal.PersonalContext` over a :class:`MemoryBook` and,
    when given one, a :class:`SkillLibrary`."""

    def __init__(self, book: MemoryBook, *, skills: SkillLibrary | None = None) -> None:
        self.book = book
        self.library = skills
        """The person's skills (None: no skills are shown, and proposals are not kept)."""

    async def recall(self, query: RecallQuery) -> list[Recalled]:
        hits = await self.book.retriever.search(
            person_id=query.person_id,
            query=query.text,
            audience=query.audience,
            at=self.book.clock.now(),
            limit=query.limit,
        )
        await self.book.store.memory.record_memory_uses([h.memory.id for h in hits])
        return [
            Recalled(
                id=h.memory.id,
                text=f"({h.memory.kind}) {h.memory.content}",
                provenance=h.memory.provenance(),
                audience=h.memory.audience,
            )
            for h in hits
        ]

    async def skills(self, query: RecallQuery) -> list[Recalled]:
        return [] if self.library is None else await self.library.recall(query)

    async def load_skill(self, query: RecallQuery, name: str) -> Recalled | None:
        return None if self.library is None else await self.library.load_for(query, name)

    async def propose_skill(self, proposal: SkillProposal) -> str:
        if self.library is None:
            return "recorded in this task's journal (no skill library is configured)"
        return await self.library.take(proposal)

    async def skill_outcome(
        self, person_id: str, skill_ids: Sequence[str], *, success: bool
    ) -> None:
        if self.library is not None:
            await self.library.settle(person_id, skill_ids, success=success)

    async def propose(self, proposal: MemoryProposal) -> str:
        """Remember what the model proposes: from the task as its source, in the audience of
        the conversation, a candidate when the task had read untrusted content."""
        extra = proposal.extra
        try:
            kind = MemoryKind(proposal.kind)
            written = await self.book.write(
                person_id=proposal.person_id,
                content=proposal.content,
                kind=kind,
                source=Source(
                    kind=SourceKind.TASK,
                    ref=proposal.task_id or "unknown",
                    trusted=proposal.trusted,
                    detail=str(extra.get("detail", "")),
                ),
                actor=f"agent:{proposal.task_id}",
                also=connector_sources(proposal.items),
                subjects=proposal.subjects,
                slot=None if kind is MemoryKind.EPISODE else extra.get("slot"),
                audience=Audience.parse(str(extra.get("audience", "private"))),
                importance=float(extra.get("importance", 0.5)),
                valid_from=_date(extra.get("valid_from")),
                valid_to=_date(extra.get("valid_to")),
            )
        except (UsageError, ValueError) as exc:
            return f"error: not remembered: {exc}"
        return written.describe()


def _date(value: object) -> datetime | None:
    """A date or time the model gave (``2026-05-01`` or ISO 8601); without an offset, UTC."""
    if value in (None, ""):
        return None
    if isinstance(value, datetime):
        return value
    try:
        parsed = datetime.fromisoformat(str(value))
    except ValueError:
        raise UsageError(f"not an ISO-8601 date or time: {value!r}") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
