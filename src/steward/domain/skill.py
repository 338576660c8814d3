"""Skills: how to do a kind of thing, learned from tasks and kept with every version.

A skill is personal context, like a memory: it belongs to one person, says where it came from
and who may hear it, and every change is a version that can be restored.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from steward.domain.audience import PRIVATE, Audience
from steward.errors import UsageError

MAX_DESCRIPTION = 200
"""Characters in a description: one line of the skill index."""
MAX_PROCEDURE = 8000
"""Characters in a procedure: a recipe, not a manual."""
MAX_ITEMS = 20
"""Inputs, checks or workflow steps in one skill."""
MAX_ITEM = 500
"""Characters in one input, check, or when-to-use text."""

_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
_TOOL = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def skill_name(text: str) -> str:
    """The name a skill is known by: lower case, words joined by ``-``
    (``Fetch invoice total`` is ``fetch-invoice-total``)."""
    name = "-".join(text.strip().lower().split())
    if not _NAME.match(name) or name.startswith("skl_"):
        raise UsageError(
            f"bad skill name {text!r}: up to 64 letters, digits and - _ . (a short phrase "
            "like fetch-invoice-total)"
        )
    return name


class SkillStatus(StrEnum):
    ACTIVE = "active"
    """In the index: the agent is shown it when relevant and may load it."""
    PROPOSED = "proposed"
    """New, waiting for the person's approval; not shown to the agent."""
    ARCHIVED = "archived"
    """Set aside (by the person, or a proposal they rejected); kept with its history."""


@dataclass(kw_only=True, frozen=True)
class WorkflowStep:
    """One tool call of a skill's workflow."""

    tool: str
    """The tool to call."""
    arguments: dict[str, Any] = field(default_factory=dict)
    """Its arguments; ``{input}`` placeholders name the skill's inputs."""

    def __post_init__(self) -> None:
        if not _TOOL.match(self.tool):
            raise UsageError(f"bad tool name {self.tool!r} in a workflow step")

    def to_dict(self) -> dict[str, Any]:
        return {"tool": self.tool, "arguments": self.arguments}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WorkflowStep:
        arguments = data.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise UsageError(
                f"the arguments of workflow step {data.get('tool')!r} are not an object"
            )
        return cls(tool=str(data.get("tool", "")), arguments=dict(arguments))


@dataclass(kw_only=True, frozen=True)
class SkillContent:
    """What one version of a skill says."""

    description: str
    """One line: what it does (the skill index shows only this and the name)."""
    procedure: str
    """How to do it, in Markdown."""
    when_to_use: str = ""
    """The situations it is for."""
    when_not: str = ""
    """Situations it is not for, though they may look alike."""
    inputs: tuple[str, ...] = ()
    """What it needs to be told (``month: which month's invoice``)."""
    workflow: tuple[WorkflowStep, ...] = ()
    """Tool calls that do it without deliberation, when it is that mechanical."""
    checks: tuple[str, ...] = ()
    """How to verify it worked."""
    sources: tuple[str, ...] = ()
    """Where it was learned or changed: ``task:<id>``, or ``person``."""
    audience: Audience = PRIVATE
    """Who may hear it: the audience of the conversations it was learned in."""

    def __post_init__(self) -> None:
        if not self.description or "\n" in self.description:
            raise UsageError("a skill needs a one-line description")
        if len(self.description) > MAX_DESCRIPTION:
            raise UsageError(f"the description is over {MAX_DESCRIPTION} characters")
        if not self.procedure.strip():
            raise UsageError("a skill needs a procedure")
        if len(self.procedure) > MAX_PROCEDURE:
            raise UsageError(f"the procedure is over {MAX_PROCEDURE} characters")
        for what, items in (
            ("inputs", self.inputs),
            ("checks", self.checks),
            ("workflow steps", self.workflow),
        ):
            if len(items) > MAX_ITEMS:
                raise UsageError(f"a skill has at most {MAX_ITEMS} {what}")
        for text in (self.when_to_use, self.when_not, *self.inputs, *self.checks):
            if len(text) > MAX_ITEM:
                raise UsageError(f"{text[:40]!r}… is over {MAX_ITEM} characters")

    def says_same(self, other: SkillContent) -> bool:
        """The same instructions (where they came from aside)."""
        return _instructions(self) == _instructions(other)

    def render(self) -> str:
        """As Markdown, field by field: what the agent loads and what diffs compare."""
        lines = [self.description]
        if self.when_to_use:
            lines.append(f"When to use: {self.when_to_use}")
        if self.when_not:
            lines.append(f"When not to use: {self.when_not}")
        if self.inputs:
            lines += ["Inputs:", *(f"- {i}" for i in self.inputs)]
        lines += ["", "## Procedure", *self.procedure.strip().splitlines()]
        if self.workflow:
            lines += ["", "## Workflow (these tool calls do it)"]
            lines += [
                f"{n}. {s.tool} {json.dumps(s.arguments, sort_keys=True)}"
                for n, s in enumerate(self.workflow, 1)
            ]
        if self.checks:
            lines += ["", "## Checks", *(f"- {c}" for c in self.checks)]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "description": self.description,
            "procedure": self.procedure,
            "when_to_use": self.when_to_use,
            "when_not": self.when_not,
            "inputs": list(self.inputs),
            "workflow": [s.to_dict() for s in self.workflow],
            "checks": list(self.checks),
            "sources": list(self.sources),
            "audience": str(self.audience),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SkillContent:
        return cls(
            description=str(data["description"]),
            procedure=str(data["procedure"]),
            when_to_use=str(data.get("when_to_use", "")),
            when_not=str(data.get("when_not", "")),
            inputs=tuple(str(i) for i in data.get("inputs", ())),
            workflow=tuple(WorkflowStep.from_dict(s) for s in data.get("workflow", ())),
            checks=tuple(str(c) for c in data.get("checks", ())),
            sources=tuple(str(s) for s in data.get("sources", ())),
            audience=Audience.parse(str(data.get("audience", "private"))),
        )


