"""One activation of an agent task: the context every step of the loop works on.

The loop is a chain of small steps (``steward.harness.steps``): each takes the
:class:`Activation` and returns the next step, an :class:`Outcome` that ends the activation, or
None for "back to the loop" (run the next pending call, or ask the model). The activation holds
the typed state (:class:`~steward.harness.state.AgentState`), the task's typed input and the
run handle, and the primitives the steps share: committing a step, observing a call,
suspending, notifying the person and finishing.

Each model answer is a ``model`` step; each observation a ``tool`` step; each external effect
goes through the effect journal under a key derived from its step.
"""

from __future__ import annotations

import abc
import json
from dataclasses import replace
from typing import Any

from steward import telemetry
from steward.domain import Goal, Notification, Step
from steward.domain.actions import ActionRequest, EffectClass
from steward.domain.agent_input import AgentTaskInput
from steward.domain.audience import PRIVATE
from steward.domain.outcome import Outcome, Succeed, Wait
from steward.domain.personal import Recalled
from steward.domain.roles import DataClass, Role
from steward.harness import skilluse
from steward.harness.budget import ActivationBudget, Exhausted, exhausted
from steward.harness.compaction import choose_cut, compact
from steward.harness.config import Equipment
from steward.harness.context import (
    Context,
    ContextInputs,
    assemble,
    message_tokens,
    steps_to_messages,
    tools_tokens,
)
from steward.harness.control import Finish
from steward.harness.state import AgentState, Waiting
from steward.harness.tools import Tool, ToolContext
from steward.models.base import Message, ToolCall, ToolSpec, Usage
from steward.runtime.run import TaskRun
from steward.sentinel import provenance


class Node(abc.ABC):
    """A step of the agent loop."""

    @abc.abstractmethod
    async def run(self, act: Activation) -> Node | Outcome | None:
        """Take the step: the next one, how the activation ends, or None (back to the loop)."""


