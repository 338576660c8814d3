"""Why a task became runnable again, as a tagged union.

The store keeps a wake-up as a JSON object on the task row (``{"reason": "input", "answer":
...}``) and builds one of these when a worker claims the task; the harness reads it. A wake-up
for a reason that brings nothing new (a retry, a requeue, recovery after a lost lease, a resume
after a pause, a trigger firing) is :class:`Again`, and keeps what woke the activation before
it (an answer, an event): that activation may have ended before it could act on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal


@dataclass(kw_only=True, frozen=True)
class NotWoken:
    """The task was never woken: it runs because it was created (or requeued unchanged)."""

    @property
    def reason(self) -> str:
        return ""

    def to_json(self) -> dict[str, Any]:
        return {}


@dataclass(kw_only=True, frozen=True)
class TimeUp:
    """A time came: the one a task waited ``until`` (``timer``), or a wait's timeout."""

    reason: Literal["timer", "timeout"]
    """``timer`` or ``timeout``."""

    def to_json(self) -> dict[str, Any]:
        return {"reason": self.reason}


@dataclass(kw_only=True, frozen=True)
class EventArrived:
    """An event the task waited for."""

    event: dict[str, Any]
    """What the task is told of it: ``id``, ``type``, ``payload``, ``received_at``."""

    @property
    def reason(self) -> str:
        return "event"

    def to_json(self) -> dict[str, Any]:
        return {"reason": "event", "event": self.event}


@dataclass(kw_only=True, frozen=True)
class Answered:
    """The person answered what the task asked (or replied in a chat)."""

    answer: str
    """Their answer."""

    @property
    def reason(self) -> str:
        return "input"

    def to_json(self) -> dict[str, Any]:
        return {"reason": "input", "answer": self.answer}


@dataclass(kw_only=True, frozen=True)
class ApprovalDecided:
    """The approval the task waited on was decided (or expired)."""

    ref: str
    """The approval's id."""

    @property
    def reason(self) -> str:
        return "approval"

    def to_json(self) -> dict[str, Any]:
        return {"reason": "approval", "ref": self.ref}


@dataclass(kw_only=True, frozen=True)
class ChildrenEnded:
    """Every subtask of the task has ended."""

    @property
    def reason(self) -> str:
        return "children"

    def to_json(self) -> dict[str, Any]:
        return {"reason": "children"}


@dataclass(kw_only=True, frozen=True)
class EffectSettled:
    """The person settled the effect in doubt the task waited on."""

    effect_id: str
    """The effect."""

    @property
    def reason(self) -> str:
        return "effect"

    def to_json(self) -> dict[str, Any]:
        return {"reason": "effect", "effect_id": self.effect_id}


Carried = EventArrived | Answered | ApprovalDecided | EffectSettled
"""What a wake-up brings that the next activation must still see if this one ends early."""


@dataclass(kw_only=True, frozen=True)
class Again:
    """Runnable again for a reason that brings nothing new: ``retry``, ``recovered``,
    ``resumed``, a requeue's reason, or a trigger's firing (``event``, ``timer``)."""

    reason: str
    """As the store recorded it."""
    carried: Carried | None = None
    """What woke the activation before, kept across retries and requeues."""
    cut_offs: int = 0
    """Activations in a row cut off by the database (see ``Requeue.cut_offs``)."""

    def to_json(self) -> dict[str, Any]:
        data = {} if self.carried is None else self.carried.to_json()
        data["reason"] = self.reason
        if self.cut_offs:
            data["cut_offs"] = self.cut_offs
        return data


WakeReason = (
    NotWoken
    | TimeUp
    | EventArrived
    | Answered
    | ApprovalDecided
    | ChildrenEnded
    | EffectSettled
    | Again
)


def answer_of(wake: WakeReason) -> str | None:
    """The person's answer the wake-up brings (directly or carried), if any."""
    found = wake.carried if isinstance(wake, Again) else wake
    return found.answer if isinstance(found, Answered) else None


def event_of(wake: WakeReason) -> dict[str, Any] | None:
    """The event the wake-up brings (directly or carried), if any."""
    found = wake.carried if isinstance(wake, Again) else wake
    return found.event if isinstance(found, EventArrived) else None


def wake_from_json(data: Mapping[str, Any] | None) -> WakeReason:
    """The wake-up the store recorded (its JSON object; None or empty: never woken)."""
    if not data:
        return NotWoken()
    reason = str(data.get("reason", ""))
    carried = _carried(data)
    found = data.get("cut_offs", 0)
    # the store writes these; a damaged row must not stop every claim in its batch
    cut_offs = found if isinstance(found, int) else 0
    if reason in ("timer", "timeout") and carried is None and not cut_offs:
        return TimeUp(reason="timer" if reason == "timer" else "timeout")
    if reason == "children" and carried is None and not cut_offs:
        return ChildrenEnded()
    if carried is not None and carried.reason == reason and not cut_offs:
        return carried
    return Again(reason=reason, carried=carried, cut_offs=cut_offs)


def _carried(data: Mapping[str, Any]) -> Carried | None:
    if "answer" in data:
        return Answered(answer=str(data["answer"]))
    if isinstance(data.get("event"), dict):
        return EventArrived(event=dict(data["event"]))
    if "effect_id" in data:
        return EffectSettled(effect_id=str(data["effect_id"]))
    if "ref" in data:
        return ApprovalDecided(ref=str(data["ref"]))
    return None
