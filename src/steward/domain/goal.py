"""Goals: durable intent that outlives any chat, task or process."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from steward.errors import InvalidTransition


class GoalStatus(StrEnum):
    ACTIVE = "active"
    PAUSED = "paused"
    COMPLETED = "completed"
    CANCELLED = "cancelled"
    EXPIRED = "expired"

    @property
    def terminal(self) -> bool:
        return self in _GOAL_TERMINAL


_GOAL_TERMINAL = frozenset({GoalStatus.COMPLETED, GoalStatus.CANCELLED, GoalStatus.EXPIRED})

_GOAL_MOVES: dict[GoalStatus, frozenset[GoalStatus]] = {
    GoalStatus.ACTIVE: frozenset(
        {GoalStatus.PAUSED, GoalStatus.COMPLETED, GoalStatus.CANCELLED, GoalStatus.EXPIRED}
    ),
    GoalStatus.PAUSED: frozenset({GoalStatus.ACTIVE, GoalStatus.CANCELLED, GoalStatus.EXPIRED}),
}


def check_goal_transition(current: GoalStatus, new: GoalStatus) -> None:
    """Raise :class:`InvalidTransition` unless ``current → new`` is allowed."""
    if new not in _GOAL_MOVES.get(current, frozenset()):
        raise InvalidTransition(f"goal cannot go from {current} to {new}")


@dataclass(kw_only=True, frozen=True)
class Budget:
    """Spend caps for a goal; a goal that reaches one stops spending (its tasks fail)."""

    max_activations: int | None = None
    """Most activations all the goal's tasks may start together."""
    max_steps: int | None = None
    """Most checkpointed steps all the goal's tasks may take together."""
    max_cost_usd: float | None = None
    """Most model/tool cost, summed from activation usage."""
    max_tokens: int | None = None
    """Most model tokens (prompt and completion), summed from activation usage."""
    max_seconds: float | None = None
    """Most time its activations may run in all (clock time: simulated in simulations)."""

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Budget:
        return cls(**(data or {}))

    def overrun(self, used: Mapping[str, float]) -> Overrun | None:
        """The first cap ``used`` has reached, or None. ``used`` is what the goal's
        activations spent (the running one included): ``activations`` (a cap on them is
        passed when the count goes beyond it, since the running one is counted), ``steps``,
        ``tokens``, ``cost_usd``, ``seconds``; a measure left out is not checked."""
        activations, most = used.get("activations"), self.max_activations
        if most is not None and activations is not None and activations > most:
            return Overrun(measure="activations", cap=most)
        caps: tuple[tuple[SpendMeasure, float | None], ...] = (
            ("steps", self.max_steps),
            ("tokens", self.max_tokens),
            ("cost_usd", self.max_cost_usd),
            ("seconds", self.max_seconds),
        )
        for measure, cap in caps:
            if cap is not None and used.get(measure, 0) >= cap:
                return Overrun(measure=measure, cap=cap)
        return None


SpendMeasure = Literal["activations", "steps", "tokens", "cost_usd", "seconds"]


@dataclass(kw_only=True, frozen=True)
class Overrun:
    """A goal budget cap that was reached."""

    measure: SpendMeasure
    """What was counted."""
    cap: float
    """The cap."""

    @property
    def amount(self) -> str:
        """The cap in words: ``8000 tokens``, ``$3.00``, ``2400s``."""
        if self.measure == "cost_usd":
            return f"${self.cap:.2f}"
        if self.measure == "seconds":
            return f"{self.cap:g}s"
        return f"{self.cap} {self.measure}"

    def paused(self) -> str:
        """Why a running task stops spending and asks the person."""
        noun = {"cost_usd": "cost", "seconds": "time"}.get(self.measure, self.measure[:-1])
        of_work = " of work" if self.measure == "seconds" else ""
        return f"goal {noun} budget reached ({self.amount}{of_work})"

    def refused(self) -> str:
        """Why an activation is refused before it runs."""
        of_work = " of work" if self.measure == "seconds" else ""
        return f"goal budget exhausted: {self.amount}{of_work}"


@dataclass(kw_only=True, frozen=True)
class Goal:
    id: str
    """Stable id, ``gol_…``."""
    person_id: str
    """Owner."""
    title: str
    """Short name shown in lists."""
    instructions: str = ""
    """What the person asked for, in their words."""
    constraints: list[str] = field(default_factory=list)
    """Things the agent must respect while pursuing the goal."""
    deadline: datetime | None = None
    """After this the goal expires and its open tasks are cancelled."""
    stop_condition: str = ""
    """When the goal counts as done, in words the harness can check."""
    report_policy: str = "actionable"
    """What to tell the person about: ``all``, ``actionable`` (only what needs them) or ``none``."""
    sources: list[str] = field(default_factory=list)
    """Where the goal looks for input (channels, mailboxes, pages)."""
    budget: Budget = field(default_factory=Budget)
    """Spend caps."""
    status: GoalStatus = GoalStatus.ACTIVE
    """Lifecycle status."""
    state: dict[str, Any] = field(default_factory=dict)
    """Structured goal state: the latest value activations wrote under each key."""
    created_at: datetime
    """When the goal was created."""
    updated_at: datetime
    """Last change to any field."""


GoalRecordKind = Literal["note", "result", "evidence"]


@dataclass(kw_only=True, frozen=True)
class GoalRecord:
    """One append-only entry an activation wrote back into its goal."""

    id: int
    """Order of writing within the store."""
    goal_id: str
    """The goal written to."""
    task_id: str | None
    """The task whose activation wrote it, if any."""
    kind: GoalRecordKind
    """A note, a result or a piece of evidence."""
    content: dict[str, Any]
    """The payload."""
    created_at: datetime
    """When it was written."""