class Activation:
    """The context of one activation: the harness's equipment, the run, the typed state."""

    def __init__(self, kit: Equipment, run: TaskRun) -> None:
        self.h = kit
        self.run = run
        self.task = run.task
        self.input = AgentTaskInput.from_json(run.task.input)
        """The task's input, typed once here."""
        self.started = run.clock.now()
        self.state = AgentState.from_json(run.state)
        """The checkpointed state; written back into the run with every commit."""
        self.wake = run.wake
        """Why this activation started."""
        self.window: list[Step] | None = None
        """Steps after the summary, loaded once per activation and extended as we commit."""
        self._rendered: dict[int, list[Message]] = {}
        self.recalled: tuple[list[Recalled], list[Recalled]] | None = None
        """Memories and skills recalled for this activation (once: its subject does not
        change while it runs)."""
        self.goal: Goal | None = None
        self.timezone = "UTC"
        """The person's time zone (loaded when the activation starts)."""
        self.goal_spent: dict[str, float] = {}
        self.budget = kit.config.budget
        if self.input.budget is not None:
            self.budget = ActivationBudget.from_json(self.input.budget)

    @property
    def depth(self) -> int:
        """How deep this task is nested in subtasks (0: not a subtask). Only a subtask's
        stored depth counts (a person's or a trigger's input cannot lower it); a subtask created
        before the depth was stored has it in its id (two dots per level)."""
        if self.task.parent_id is None:
            return 0
        if self.input.depth is not None:
            return max(1, self.input.depth)
        return max(1, self.task.id.count(".") // 2)

    # --- committing -----------------------------------------------------------------------

    async def commit(self, *, kind: str, output: dict[str, Any]) -> None:
        """Checkpoint a step with the state, and keep the in-memory window of recent steps in
        step with the journal (so the next prompt does not re-read what was just written)."""
        self.run.state = self.state.to_json()
        await self.run.checkpoint(kind=kind, output=output)
        if self.window is not None:
            self.window.append(
                Step(
                    task_id=self.task.id,
                    seq=self.run.seq,
                    activation_id=self.run.claim.activation.id,
                    kind=kind,
                    output=output,
                    created_at=self.run.clock.now(),
                )
            )

    def decide(self, *, kind: str, output: dict[str, Any]) -> None:
        """The step that ends the activation, committed with its outcome."""
        self.run.state = self.state.to_json()
        self.run.decide(kind=kind, output=output)

    def pop_pending(self) -> None:
        """The first pending call is done with: the task no longer waits on it."""
        self.state.pending = self.state.pending[1:]
        self.state.waiting = None

    async def observe(
        self, call: ToolCall, observation: str, error: bool = False
    ) -> Outcome | None:
        """Record the observation of the first pending call as a step; None: back to the loop
        (typed so a step can ``return`` it as its own answer)."""
        self.pop_pending()
        skilluse.note_observation(self.state, error)
        await self.commit(
            kind="tool",
            output={
                "call_id": call.id,
                "name": call.name,
                "observation": observation,
                "error": error,
            },
        )
        return None

    async def say(self, text: str) -> None:
        """A message from Steward itself in the conversation (a reminder, the person's answer)."""
        self.state.waiting = None
        await self.commit(kind="user", output={"content": text})

    @staticmethod
    def tool_output(call: ToolCall, observation: str) -> dict[str, Any]:
        return {"call_id": call.id, "name": call.name, "observation": observation}

    def suspend_on(self, waiting: Waiting) -> Outcome:
        self.state.waiting = waiting
        self.decide(kind="suspend", output={"waiting": waiting.to_json()})
        return Wait(condition=waiting.condition)

    async def finish(self, finish: Finish, call: ToolCall | None = None) -> Outcome:
        result: dict[str, Any] = {"text": finish.result}
        if finish.data:
            result["data"] = finish.data
        read = provenance.sources(self.state.trail)
        if read:
            # an answer written after reading others' text may be shaped by it: say so
            result["untrusted_sources"] = read
        if self.task.goal_id is not None and self.task.parent_id is None:
            await self.run.write_goal(record=("result", result))
        await skilluse.settle(self.h.personal, self.task, self.state, success=True)
        output: dict[str, Any] = self.tool_output(call, "finished") if call else {"result": result}
        if read:
            output["untrusted_sources"] = read
        self.decide(kind="tool" if call else "finish", output=output)
        return Succeed(result=result)

    def missing_acceptance_keys(self, data: dict[str, Any]) -> list[str]:
        return [k for k in self.input.required_keys if k not in data]

    def tool_context(self) -> ToolContext:
        """Where a tool of this task runs (a call, or the preview of one shown to the person
        before it is approved: both see the same person, task, workspace and mode)."""
        return ToolContext(
            person_id=self.task.person_id,
            task_id=self.task.id,
            goal_id=self.task.goal_id,
            idempotency_key=None,
            workspace=self.h.workspace.person_dir(self.task.person_id),
            now=self.run.clock.now(),
            read_only=self.input.mode == "research",
        )

    # --- the person ------------------------------------------------------------------------

    def notification(self, kind: str, ref: str, title: str, body: str) -> Notification:
        return Notification(
            id=f"ntf.{ref}",
            person_id=self.task.person_id,
            kind=kind,
            title=title,
            body=body,
            task_id=self.task.id,
            goal_id=self.task.goal_id,
            ref=ref,
            created_at=self.run.clock.now(),
        )

    async def notify(self, kind: str, ref: str, title: str, body: str) -> None:
        await self.run.notify(self.notification(kind, ref, title, body))

    # --- budgets ---------------------------------------------------------------------------

    def account(self, usage: Usage, *, model_calls: int | bool) -> None:
        telemetry.model_used(
            calls=int(model_calls),
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=usage.cost_usd,
        )
        self.run.add_usage(
            model_calls=int(model_calls),
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            tokens=usage.total_tokens,
            cost_usd=usage.cost_usd,
        )

    def over_budget(self) -> Exhausted | None:
        return exhausted(
            self.budget,
            self.goal.budget if self.goal is not None else None,
            steps=self.run.steps,
            usage=self.run.usage,
            elapsed=(self.run.clock.now() - self.started).total_seconds(),
            goal_spent=self.goal_spent,
        )

    # --- what the model is offered and shown ------------------------------------------------

    def offered_tools(self) -> list[Tool]:
        allowed = self.input.tools
        if allowed is None:
            return list(self.h.tools)
        names = set(allowed)
        return [t for t in self.h.tools if t.source == "control" or t.name in names]

    def _messages(self, step: Step) -> list[Message]:
        cached = self._rendered.get(step.seq)
        if cached is None:
            cached = self._rendered[step.seq] = steps_to_messages([step])
        return cached

    async def context(self, specs: list[ToolSpec], *, shrink: bool) -> Context:
        """The prompt: compacting older steps into the summary first when they do not fit."""
        budget = self.h.config.context
        # the tool schemas go with every call: they come out of the recent steps' share
        recent = max(budget.recent - tools_tokens(specs), budget.recent // 4)
        budget = replace(budget, recent=recent // 4 if shrink else recent)
        if self.window is None:
            self.window = await self.run.steps_after(self.state.summarized_through)
        steps = self.window
        window_tokens = sum(message_tokens(m) for s in steps for m in self._messages(s))
        if window_tokens > budget.recent:
            cut = choose_cut(steps, budget.recent)
            if cut is not None:
                compaction = await compact(
                    steps,
                    previous=self.state.summary,
                    through=cut,
                    max_tokens=budget.summary,
                    model=self.h.summarizer,
                )
                self.account(compaction.usage, model_calls=compaction.method == "model")
                self.state.summary = compaction.summary
                self.state.summarized_through = cut
                self.window = steps = [s for s in steps if s.seq > cut]
                await self.commit(
                    kind="summary", output={"through": cut, "method": compaction.method}
                )
        if self.recalled is None:
            query = skilluse.recall_query(self.task, self.input)
            self.recalled = (
                await self.h.personal.recall(query),
                await self.h.personal.skills(query),
            )
        inputs = ContextInputs(
            system_prompt=self.h.config.system_prompt,
            goal=self.goal,
            task=self.task,
            given=self.input,
            progress=dict(self.state.progress),
            wake=self.wake,
            memories=self.recalled[0],
            skills=self.recalled[1],
            summary=self.state.summary,
            recent=[m for s in steps for m in self._messages(s)],
            now=self.run.clock.now(),
            timezone=self.timezone,
        )
        return assemble(inputs, budget)

    # --- what the sentinel is asked ---------------------------------------------------------

    def request(self, found: Tool, args: dict[str, Any]) -> ActionRequest:
        """The action request for a call: with the values that came from others' text, and
        the person's sensitive data the arguments would carry out."""
        roles = dict(found.roles) if found.roles is not None else None
        flagged: dict[str, provenance.Taint] = {}
        classes: tuple[DataClass, ...] = ()
        # an action on the world, or a read whose request goes to a host (its URL carries
        # data out): values from others' text and the person's sensitive data are looked for
        outward = found.effect.journalled or (roles is not None and Role.HOST in roles.values())
        # a local write into the person's own files (a ``….write`` scope): nothing leaves, but
        # which file is written must not be chosen by others' text
        writes = found.effect is EffectClass.LOCAL and any(
            scope.rpartition(".")[2] == "write" for scope in found.scopes
        )
        if outward or (writes and roles is not None):
            flagged = provenance.untrusted_arguments(
                args, self.state.trail, self.trusted_text(), roles
            )
        if outward:
            private = (
                [r.text for r in self.recalled[0] if r.audience == PRIVATE]
                if self.recalled is not None
                else []
            )
            classes = provenance.data_classes(args, roles, private)
        return ActionRequest(
            person_id=self.task.person_id,
            task_id=self.task.id,
            goal_id=self.task.goal_id,
            tool=found.name,
            args=args,
            effect=found.effect,
            scopes=found.scopes,
            source=found.source,
            connector=found.connector,
            wake_reason=self.wake.reason,
            task_input=self.input,
            roles=roles,
            untrusted_args={path: t.describe() for path, t in flagged.items()},
            tainted={path: t.value for path, t in flagged.items()},
            data_classes=classes,
            audience=self.input.audience,
        )

    def trusted_text(self) -> str:
        """What the person (not a third party, not the model) said: the task, the goal, their
        answers, and the memories they keep (recalled for this activation)."""
        inherited = self.input.provenance
        if inherited is not None:
            # a subtask's instructions are the model's words: trust what the parent trusted
            parts = [inherited.trusted, *self.state.trail.trusted]
        else:
            # the person's words only: a budget, a tool list or a session id are settings, and
            # their numbers ("13", "30") vouch for no value an injected text supplies
            given = self.input
            said = [given.instructions, given.acceptance, given.inputs]
            parts = [
                self.task.title,
                *(v if isinstance(v, str) else json.dumps(v, default=str) for v in said if v),
                *self.state.trail.trusted,
            ]
        if self.goal is not None:
            goal = self.goal
            parts += [goal.title, goal.instructions, *goal.constraints, *goal.sources]
        if self.recalled is not None:
            parts += [r.text for r in self.recalled[0]]
        return "\n".join(parts)
