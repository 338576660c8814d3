"""The vocabulary of authorization: what a proposed action is, and what may be decided about it.

The harness asks a :class:`Sentinel` about each call and obeys the verdict: run it, tell the
model it was denied, suspend the task on an approval, or hand the action back to the person.
The security plane (:mod:`steward.sentinel`) implements :class:`Sentinel` with rules, grants and
hard limits; these types are shared by the harness, the sentinel, memory and connectors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from steward.domain.agent_input import AgentTaskInput
from steward.domain.audience import PRIVATE, Audience
from steward.domain.roles import DataClass, Role


class EffectClass(StrEnum):
    """What a tool touches, from harmless to consequential."""

    READ = "read"
    """Reads only; running it twice changes nothing."""
    LOCAL = "local"
    """Writes the person's own local state (workspace, notes, goal state)."""
    EXTERNAL = "external"
    """Acts on the world (sends, buys, posts, deletes): journalled as an effect."""
    UNKNOWN = "unknown"
    """Not declared (an MCP tool nobody classified): treated as external, and asked about."""

    @property
    def journalled(self) -> bool:
        """Runs through the effect journal (at most once)."""
        return self in (EffectClass.EXTERNAL, EffectClass.UNKNOWN)


class Verdict(StrEnum):
    ALLOW = "allow"
    """Run it."""
    DENY = "deny"
    """Do not run it; the model is told why."""
    ASK = "ask"
    """Suspend the task until the person approves or denies these exact arguments."""
    HANDOFF = "handoff"
    """The person must do this themselves; the task waits for them to say it is done."""


@dataclass(kw_only=True, frozen=True)
class ActionRequest:
    """A tool call the model proposed, with everything a policy may decide on."""

    person_id: str
    """Whose authority the task runs under."""
    task_id: str
    """The proposing task."""
    goal_id: str | None
    """Its goal (whose authority bounds it)."""
    tool: str
    """Tool name."""
    args: dict[str, Any]
    """Validated arguments."""
    effect: EffectClass
    """What the tool touches."""
    scopes: tuple[str, ...]
    """Authority the tool needs."""
    source: str
    """Where the tool comes from (``python``, ``control``, ``mcp:<server>``)."""
    wake_reason: str
    """Why the activation started (a trigger or event never adds authority)."""
    task_input: AgentTaskInput = field(default_factory=AgentTaskInput)
    """The task's input (its mode, session), for policies that look at it."""
    roles: dict[str, Role] | None = None
    """The tool's argument roles (None: it declares none)."""
    untrusted_args: dict[str, str] = field(default_factory=dict)
    """Controlling arguments whose values first came from untrusted content, with where they
    came from. Unless the sentinel vouches for them (:attr:`Decision.vouched`), the harness asks
    the person before such an external action runs."""
    tainted: dict[str, str] = field(default_factory=dict)
    """The same arguments' values, as given (``{"to": "mallory@evil.example"}``): a grant
    that names the exact value vouches for it."""
    data_classes: tuple[DataClass, ...] = ()
    """Kinds of the person's sensitive data the outgoing arguments carry; each needs a grant
    naming it."""
    audience: Audience = PRIVATE
    """Who hears the conversation the task belongs to (inherited by subtasks)."""
    connector: str | None = None
    """The connector kind the tool acts through (``mail``): only the person's connection of
    that kind named by the ACCOUNT argument (the only one, when none is named) can allow it,
    within that connection's scopes and bounds."""


@dataclass(kw_only=True, frozen=True)
class Decision:
    """A sentinel's answer."""

    verdict: Verdict
    """What to do."""
    reason: str
    """Why, in words for the model and the person."""
    rule: str | None = None
    """The rule or grant that decided, for the audit log."""
    vouched: bool = False
    """The sentinel checked the request's tainted arguments and found a grant naming each
    value: the harness need not ask about them."""


class Sentinel(Protocol):
    async def check(self, request: ActionRequest) -> Decision:
        """Decide one proposed call. Must not raise for a well-formed request."""
        ...


def provenance_reason(request: ActionRequest) -> str:
    """Why an action with tainted arguments or sensitive data is put to the person."""
    parts = []
    if request.untrusted_args:
        said = "; ".join(f"{k}: {v}" for k, v in sorted(request.untrusted_args.items()))
        parts.append(f"untrusted input: {said}")
    if request.data_classes:
        kinds = ", ".join(str(c) for c in request.data_classes)
        parts.append(f"your sensitive data would leave ({kinds}) and no grant allows it")
    return "; ".join(parts)
