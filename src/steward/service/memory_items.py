"""Statements to import, as they arrive at the edges (the API's body, the CLI's file): a JSON
array of objects, or JSON lines (one object a line), each checked into a
:class:`~steward.domain.memory_item.MemoryItem`; the first bad one refuses them all, named by
its place."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Annotated, Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import ErrorDetails

from steward.domain.audience import Audience
from steward.domain.memory import MemoryKind
from steward.domain.memory_item import MemoryItem
from steward.errors import UsageError


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
    return [_checked(where, value) for where, value in _values(text)]


def _values(text: str) -> Iterator[tuple[str, Any]]:
    if text.lstrip().startswith("["):
        try:
            values = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(f"not a JSON array: {exc}") from None
        yield from ((f"item {n}", value) for n, value in enumerate(values))
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield f"line {number}", json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"line {number}: not a JSON object: {exc.msg}") from None


def _checked(where: str, value: Any) -> MemoryItem:
    if not isinstance(value, dict):
        raise UsageError(f"{where}: a statement is a JSON object with at least a content")
    try:
        return MemoryItemIn.model_validate(value).item()
    except ValidationError as exc:
        problems = "; ".join(_plain(error) for error in exc.errors())
        raise UsageError(f"{where}: {problems}") from None
    except UsageError as exc:
        raise UsageError(f"{where}: {exc}") from None


def _plain(error: ErrorDetails) -> str:
    """One of pydantic's findings in the words of a person fixing their file."""
    field = ".".join(map(str, error["loc"])) or "the statement"
    context = error.get("ctx", {})
    kind = error["type"]
    if field == "content" and kind in ("string_too_short", "missing", "value_error"):
        return "a memory needs content"
    if kind == "missing":
        return f"{field} is missing"
    if kind == "extra_forbidden":
        return f"“{field}” is not a field of a statement"
    if kind == "string_too_short":
        return f"{field} is empty"
    if kind == "string_too_long":
        return f"{field} is longer than {context.get('max_length')} characters"
    if kind == "too_long":
        return f"{field} has more than {context.get('max_length')} entries"
    if kind in ("greater_than_equal", "less_than_equal"):
        return f"{field} is a number from 0 to 1"
    if kind == "enum":
        return f"{field} is one of {context.get('expected')}"
    if kind == "timezone_aware":
        return f"{field} needs a time zone, as in 2026-05-01T09:00:00+02:00"
    if kind.startswith(("datetime", "date")):
        return f"{field} is not a date and time, as in 2026-05-01T09:00:00+02:00"
    return f"{field}: {error['msg'][:1].lower()}{error['msg'][1:]}"
