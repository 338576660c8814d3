"""Skills in the agent loop: a skill's body on demand (``load_skill``), the retrospective
proposal (``propose_skill``), how each task that loaded a skill ended, and running a skill's
workflow without a model.

A task whose input names ``skill`` (and its ``inputs``) starts by running that skill's workflow:
its tool calls, with ``{input}`` placeholders filled, become the task's pending calls, recorded
as the task's first answer, so each passes the sentinel and the effect journal like any call
the model makes. When every call succeeds the task finishes without a model call; when one
fails, the model takes over with the whole exchange in its context.

The ids of the skills a task loaded are kept in its checkpointed state, so the outcome is
counted however many activations the task takes.
"""

from __future__ import annotations

import json
import re
from typing import Any

from steward.domain import Task
from steward.domain.agent_input import AgentTaskInput
from steward.domain.personal import PersonalContext, RecallQuery, SkillProposal
from steward.harness.control import LoadSkill, ProposeSkill
from steward.harness.state import AgentState, Workflow
from steward.models.base import ToolCall
from steward.sentinel import provenance


async def start_workflow(
    personal: PersonalContext, task: Task, given: AgentTaskInput, state: AgentState
) -> list[ToolCall] | str | None:
    """The tool calls of the workflow of the skill the task's input names; an error message
    when it cannot run; None when there is none to run (the model works from the skill's
    procedure instead)."""
    name = str(given.skill)
    found = await personal.load_skill(recall_query(task, given), name)
    if found is None:
        return f"no skill {name!r} that this conversation may use"
    _loaded(state, found.id)
    state.workflow = Workflow(skill=name, calls=0, failed=True)  # checked: not again
    if not found.workflow:
        return None
    inputs = given.inputs or {}
    if not isinstance(inputs, dict):
        return "the skill's inputs must be an object of names and values"
    calls: list[ToolCall] = []
    for n, step in enumerate(found.workflow, 1):
        try:
            arguments = _fill(step.get("arguments") or {}, {str(k): v for k, v in inputs.items()})
        except KeyError as missing:
            return f"skill {name!r} needs the input {missing.args[0]!r}"
        calls.append(
            ToolCall(id=f"wf-{n}", name=str(step["tool"]), arguments=json.dumps(arguments))
        )
    state.workflow = Workflow(skill=name, calls=len(calls), failed=False)
    return calls


def _loaded(state: AgentState, skill_id: str) -> None:
    if skill_id not in state.skills_loaded:
        state.skills_loaded.append(skill_id)


def workflow_result(state: AgentState) -> str | None:
    """The task's result when its workflow ran to the end without a failed call; None while
    none runs or after one failed (the model has taken over)."""
    running = state.workflow
    if running is None or running.failed:
        return None
    return f"ran the workflow of skill {running.skill!r}: {running.calls} steps"


def note_observation(state: AgentState, error: bool) -> None:
    """A failed call hands a running workflow to the model."""
    if state.workflow is not None and error:
        state.workflow.failed = True


def _fill(value: Any, inputs: dict[str, Any]) -> Any:
    """``{name}`` placeholders in strings replaced by the inputs (a string that is exactly one
    placeholder takes the input's value as it is, number or list)."""
    if isinstance(value, str):
        match = _PLACEHOLDER.fullmatch(value)
        if match:
            return inputs[match.group(1)]
        return _PLACEHOLDER.sub(lambda m: str(inputs[m.group(1)]), value)
    if isinstance(value, dict):
        return {k: _fill(v, inputs) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, inputs) for v in value]
    return value


_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def recall_query(task: Task, given: AgentTaskInput) -> RecallQuery:
    """What a task recalls memories and skills by: its instructions, for its audience."""
    return RecallQuery(
        person_id=task.person_id,
        text=given.instructions if given.instructions is not None else task.title,
        audience=given.audience,
        goal_id=task.goal_id,
    )


async def direct(
    personal: PersonalContext,
    task: Task,
    given: AgentTaskInput,
    state: AgentState,
    directive: LoadSkill | ProposeSkill,
) -> tuple[str, bool]:
    """Carry out a skill directive: the observation for the model, and whether it is an
    error."""
    if isinstance(directive, LoadSkill):
        return await _load(personal, recall_query(task, given), state, directive.name)
    answer = await personal.propose_skill(
        SkillProposal(
            person_id=task.person_id,
            name=directive.name,
            description=directive.description,
            procedure=directive.procedure,
            when_to_use=directive.when_to_use,
            when_not=directive.when_not,
            inputs=tuple(directive.inputs),
            checks=tuple(directive.checks),
            workflow=tuple(directive.workflow),
            task_id=task.id,
            # once a task has read others' text, what it learned may be theirs
            trusted=not provenance.read_untrusted(state.trail),
            audience=given.audience,
        )
    )
    return answer, answer.startswith("error:")


async def _load(
    personal: PersonalContext, query: RecallQuery, state: AgentState, name: str
) -> tuple[str, bool]:
    found = await personal.load_skill(query, name)
    if found is None:
        return f"error: no skill {name!r} here; use a name from the skill index", True
    _loaded(state, found.id)
    return found.text, False


async def settle(
    personal: PersonalContext, task: Task, state: AgentState, *, success: bool
) -> None:
    """Count the task's outcome for each skill it loaded."""
    loaded = state.skills_loaded
    if loaded:
        # a crash between this and the task's final commit counts the outcome again when the
        # finish is replayed: the counts rank skills, they are not a ledger
        await personal.skill_outcome(task.person_id, list(loaded), success=success)
