"""Deterministic step functions: a harness for workflows written as plain Python.

A handler is ``async def handler(ctx: StepContext) -> Outcome | None``. Each call is one step:
it reads and mutates ``ctx.state`` and may perform effects; when it returns, the step and the new
state are committed together. Returning None means "continue with the next step"; returning an
outcome (``Succeed``, ``Wait``, ...) ends the activation after that checkpoint. A crash mid-step
re-runs the step from the last committed state; its effects are found in the journal by key.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from steward.domain import TaskSpec
from steward.domain.outcome import Fail, Outcome, Requeue
from steward.runtime.run import EffectCall, Reconcile, TaskRun

Handler = Callable[["StepContext"], Awaitable[Outcome | None]]


class StepContext:
    """What a step function sees: input, state, why it woke, and fenced ways to act."""

    def __init__(self, run: TaskRun) -> None:
        self._run = run

    @property
    def task_id(self) -> str:
        return self._run.task.id

    @property
    def person_id(self) -> str:
        """Whose authority the task runs under."""
        return self._run.task.person_id

    @property
    def input(self) -> dict[str, Any]:
        return self._run.task.input

    @property
    def state(self) -> dict[str, Any]:
        """Mutable; committed with the step."""
        return self._run.state

    @property
    def wake(self) -> dict[str, Any]:
        """Why this activation started, as the store keeps it (``{"reason": ..., ...}``)."""
        return self._run.wake.to_json()

    @property
    def step(self) -> int:
        """1-based number of the step being computed."""
        return self._run.seq + 1

    @property
    def goal_id(self) -> str | None:
        return self._run.task.goal_id

    @property
    def created_at(self) -> datetime:
        return self._run.task.created_at

    def now(self) -> datetime:
        return self._run.clock.now()

    async def effect(
        self,
        tool: str,
        args: dict[str, Any],
        call: EffectCall,
        *,
        idempotent: bool,
        reconcile: Reconcile | None = None,
    ) -> Any:
        return await self._run.effect(tool, args, call, idempotent=idempotent, reconcile=reconcile)

    async def write_goal(self, **kwargs: Any) -> None:
        await self._run.write_goal(**kwargs)

    async def spawn(self, spec: TaskSpec) -> str:
        return await self._run.spawn(spec)


class StepHarness:
    """Runs registered step functions by task kind."""

    def __init__(self, *, max_steps_per_activation: int = 10_000) -> None:
        self._handlers: dict[str, Handler] = {}
        self.max_steps_per_activation = max_steps_per_activation

    def register(self, kind: str, handler: Handler) -> None:
        self._handlers[kind] = handler

    def handler(self, kind: str) -> Callable[[Handler], Handler]:
        """Decorator form of :meth:`register`."""

        def decorate(fn: Handler) -> Handler:
            self.register(kind, fn)
            return fn

        return decorate

    @property
    def kinds(self) -> list[str]:
        return sorted(self._handlers)

    async def activate(self, run: TaskRun) -> Outcome:
        handler = self._handlers.get(run.task.kind)
        if handler is None:
            return Fail(reason=f"no step function registered for task kind {run.task.kind!r}")
        ctx = StepContext(run)
        while True:
            outcome = await handler(ctx)
            if outcome is not None:
                run.decide(output=outcome.kind)
                return outcome
            await run.checkpoint()
            if run.steps >= self.max_steps_per_activation:
                return Requeue(reason="step cap per activation")