@dataclass(kw_only=True, frozen=True)
class PendingChange:
    """A change to a skill that waits for the person's decision."""

    content: SkillContent
    """What the skill would say."""
    actor: str
    """Who proposed it (``agent:<task>``)."""
    reason: str
    """Why it waits instead of applying."""
    at: datetime
    """When it was proposed."""


@dataclass(kw_only=True, frozen=True)
class Skill:
    """How to do a kind of thing, for one person."""

    id: str
    """Stable id, ``skl_…``; changes keep it and add a version."""
    person_id: str
    """Whose skill."""
    name: str
    """Unique per person (see :func:`skill_name`); what the agent loads it by."""
    status: SkillStatus
    """Active, proposed or archived."""
    version: int = 1
    """Increases with every change; every version is kept."""
    content: SkillContent
    """What it says now."""
    pending: PendingChange | None = None
    """A proposed change waiting for the person (the skill says :attr:`content` until then)."""
    uses: int = 0
    """How often a task loaded it."""
    successes: int = 0
    """Tasks that loaded it and finished."""
    failures: int = 0
    """Tasks that loaded it and failed."""
    created_at: datetime
    """First written."""
    updated_at: datetime
    """Last changed."""

    @property
    def description(self) -> str:
        return self.content.description

    @property
    def waiting(self) -> bool:
        """Something about it waits for the person: it is new, or a change is proposed."""
        return self.status is SkillStatus.PROPOSED or self.pending is not None

    @property
    def success_rate(self) -> float:
        """Successes among finished uses, pulled towards one half while there are few."""
        return (self.successes + 1) / (self.successes + self.failures + 2)

    def render(self) -> str:
        """In full, for the agent that loads it and the person who reads it."""
        record = f"used {self.uses} times: {self.successes} succeeded, {self.failures} failed"
        sources = ", ".join(self.content.sources) or "unknown"
        return (
            f"# Skill {self.name} (version {self.version}, {self.status})\n"
            f"{self.content.render()}\n\nLearned from: {sources}; {record}."
        )


@dataclass(kw_only=True, frozen=True)
class SkillVersion:
    """One version of a skill, as it was after a change."""

    skill_id: str
    """Which skill."""
    version: int
    """Its number."""
    skill: Skill
    """The skill as it was."""
    actor: str
    """Who changed it (``person``, ``agent:<task>``, ``token:<id>``)."""
    reason: str
    """Why (``created``, ``updated``, ``restored v2``, ``archived``...)."""
    at: datetime
    """When."""


def _instructions(content: SkillContent) -> dict[str, Any]:
    data = content.to_dict()
    data.pop("sources")
    return data
