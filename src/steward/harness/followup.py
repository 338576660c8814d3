"""The ``follow_up`` control tool: the agent sets a time to look at something again ("the quote,
on Friday 10:00"). It is stored as a follow-up of the task's goal; the goal's heartbeat sees it
once it is due and wakes the model for it then (and only then)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from pydantic import Field

from steward.domain.actions import EffectClass
from steward.domain.roles import Role
from steward.harness.tools import ToolArgumentError, ToolContext, tool


@dataclass(kw_only=True, frozen=True)
class FollowUpLater:
    at: datetime
    """When to look again (aware)."""
    note: str
    """What to look at."""


@tool(name="follow_up", effect=EffectClass.LOCAL)
async def follow_up_tool(
    ctx: ToolContext,
    at: Annotated[str, Role.TIME, Field(description="ISO-8601 time with offset.")],
    note: Annotated[
        str, Role.FREE_TEXT, Field(description="What to look at then, self-contained.")
    ],
) -> FollowUpLater:
    """Set a follow-up for this task's goal: at that time the goal's heartbeat wakes you with
    the note. Use it instead of waiting when nothing needs doing until then."""
    try:
        when = datetime.fromisoformat(at)
    except ValueError as exc:
        raise ToolArgumentError(f"'at' is not an ISO-8601 time: {at!r}") from exc
    if when.tzinfo is None:
        raise ToolArgumentError("'at' needs a UTC offset, e.g. 2026-01-09T10:00:00+01:00")
    if when <= ctx.now:
        raise ToolArgumentError(f"{at} has already passed; give a time in the future")
    if not note.strip():
        raise ToolArgumentError("note must say what to look at")
    return FollowUpLater(at=when, note=note.strip())
