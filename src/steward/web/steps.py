"""A task's steps in words: what the model said or called, what a tool observed, what the
person answered."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from steward.domain import Step
from steward.web.words import masked_text

MOST_CHARS = 2000


@dataclass(kw_only=True, frozen=True)
class ShownStep:
    step: Step
    who: str
    """``agent``, ``tool``, ``you`` or the step's kind."""
    text: str
    failed: bool = False
    """A tool call that failed, or an action that was denied or refused: shown apart from a
    success."""
    said_no: bool = False
    """The person denied this action when asked (the task then stopped for it, not done)."""


WAITING = {
    "approval": "Waiting for your approval.",
    "input": "Waiting for your answer.",
    "until": "Waiting until a set time.",
    "event": "Waiting for something to arrive.",
    "children": "Waiting for its sub-tasks.",
    "effect": "Waiting for you to say whether an action happened.",
}
"""A suspend step in words (the task's own line says exactly what, in the person's zone)."""
SAID_NO = "not done: the person denied it"
"""How a tool's observation starts when the person denied the action (the harness's words)."""


def shown(step: Step) -> ShownStep:
    said = _shown(step)
    said = replace(said, text=masked_text(said.text))  # no credential in view, ever
    read = step.output.get("untrusted_sources") if isinstance(step.output, dict) else None
    if not read:
        return said
    # an answer written after reading others' text: the person sees that, and from where
    return replace(said, text=f"{said.text} [after reading others' text: {', '.join(read)}]")


def _shown(step: Step) -> ShownStep:
    output: Any = step.output
    if step.kind == "user" and isinstance(output, dict):
        return ShownStep(step=step, who="you", text=_cut(str(output.get("content", ""))))
    if step.kind == "model" and isinstance(output, dict):
        response = output.get("response") or {}
        calls = ", ".join(
            f"{c.get('name')}({_compact(c.get('arguments'))})"
            for c in response.get("tool_calls") or []
        )
        text = str(response.get("content") or "")
        return ShownStep(step=step, who="agent", text=_cut(" → ".join(filter(None, [text, calls]))))
    if step.kind == "suspend" and isinstance(output, dict):
        waiting = output.get("waiting")
        kind = waiting.get("kind") if isinstance(waiting, dict) else None
        return ShownStep(step=step, who="waits", text=WAITING.get(str(kind), "Waiting."))
    if isinstance(output, dict) and "observation" in output:
        observation = str(output["observation"])
        said_no = observation.startswith(SAID_NO)
        denied = said_no or observation.startswith(("denied:", "refused:"))
        who = "denied" if denied else ("failed" if output.get("error") else "tool")
        text = f"{output.get('name')}: {observation}"
        return ShownStep(step=step, who=who, text=_cut(text), failed=who != "tool", said_no=said_no)
    if isinstance(output, dict) and "result" in output:
        result = output["result"]
        said = result.get("text") if isinstance(result, dict) else result
        return ShownStep(step=step, who="agent", text=_cut(str(said)))
    return ShownStep(step=step, who=step.kind, text=_cut(_compact(output)))


def _compact(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _cut(text: str) -> str:
    return text if len(text) <= MOST_CHARS else text[: MOST_CHARS - 1] + "…"


def task_status(status: object, steps: Sequence[ShownStep]) -> str:
    """A task's status as its line shows it: one that finished after the person said no to
    its action stopped because of that (``said_no``), it is not "done"."""
    key = str(getattr(status, "value", status))
    if key == "succeeded" and any(s.said_no for s in steps):
        return "said_no"
    return key
