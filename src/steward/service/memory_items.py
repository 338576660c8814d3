"""Statements to import, as they arrive at the edges (the API's body, the CLI's file): a JSON
array of objects, or JSON lines (one object a line), each checked into a
:class:`~steward.domain.memory_item.MemoryItem`; the first bad one refuses them all, named by
its place."""

from __future__ import annotations

from typing import Annotated

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator

from steward.domain.audience import Audience
from steward.domain.memory import MemoryKind
from steward.domain.memory_item import MemoryItem
from steward.errors import UsageError
from steward.service.json_items import checked, json_values


class MemoryItemIn(BaseModel):
    """One statement to import, as JSON."""

    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1, max_length=2000)
    kind: MemoryKind = MemoryKind.NOTE
    subjects: list[Annotated[str, Field(max_length=200)]] = Field(
        default_factory=list, max_length=50
    )
    slot: str | None = Field(None, max_length=200)
    audience: str = Field("private", max_length=140)
    importance: float = Field(0.5, ge=0, le=1)
    valid_from: AwareDatetime | None = None
    valid_to: AwareDatetime | None = None
    observed_at: AwareDatetime | None = Field(None, description="When it was said; not ahead.")
    ref: str | None = Field(None, min_length=1, max_length=200, description="Its id in the import.")
    trusted: bool = Field(True, description="False for text written by others (a candidate).")

    @field_validator("content")
    @classmethod
    def _said(cls, content: str) -> str:
        if not content.strip():
            raise ValueError("a memory needs content")
        return content

    def item(self) -> MemoryItem:
        return MemoryItem(
            content=self.content,
            kind=self.kind,
            subjects=tuple(self.subjects),
            slot=self.slot,
            audience=Audience.parse(self.audience),
            importance=self.importance,
            valid_from=self.valid_from,
            valid_to=self.valid_to,
            observed_at=self.observed_at,
            ref=self.ref,
            trusted=self.trusted,
        )


def parse_memory_items(text: str) -> list[MemoryItem]:
    """A JSON array of statements, or JSON lines (blank lines skipped). Raises
    :class:`UsageError` naming the first bad item (``item <n>``, counted from 0) or line
    (``line <n>``, counted from 1), and why."""
    return [_item(where, value) for where, value in json_values(text)]


SAID = {"content": "a memory needs content", "importance": "importance is a number from 0 to 1"}
"""The words for these fields when missing, empty or out of range."""


def _item(where: str, value: object) -> MemoryItem:
    statement = checked(where, value, MemoryItemIn, what="a statement", said=SAID)
    try:
        return statement.item()
    except UsageError as exc:
        raise UsageError(f"{where}: {exc}") from None
