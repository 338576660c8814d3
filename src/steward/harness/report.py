"""The ``report`` control tool: the agent tells the person something — what happened, why it
matters, what they should do — with an importance. The goal's report policy, the person's quiet
hours and digest decide when it reaches them (:func:`steward.domain.report.place`); it is
stored through the task's fenced handle with an id derived from the step, so a replayed step
reports once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field

from steward.domain.actions import EffectClass
from steward.domain.channel import Importance
from steward.domain.roles import Role
from steward.harness.tools import ToolArgumentError, ToolContext, tool

MAX_WHAT = 300
"""Characters of "what happened": a line on a lock screen, not a dump."""
MAX_TEXT = 1000
"""Characters of "why it matters" and "what to do"."""


@dataclass(kw_only=True, frozen=True)
class ReportToPerson:
    what: str
    """What happened."""
    why: str
    """Why it matters."""
    todo: str | None
    """What the person should do, if anything."""
    importance: Importance
    """info, actionable or urgent."""


@tool(name="report", effect=EffectClass.LOCAL)
async def report_tool(
    ctx: ToolContext,
    what: Annotated[
        str,
        Role.FREE_TEXT,
        Field(description="What happened, one plain sentence the person understands alone."),
    ],
    why: Annotated[
        str, Role.FREE_TEXT, Field(description="Why it matters to the person, briefly.")
    ] = "",
    todo: Annotated[
        str,
        Role.FREE_TEXT,
        Field(description="What the person should do, if anything; empty when nothing."),
    ] = "",
    importance: Annotated[
        Literal["info", "actionable", "urgent"],
        Field(
            description="info: good to know (may wait for the daily digest); actionable: the "
            "person should do something; urgent: they must know now (in quiet hours only for a "
            "goal whose policy is 'all'; three a goal a day at most)."
        ),
    ] = "info",
) -> ReportToPerson:
    """Tell the person something that matters, following the goal's report policy. Write for a
    phone screen: plain words, no raw data, no ids, no JSON — summarise and say where the
    details are. The policy, quiet hours and digest decide when they see it."""
    what, why, todo = what.strip(), why.strip(), todo.strip()
    if not what:
        raise ToolArgumentError("'what' must say what happened")
    if len(what) > MAX_WHAT:
        raise ToolArgumentError(
            f"'what' is {len(what)} characters; keep it to one sentence under {MAX_WHAT}"
        )
    for name, text in (("why", why), ("todo", todo)):
        if len(text) > MAX_TEXT:
            raise ToolArgumentError(f"'{name}' is too long ({len(text)} > {MAX_TEXT}); summarise")
    if importance == "actionable" and not todo:
        raise ToolArgumentError("an actionable report must say what the person should do (todo)")
    return ReportToPerson(what=what, why=why, todo=todo or None, importance=importance)
