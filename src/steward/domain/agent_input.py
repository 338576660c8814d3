"""The input of an agent task, read once where it enters (the harness, the sentinel) from the
JSON object the task was created with.

The parse is lenient where today's inputs may be loose (an unreadable audience counts as
public, the audience shown the least); settings the harness must refuse (a malformed budget, a
skill's inputs that are not an object) stay raw here and are checked where they are used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from steward.domain.audience import PRIVATE, Audience
from steward.domain.trail import READ_UNTRUSTED, SEEN, TRUSTED, Trail
from steward.errors import UsageError

Mode = Literal["chat", "research"]
"""``chat``: each words-only answer is a reply and the task waits for the person's next;
``research``: read-only work (the sentinel denies writes)."""


@dataclass(kw_only=True, frozen=True)
class Inherited:
    """What a subtask takes over from its parent: it still cannot be steered by what the parent
    read, and it trusts what the parent trusted."""

    trail: Trail
    """The parent's untrusted sources (its trusted answers are in :attr:`trusted`)."""
    trusted: str
    """The text the parent trusted (its person's words), joined."""

    def to_json(self) -> dict[str, Any]:
        return {
            SEEN: [s.to_json() for s in self.trail.seen],
            READ_UNTRUSTED: self.trail.read_untrusted,
            TRUSTED: self.trusted,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Inherited:
        seen = Trail.from_json({k: v for k, v in data.items() if k != TRUSTED})
        return cls(trail=seen, trusted=str(data.get(TRUSTED, "")))


@dataclass(kw_only=True, frozen=True)
class AgentTaskInput:
    """An agent task's input, typed."""

    instructions: str | None = None
    """What the person asked for."""
    acceptance: dict[str, Any] = field(default_factory=dict)
    """When the result is acceptable: ``criterion`` in words and ``required_keys`` of its
    data (as given, shown to the model verbatim)."""
    tools: tuple[str, ...] | None = None
    """The tools the task may use (None: all)."""
    audience: Audience = PRIVATE
    """Who the task speaks to: it discloses nothing kept from them."""
    mode: Mode | None = None
    """``chat`` or ``research`` (None: an ordinary task)."""
    session_id: str | None = None
    """The conversation the task belongs to (grants for a session apply)."""
    provenance: Inherited | None = None
    """For a subtask: what it inherits from its parent."""
    budget: Any = None
    """Caps on each activation as given (the harness checks them); None: the defaults."""
    skill: str | None = None
    """A skill whose workflow the task runs first."""
    inputs: Any = None
    """The values of that skill's ``{input}`` placeholders, as given."""
    event: dict[str, Any] | None = None
    """The event a trigger started the task for (someone else's text)."""
    depth: int | None = None
    """For a subtask: how deep it is nested (1: a task's subtask); None: not recorded (not a
    subtask, or one created before the depth was stored)."""

    @property
    def required_keys(self) -> list[str]:
        """The keys a finish's data must have."""
        return [str(k) for k in self.acceptance.get("required_keys", [])]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AgentTaskInput:
        tools = data.get("tools")
        mode = data.get("mode")
        session = data.get("session_id")
        inherited = data.get("provenance")
        event = data.get("event")
        instructions = data.get("instructions")
        skill = data.get("skill")
        depth = data.get("depth")
        return cls(
            instructions=None if instructions is None else str(instructions),
            acceptance=_object(data.get("acceptance"), "acceptance"),
            tools=None if tools is None else tuple(str(t) for t in tools),
            audience=Audience.of_task(dict(data)),
            mode=mode if mode in ("chat", "research") else None,
            session_id=session if isinstance(session, str) and session else None,
            provenance=Inherited.from_json(inherited) if isinstance(inherited, dict) else None,
            budget=data.get("budget"),
            skill=str(skill) if skill else None,
            inputs=data.get("inputs"),
            event=event if isinstance(event, dict) else None,
            depth=int(depth) if isinstance(depth, int) else None,
        )


def _object(value: Any, name: str) -> dict[str, Any]:
    """``value`` as a JSON object (absent or null: empty); anything else is a bad task input."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise UsageError(f"task input {name} must be an object, not {type(value).__name__}")
    return dict(value)
