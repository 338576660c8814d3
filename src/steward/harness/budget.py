"""Budgets of an agent activation, and the goal's: when one is reached, the task stops
spending and asks the person instead of burning on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from steward.domain import Budget
from steward.domain.goal import Overrun
from steward.errors import UsageError


@dataclass(kw_only=True, frozen=True)
class ActivationBudget:
    """Caps on one activation; a task input's ``budget`` overrides them."""

    max_steps: int | None = 40
    """Steps committed in this activation."""
    max_tokens: int | None = None
    """Model tokens in this activation."""
    max_cost_usd: float | None = None
    """Model cost in this activation."""
    max_seconds: float | None = None
    """Clock time (simulated in simulations) since the activation started."""

    @classmethod
    def from_json(cls, data: Any) -> ActivationBudget:
        if not isinstance(data, dict):
            raise UsageError(f"budget must be an object, not {type(data).__name__}")
        known = {"max_steps", "max_tokens", "max_cost_usd", "max_seconds"}
        unknown = set(data) - known
        if unknown:
            raise UsageError(f"unknown budget fields {sorted(unknown)}; known: {sorted(known)}")
        for name, value in data.items():
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if value is not None and not (number and value >= 0):
                raise UsageError(f"budget field {name} must be a number >= 0 or null: {value!r}")
        return cls(**data)


@dataclass(kw_only=True, frozen=True)
class Exhausted:
    """A budget the activation reached."""

    reason: str
    """Why it stops spending, in words."""
    goal: Overrun | None = None
    """The goal's cap, when it was the goal's budget (None: this activation's own)."""


def exhausted(
    budget: ActivationBudget,
    goal_budget: Budget | None,
    *,
    steps: int,
    usage: dict[str, float],
    elapsed: float,
    goal_spent: dict[str, float],
) -> Exhausted | None:
    """Why the activation must stop spending, or None. ``steps``, ``usage`` and ``elapsed``
    (seconds) are this activation's; ``goal_spent`` is what the goal's earlier activations
    spent."""
    b = budget
    if b.max_steps is not None and steps >= b.max_steps:
        return Exhausted(reason=f"activation step budget reached ({b.max_steps} steps)")
    if b.max_tokens is not None and usage.get("tokens", 0) >= b.max_tokens:
        return Exhausted(reason=f"activation token budget reached ({b.max_tokens} tokens)")
    if b.max_cost_usd is not None and usage.get("cost_usd", 0) >= b.max_cost_usd:
        return Exhausted(reason=f"activation cost budget reached (${b.max_cost_usd:.2f})")
    if b.max_seconds is not None and elapsed >= b.max_seconds:
        return Exhausted(reason=f"activation time budget reached ({b.max_seconds:g}s)")
    if goal_budget is None:
        return None
    # the goal's own check (the worker refuses an activation by it too); the activation count
    # is the worker's to check: a task that started may finish its activation
    overrun = goal_budget.overrun(
        {
            "steps": goal_spent.get("steps", 0) + steps,
            "tokens": goal_spent.get("tokens", 0) + usage.get("tokens", 0),
            "cost_usd": goal_spent.get("cost_usd", 0) + usage.get("cost_usd", 0),
            "seconds": goal_spent.get("seconds", 0) + elapsed,
        }
    )
    return None if overrun is None else Exhausted(reason=overrun.paused(), goal=overrun)
