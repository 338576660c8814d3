"""Approvals, notifications and artifacts: what a task leaves for the person to see or decide."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from steward.domain.roles import Role, decisive_values


class ApprovalStatus(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    DENIED = "denied"
    EXPIRED = "expired"


def args_hash(tool: str, args: dict[str, Any]) -> str:
    """A stable hash of an action: an approval is valid only for exactly these arguments."""
    canonical = json.dumps({"tool": tool, "args": args}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(kw_only=True, frozen=True)
class ApprovalPreview:
    """What the person sees of an action besides its one-line summary, gathered by its tool
    before asking (a browser form's submission: the page as it looks, its host and the values
    that would be sent). Shown beside the summary; the arguments still bind the decision."""

    picture: str | None = None
    """Workspace-relative path of a screenshot of where the action happens (password fields
    masked), or None."""
    picture_sha256: str | None = None
    """The picture's sha256 when it was taken: shown only while the file still matches (the
    workspace's shell can write files)."""
    facts: tuple[tuple[str, str], ...] = ()
    """Labelled lines, in order: ``("Site", "shop.example")``, ``("Card", "•••• 4242")``."""


@dataclass(kw_only=True, frozen=True)
class Approval:
    """A proposed action waiting for the person's yes or no, bound to its exact arguments."""

    id: str
    """Stable id, derived from the task and step that asked, so a replayed step finds it."""
    person_id: str
    """Who decides."""
    task_id: str
    """The task that waits for the decision."""
    goal_id: str | None
    """Its goal."""
    step_seq: int
    """The step that proposed the action."""
    tool: str
    """The tool to run."""
    args: dict[str, Any]
    """Its arguments, as they will run."""
    args_hash: str
    """:func:`args_hash` of tool and arguments; a decision never applies to other arguments."""
    reason: str
    """Why the sentinel asked, for the person."""
    scopes: tuple[str, ...] = ()
    """Authority the tool needs: what a grant made from this decision must give."""
    roles: dict[str, Role] | None = None
    """The tool's argument roles when it was asked (None: it declares none). A lasting grant
    made from this decision reads the arguments by them, as the policy will."""
    status: ApprovalStatus
    """Where the decision stands."""
    decided_by: str | None = None
    """Who decided (a person or token name), never the agent."""
    note: str | None = None
    """The decider's comment, passed to the agent."""
    created_at: datetime
    """When it was asked."""
    expires_at: datetime | None = None
    """Undecided by then: expired, and the agent is told so."""
    decided_at: datetime | None = None
    """When it was decided or expired."""
    summary: str = ""
    """The action in one plain sentence, as its tool describes it ("Send an email to dana@…
    — 'Re: Thursday?' — …"); empty for approvals asked before tools described themselves."""
    preview: ApprovalPreview | None = None
    """What its tool showed of the action beyond the sentence (a screenshot, the values a form
    would send), or None."""

    @property
    def headline(self) -> str:
        """What the person is asked to judge, in one line."""
        return self.summary or f"{self.tool} with the arguments shown"

    @property
    def targets(self) -> list[tuple[str, list[str]]]:
        """Where the action goes and what it changes (its controlling arguments), shown on
        their own beside the summary."""
        return decisive_values(self.args, self.roles)


@dataclass(kw_only=True, frozen=True)
class Notification:
    """Something the person should see: a question, an approval, a budget stop, a report."""

    id: str
    """Stable id; derived from its cause where a replay could repeat it."""
    person_id: str
    """Recipient."""
    kind: str
    """``approval``, ``question``, ``budget``, ``handoff``, ``report``..."""
    title: str
    """One line."""
    body: str
    """Details."""
    task_id: str | None = None
    """The task concerned."""
    goal_id: str | None = None
    """The goal concerned."""
    ref: str | None = None
    """The approval (or other object) it is about."""
    created_at: datetime
    """When it was raised."""
    read_at: datetime | None = None
    """When the person marked it read."""


@dataclass(kw_only=True, frozen=True)
class Artifact:
    """A file in the person's workspace that a task produced (a large tool output, a report)."""

    id: str
    """Stable id, derived from the task and step that wrote it."""
    person_id: str
    """Owner."""
    task_id: str | None
    """The task that wrote it."""
    name: str
    """Human label (the tool that produced it, ...)."""
    path: str
    """Path relative to the person's workspace."""
    size: int
    """Bytes."""
    sha256: str
    """Content hash."""
    media_type: str
    """MIME type."""
    created_at: datetime
    """When it was written."""
