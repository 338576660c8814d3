"""The agent loop as a chain of steps over one :class:`~steward.harness.activation.Activation`.

:class:`Start` picks up where the task's state says it is (resume a wait, act on a recorded
answer, start a skill's workflow); :class:`Loop` runs the pending calls one by one, finishes a
workflow that ran through, stops at a budget, or asks the model (:class:`Think`); a words-only
answer goes to :class:`Answered`. A step returns the next step, an Outcome, or None for "back
to the :class:`Loop`".
"""

from __future__ import annotations

from typing import Any

import structlog

from steward import telemetry
from steward.domain import WaitCondition
from steward.domain.outcome import Outcome
from steward.errors import UsageError
from steward.failpoints import failpoint
from steward.harness import skilluse, suspend
from steward.harness.activation import Activation, Node
from steward.harness.authorize import run_call
from steward.harness.control import Finish
from steward.harness.resume import Resume
from steward.harness.state import Waiting
from steward.models.base import ModelResponse
from steward.models.errors import ContextOverflow
from steward.sentinel import provenance

log = structlog.get_logger(__name__)


async def drive(act: Activation) -> Outcome:
    """Run steps from :class:`Start` until one ends the activation."""
    step: Node = Start()
    while True:
        result = await step.run(act)
        if result is None:
            step = LOOP
        elif isinstance(result, Node):
            step = result
        else:
            return result


class Start(Node):
    """What the activation does first, from the task's state."""

    async def run(self, act: Activation) -> Node | Outcome | None:
        act.goal = await act.run.goal()
        act.timezone = await act.run.timezone()
        act.goal_spent = await act.run.goal_usage()
        trail = act.state.trail
        if act.input.event is not None and act.run.seq == 0:
            # the event a trigger started this task for is someone else's text
            provenance.remember_event(trail, act.input.event, step=0)
        if act.input.provenance is not None and act.run.seq == 0:
            # a subtask still cannot be steered by what its parent read in others' text
            provenance.adopt(trail, act.input.provenance.trail)
        if act.state.waiting is not None:
            return _Then(Resume(act.state.waiting), after=_Recorded())
        return _Recorded()


class _Then(Node):
    """Run ``first``; unless it ends the activation, go on with ``after``."""

    def __init__(self, first: Node, *, after: Node) -> None:
        self.first = first
        self.after = after

    async def run(self, act: Activation) -> Node | Outcome | None:
        result = await self.first.run(act)
        if result is None:
            return self.after
        return result


class _Recorded(Node):
    """A words-only answer recorded without its outcome is acted on (not asked again); a task
    that names a skill starts its workflow."""

    async def run(self, act: Activation) -> Node | Outcome | None:
        if act.state.answer is not None:
            return _Then(Answered(act.state.answer), after=_StartWorkflow())
        return _StartWorkflow()


class _StartWorkflow(Node):
    """Run the workflow of the skill the task names: its calls become the task's first answer
    (recorded like a model's, so the model can take over where one fails)."""

    async def run(self, act: Activation) -> Node | Outcome | None:
        if act.input.skill is None or act.state.workflow is not None:
            return None
        started = await skilluse.start_workflow(act.h.personal, act.task, act.input, act.state)
        if isinstance(started, str):
            raise UsageError(started)  # the task asks for what cannot run: it fails, no retry
        if started is None:
            return None
        response = ModelResponse(tool_calls=tuple(started), finish_reason="workflow")
        act.state.pending = list(started)
        act.state.answer = None
        await act.commit(
            kind="model",
            output={"response": response.to_json(), "context_tokens": 0, "workflow": True},
        )
        return None


class Loop(Node):
    """The head of the loop: the next pending call, or the model."""

    async def run(self, act: Activation) -> Node | Outcome | None:
        if act.state.pending:
            return await run_call(act, act.state.pending[0])
        ran = skilluse.workflow_result(act.state)
        if ran is not None:  # every call of the skill's workflow succeeded: no model needed
            return await act.finish(Finish(result=ran, data={}))
        stop = act.over_budget()
        if stop is not None:
            return await suspend.for_budget(act, stop)
        return THINK


LOOP = Loop()


class Think(Node):
    """Ask the model for the next step and record its answer as a step."""

    async def run(self, act: Activation) -> Node | Outcome | None:
        tools = act.offered_tools()
        specs = [t.spec for t in tools]
        for attempt in range(2):
            context = await act.context(specs, shrink=attempt > 0)
            try:
                with telemetry.span("model call", attempt=attempt + 1):
                    response = await act.h.model.complete(
                        context.messages, specs, on_delta=act.h.on_delta
                    )
                break
            except ContextOverflow:
                if attempt == 1:
                    raise
                log.warning("context overflow; compacting harder", task=act.task.id)
        act.account(response.usage, model_calls=1)
        act.state.pending = list(response.tool_calls)
        act.state.answer = None if response.tool_calls else response
        output: dict[str, Any] = {"response": response.to_json(), "context_tokens": context.tokens}
        read = provenance.sources(act.state.trail)
        if read and not response.tool_calls:
            # an answer in words (a chat reply, a result) after others' text may be theirs
            output["untrusted_sources"] = read
        await act.commit(kind="model", output=output)
        failpoint("agent.after_model_step")
        if not response.tool_calls:
            return Answered(response)
        return None


THINK = Think()


class Answered(Node):
    """The model answered in words only: a reply in a chat, the result of a task."""

    def __init__(self, response: ModelResponse) -> None:
        self.response = response

    async def run(self, act: Activation) -> Node | Outcome | None:
        act.state.answer = None  # committed with whatever this leads to
        if act.input.mode == "chat":
            condition = WaitCondition(kind="input", prompt=self.response.content)
            return act.suspend_on(Waiting(kind="reply", condition=condition))
        missing = act.missing_acceptance_keys({})
        if missing:
            await act.say(f"Finish with finish(result, data) where data has keys {missing}.")
            return None
        return await act.finish(Finish(result=self.response.content, data={}))
