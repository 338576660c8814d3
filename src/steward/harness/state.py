"""The agent harness's checkpointed state, typed.

The loop is driven by this state, never by memory of a previous process:

* :attr:`AgentState.pending` — tool calls of the last recorded model answer not yet observed. A
  recovered activation runs these first and does not ask the model again.
* :attr:`AgentState.waiting` — what the task is suspended on; the next activation turns the
  wake-up into the observation of the waiting call.
* :attr:`AgentState.summary`/:attr:`~AgentState.summarized_through` and
  :attr:`~AgentState.progress` — what carries the task forward when older steps are compacted.

On disk the state is the JSON object the harness has always written (its keys at the top level,
so readers of a task's state such as the CLI and the memory extractor keep working) plus a
``version``. A checkpoint without ``version`` was written before the state was typed: the same
keys, read the same way (its ``wake`` key, the wake-up of the activation that wrote it, is not
state and is dropped).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from steward.domain import WaitCondition
from steward.domain.trail import READ_UNTRUSTED, SEEN, TRUSTED, Trail
from steward.errors import RetryLater
from steward.models.base import ModelResponse, ToolCall

VERSION = 2
"""The layout :meth:`AgentState.to_json` writes (1: the untyped layout, no ``version`` key)."""

WaitingKind = Literal[
    "approval", "children", "until", "event", "input", "handoff", "budget", "reply"
]


@dataclass(kw_only=True, frozen=True)
class Waiting:
    """What a suspended task waits for; its call (if any) is the first pending one."""

    kind: WaitingKind
    """An ``approval``, its ``children``, a time (``until``), an ``event``, the person's
    ``input`` (a question), a ``handoff`` done by the person, a ``budget`` stop, or a chat
    ``reply``."""
    condition: WaitCondition
    """What the runtime sleeps on."""
    call_id: str | None = None
    """The waiting tool call (None for a budget stop or a chat reply)."""
    approval_id: str | None = None
    """For ``approval``: the approval asked for."""
    children: tuple[str, ...] = ()
    """For ``children``: the subtasks spawned."""
    reason: str | None = None
    """For ``budget``: which budget was reached."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind}
        if self.call_id is not None:
            data["call_id"] = self.call_id
        if self.approval_id is not None:
            data["approval_id"] = self.approval_id
        if self.children:
            data["children"] = list(self.children)
        if self.reason is not None:
            data["reason"] = self.reason
        data["condition"] = self.condition.to_json()
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Waiting:
        return cls(
            kind=data["kind"],
            condition=WaitCondition.from_json(data["condition"]),
            call_id=data.get("call_id"),
            approval_id=data.get("approval_id"),
            children=tuple(data.get("children") or ()),
            reason=data.get("reason"),
        )


@dataclass(kw_only=True, frozen=True)
class EventMark:
    """The last event delivered to the task: the next event wait looks from there, so an event
    that arrived while the task was busy is not lost, and the delivered ones do not match
    again."""

    at: float
    """When it was received (epoch seconds)."""
    ids: tuple[str, ...]
    """The ids of the events delivered that were received at that same time."""

    def after(self, event_id: str, received_at: float) -> EventMark:
        """The mark once ``event_id`` (received at ``received_at``) is delivered too."""
        ids = self.ids if self.at == received_at else ()
        return EventMark(at=received_at, ids=(*ids, event_id))

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at, "ids": list(self.ids)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EventMark:
        return cls(at=float(data["at"]), ids=tuple(data.get("ids") or ()))


@dataclass(kw_only=True)
class Workflow:
    """A skill's workflow the task runs without the model (see ``skilluse``)."""

    skill: str
    """The skill's name."""
    calls: int
    """How many calls the workflow has."""
    failed: bool
    """A call failed (or the workflow could not start): the model has taken over."""

    def to_json(self) -> dict[str, Any]:
        return {"skill": self.skill, "calls": self.calls, "failed": self.failed}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Workflow:
        return cls(skill=str(data["skill"]), calls=int(data["calls"]), failed=bool(data["failed"]))


@dataclass(kw_only=True)
class AgentState:
    """Everything an agent task carries from one step to the next (and one activation to the
    next); checkpointed with every step."""

    version: int = VERSION
    """The layout it was read from; written as :data:`VERSION`."""
    pending: list[ToolCall] = field(default_factory=list)
    """Calls of the last model answer not yet observed, in order."""
    waiting: Waiting | None = None
    """What the task is suspended on (None: not suspended)."""
    answer: ModelResponse | None = None
    """A words-only model answer recorded whose outcome (a finish, a reply) was not."""
    summary: str = ""
    """Summary of the steps compacted out of the prompt."""
    summarized_through: int = 0
    """The last step the summary covers."""
    progress: dict[str, Any] = field(default_factory=dict)
    """The model's own notes on its progress (``update_progress``), as JSON values."""
    trail: Trail = field(default_factory=Trail)
    """Whose text the task has read (taint) and what the person told it (trusted)."""
    event_mark: EventMark | None = None
    """The last event delivered (None: none yet)."""
    skills_loaded: list[str] = field(default_factory=list)
    """Ids of the skills the task loaded (their outcome is counted when it ends)."""
    workflow: Workflow | None = None
    """The skill workflow started (None: none)."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "version": VERSION,
            "pending": [c.to_json() for c in self.pending],
            "answer": None if self.answer is None else self.answer.to_json(),
            "summary": self.summary,
            "summarized_through": self.summarized_through,
            "progress": dict(self.progress),
            **self.trail.to_json(),
        }
        if self.waiting is not None:
            data["waiting"] = self.waiting.to_json()
        if self.event_mark is not None:
            data["event_mark"] = self.event_mark.to_json()
        if self.skills_loaded:
            data["skills_loaded"] = list(self.skills_loaded)
        if self.workflow is not None:
            data["workflow"] = self.workflow.to_json()
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AgentState:
        """Read a checkpoint of either layout (see the module's docstring)."""
        version = int(data.get("version", 1))
        if version > VERSION:
            # written by a newer Steward (a rollback, or a mixed deploy): leave the task for a
            # worker that can read it rather than fail it
            raise RetryLater(
                f"task state version {version} is newer than this harness's ({VERSION})",
                delay_seconds=60,
                attempt=False,
            )
        waiting = data.get("waiting")
        answer = data.get("answer")
        mark = data.get("event_mark")
        workflow = data.get("workflow")
        return cls(
            version=version,
            pending=[ToolCall.from_json(c) for c in data.get("pending") or ()],
            waiting=None if waiting is None else Waiting.from_json(waiting),
            answer=None if answer is None else ModelResponse.from_json(answer),
            summary=str(data.get("summary") or ""),
            summarized_through=int(data.get("summarized_through") or 0),
            progress=dict(data.get("progress") or {}),
            trail=Trail.from_json(
                {k: data[k] for k in (READ_UNTRUSTED, SEEN, TRUSTED) if k in data}
            ),
            event_mark=None if not mark else EventMark.from_json(mark),
            skills_loaded=[str(s) for s in data.get("skills_loaded") or ()],
            workflow=None if not workflow else Workflow.from_json(workflow),
        )
