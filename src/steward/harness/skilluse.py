"""Skills in the agent loop: a skill's body on demand (``load_skill``), the retrospective
proposal (``propose_skill``), and how each task that loaded a skill ended.

The ids of the skills a task loaded are kept in its checkpointed state, so the outcome is
counted however many activations the task takes.
"""

from __future__ import annotations

from typing import Any

from steward.domain import Task
from steward.domain.audience import Audience
from steward.harness.control import LoadSkill, ProposeSkill
from steward.harness.personal import PersonalContext, RecallQuery, SkillProposal

LOADED = "skills_loaded"
"""Task-state key: ids of the skills the task loaded."""


async def direct(
    personal: PersonalContext,
    task: Task,
    state: dict[str, Any],
    directive: LoadSkill | ProposeSkill,
) -> tuple[str, bool]:
    """Carry out a skill directive: the observation for the model, and whether it is an
    error."""
    if isinstance(directive, LoadSkill):
        return await _load(personal, task, state, directive.name)
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
            trusted=not state.get("taint"),
            audience=Audience.of_task(task.input),
        )
    )
    return answer, answer.startswith("error:")


async def _load(
    personal: PersonalContext, task: Task, state: dict[str, Any], name: str
) -> tuple[str, bool]:
    query = RecallQuery(
        person_id=task.person_id,
        text=str(task.input.get("instructions", task.title)),
        audience=Audience.of_task(task.input),
        goal_id=task.goal_id,
    )
    found = await personal.load_skill(query, name)
    if found is None:
        return f"error: no skill {name!r} here; use a name from the skill index", True
    loaded = list(state.get(LOADED) or [])
    if found.id not in loaded:
        state[LOADED] = [*loaded, found.id]
    return found.text, False


async def settle(
    personal: PersonalContext, task: Task, state: dict[str, Any], *, success: bool
) -> None:
    """Count the task's outcome for each skill it loaded."""
    loaded = state.get(LOADED)
    if loaded:
        # a crash between this and the task's final commit counts the outcome again when the
        # finish is replayed: the counts rank skills, they are not a ledger
        await personal.skill_outcome(task.person_id, list(loaded), success=success)
