"""How an activation ends, and what a worker holds while it runs one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from steward.domain.goal import Overrun
from steward.domain.journal import Activation
from steward.domain.task import Task, WaitCondition
from steward.domain.wake import NotWoken, WakeReason


@dataclass(kw_only=True, frozen=True)
class Succeed:
    kind: Literal["succeed"] = "succeed"
    result: Any = None
    """The task's result."""


@dataclass(kw_only=True, frozen=True)
class Fail:
    """Fail for good: no retry (a logic error, a refusal, an exhausted budget)."""

    kind: Literal["fail"] = "fail"
    reason: str
    """Why, for the person."""
    budget: Overrun | None = None
    """The goal's budget cap that refused the work, when one did (the runtime reports it)."""


@dataclass(kw_only=True, frozen=True)
class Retry:
    """The attempt failed; retry after ``delay_seconds`` unless attempts are used up."""

    kind: Literal["retry"] = "retry"
    reason: str
    """The error."""
    delay_seconds: float
    """Backoff chosen by the runtime (or asked for by the step)."""


@dataclass(kw_only=True, frozen=True)
class Wait:
    """Sleep as a row until the condition holds; the lease and all compute are released."""

    kind: Literal["wait"] = "wait"
    condition: WaitCondition
    """What wakes the task."""
    budget: Overrun | None = None
    """The goal's budget cap that stopped the work, when one did (the runtime reports it)."""


@dataclass(kw_only=True, frozen=True)
class Requeue:
    """Give the worker back (fairness, a per-activation step cap) and run again soon."""

    kind: Literal["requeue"] = "requeue"
    reason: str = "yield"
    """Why."""
    delay_seconds: float = 0.0
    """How long to wait before running again; not a failed attempt."""
    cut_offs: int = 0
    """Activations of this task in a row cut off by the database, this one included (0: this
    one was not): kept with what woke it, so that each wait is longer than the last."""


@dataclass(kw_only=True, frozen=True)
class Stop:
    """Stopped from outside at a step boundary."""

    kind: Literal["stop"] = "stop"
    control: Literal["cancel", "pause"]
    """Which request was honoured."""


Outcome = Succeed | Fail | Retry | Wait | Requeue | Stop


@dataclass(kw_only=True, frozen=True)
class Claim:
    """A task a worker holds under lease, and the activation that claim opened."""

    task: Task
    """The task as claimed (epoch already bumped)."""
    activation: Activation
    """The open activation."""
    wake: WakeReason = field(default_factory=NotWoken)
    """Why the task became runnable again."""

    @property
    def epoch(self) -> int:
        return self.task.epoch
