"""The seam between the runtime and whatever decides what a task does.

The runtime claims a task, opens an activation and hands the harness a :class:`TaskRun`; the
harness takes steps (committing a checkpoint after each) and returns how the activation ends.
The runtime never calls a model: the model harness is one implementation of this protocol, the
deterministic :class:`~steward.runtime.stepfn.StepHarness` is another.
"""

from __future__ import annotations

from typing import Protocol

from steward.domain.outcome import Outcome
from steward.runtime.run import TaskRun


class Harness(Protocol):
    async def activate(self, run: TaskRun) -> Outcome:
        """Run one activation of ``run.task`` and say how it ends.

        May raise :class:`~steward.errors.RetryLater` (retry with backoff),
        :class:`~steward.errors.StopRequested` (from a checkpoint),
        :class:`~steward.errors.EffectInDoubt` (the person must decide) or
        :class:`~steward.errors.LeaseLost`; any other exception counts as a failed attempt.
        """
        ...
