"""What happened: activations, the append-only step journal and the effect journal."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

from steward.domain.task import TaskStatus
from steward.errors import InvalidTransition


@dataclass(kw_only=True, frozen=True)
class Activation:
    """One execution episode of a task: from a claim to the lease being released."""

    id: str
    """Stable id, ``act_…``."""
    task_id: str
    """The task executed."""
    goal_id: str | None
    """Its goal, denormalised for per-goal accounting."""
    reason: str
    """Why it started: ``created``, ``retry``, ``timer``, ``event``, ``resumed``, ``recovered``…"""
    worker: str
    """The worker that ran it."""
    epoch: int
    """Fencing epoch of the claim."""
    started_at: datetime
    """Claim time."""
    ended_at: datetime | None = None
    """When it ended, or None while running (or if its worker died)."""
    outcome: str | None = None
    """How it ended: the outcome kind (``succeed``, ``fail``, ``retry``, ``wait``, ``requeue``),
    ``cancelled``/``paused`` when stopped, ``dead_lettered`` when retries ran out, or ``lost``
    when its worker lost the lease."""
    steps: int = 0
    """Steps it committed."""
    usage: dict[str, Any] = field(default_factory=dict)
    """Model tokens, cost and the like, summed by the harness."""


@dataclass(kw_only=True, frozen=True)
class Step:
    """One committed step: the unit of checkpointing. Append-only, ordered per task."""

    task_id: str
    """Owning task."""
    seq: int
    """1-based position in the task's journal."""
    activation_id: str
    """The activation that committed it."""
    kind: str
    """What sort of step (``step``, ``model``, ``tool``, ``effect``…)."""
    output: Any
    """What the step produced (recorded, so replay never recomputes a decision)."""
    created_at: datetime
    """Commit time."""


class EffectStatus(StrEnum):
    PLANNED = "planned"
    SENT = "sent"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    IN_DOUBT = "in_doubt"
    ABANDONED = "abandoned"
    """Never sent, and never will be: its task ended first (or, in doubt after its task ended,
    the person said it did not happen)."""

    @property
    def settled(self) -> bool:
        return self in (EffectStatus.SUCCEEDED, EffectStatus.FAILED, EffectStatus.ABANDONED)


E = EffectStatus
EFFECT_TRANSITIONS: dict[EffectStatus, frozenset[EffectStatus]] = {
    # sent; or its task ended before sending it
    E.PLANNED: frozenset({E.SENT, E.ABANDONED}),
    # a result arrived; or a crash (or the end of its task) left the outcome unknown; or its
    # sender passed its send deadline before starting the request, so it knows it did not send
    E.SENT: frozenset({E.SUCCEEDED, E.FAILED, E.IN_DOUBT, E.PLANNED}),
    # reconciled, retried with the same key, or decided by the person (not applied: it may be
    # sent again, so back to planned; abandoned if its task has ended)
    E.IN_DOUBT: frozenset({E.SUCCEEDED, E.FAILED, E.SENT, E.PLANNED, E.ABANDONED}),
}
del E

APPLIED_RESULT_UNKNOWN: Final[dict[str, Any]] = {
    "applied": True,
    "result": "unknown",
    "note": "this effect happened (confirmed afterwards), but what the service answered was "
    "not recorded",
}
"""The result an effect gets when it is confirmed applied without the service's answer (a
person resolving it without one, a reconcile hook that cannot say): the step reads this, never
a bare null that would look like an answer."""


def check_effect_transition(current: EffectStatus, new: EffectStatus) -> None:
    if new not in EFFECT_TRANSITIONS.get(current, frozenset()):
        raise InvalidTransition(f"effect cannot go from {current} to {new}")


@dataclass(kw_only=True, frozen=True)
class Effect:
    """A side effect on the world, journalled: intent before, result after."""

    id: str
    """Stable id, ``eff_…``."""
    task_id: str
    """The task that wants it."""
    step_seq: int
    """The step (1-based, the one being computed) that asked for it."""
    key: str
    """Idempotency key derived from (task, step, index); sent to tools that honour keys."""
    tool: str
    """The tool that performs it."""
    args: dict[str, Any]
    """Its arguments."""
    status: EffectStatus
    """Where it stands."""
    idempotent: bool
    """The tool honours idempotency keys, so a retry with the same key is safe."""
    result: Any = None
    """The tool's answer once known."""
    error: str | None = None
    """Why it failed or is in doubt."""
    attempts: int = 0
    """Times it was sent."""
    send_deadline: datetime | None = None
    """Set each time it is marked sent: the lease's expiry then, by the clock leases are judged
    by (the database's). The sender gives up on starting the request at half of that time
    (measured on its own monotonic clock); the rest is margin for a request started just
    before to reach the service. Until it has passed, nobody may decide the effect did not
    happen (or send it again without its idempotency key): its sender may still be sending
    it."""
    created_at: datetime
    """When the intent was recorded."""
    updated_at: datetime
    """Last change."""


def resolution_summary(effect: Effect, task_status: TaskStatus) -> str:
    """What a person's decision on an in-doubt effect changed, in plain words (``effect`` as
    resolved, ``task_status`` its task's status afterwards)."""
    status = task_status.value.replace("_", "-")
    if effect.status is EffectStatus.SUCCEEDED:
        said = f"Recorded: {effect.tool} happened"
        if effect.result == APPLIED_RESULT_UNKNOWN:
            said += " (its result is recorded as unknown)"
        if task_status.terminal:
            return f"{said}; the task stays {status}."
        return f"{said}; the task goes on."
    said = f"Recorded: {effect.tool} did not happen"
    if task_status.terminal:
        return f"{said}; the task stays {status}, so it is not sent."
    return f"{said}; the task sends it again when it resumes."
