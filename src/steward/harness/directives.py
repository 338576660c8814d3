"""Carrying out the directives of control tools (finish, fail, wait, spawn a subtask, write the
goal, save progress, propose a memory, skills, read an artifact, set a follow-up, report to the
person): one handler per directive type, looked up in :data:`HANDLERS`."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from steward.domain import TaskSpec, TriggerKind, WaitCondition
from steward.domain.agent_input import Inherited
from steward.domain.outcome import Fail, Outcome
from steward.domain.personal import MemoryProposal
from steward.errors import TooMany, UsageError
from steward.harness import skilluse, suspend
from steward.harness.activation import Activation
from steward.harness.config import AGENT_KIND
from steward.harness.control import (
    Abort,
    Directive,
    Finish,
    GoalWrite,
    LoadSkill,
    Progress,
    ProposeSkill,
    ReadArtifact,
    Remember,
    Spawn,
    Suspend,
)
from steward.harness.followup import FollowUpLater
from steward.harness.report import ReportToPerson
from steward.harness.state import Waiting
from steward.models.base import ToolCall
from steward.sentinel import provenance

Handler = Callable[[Activation, ToolCall, Any], Awaitable[Outcome | None]]
"""Carries out one kind of directive for the call that gave it: how the activation ends, or
None (back to the loop)."""


async def direct(act: Activation, call: ToolCall, directive: Directive) -> Outcome | None:
    return await HANDLERS[type(directive)](act, call, directive)


async def _finish(act: Activation, call: ToolCall, directive: Finish) -> Outcome | None:
    missing = act.missing_acceptance_keys(directive.data)
    if missing:
        return await act.observe(
            call, f"error: not accepted: the data must include keys {missing}", True
        )
    act.pop_pending()
    return await act.finish(directive, call)


async def _abort(act: Activation, call: ToolCall, directive: Abort) -> Outcome | None:
    act.pop_pending()
    await skilluse.settle(act.h.personal, act.task, act.state, success=False)
    act.decide(kind="tool", output=act.tool_output(call, "task failed"))
    return Fail(reason=directive.reason)


async def _goal_write(act: Activation, call: ToolCall, directive: GoalWrite) -> Outcome | None:
    if act.task.goal_id is None:
        return await act.observe(call, "error: this task has no goal to write to", True)
    record = {"text": directive.content, **directive.data}
    await act.run.write_goal(state=directive.state or None, record=(directive.kind, record))
    return await act.observe(call, f"{directive.kind} written to the goal")


async def _follow_up(act: Activation, call: ToolCall, later: FollowUpLater) -> Outcome | None:
    goal_id = act.task.goal_id
    if goal_id is None:
        return await act.observe(
            call, "error: follow-ups belong to a goal; this task has none", True
        )
    try:
        await act.run.follow_up(due_at=later.at, note=later.note)
    except TooMany as exc:
        return await act.observe(call, f"error: {exc}", True)
    beats = await act.run.store.schedule.list_triggers(goal_id=goal_id)
    if not any(t.kind is TriggerKind.HEARTBEAT and t.enabled for t in beats):
        return await act.observe(
            call,
            f"follow-up noted for {later.at.isoformat()}, but this goal has no heartbeat "
            "switched on, so nothing will wake you for it: if it matters, wait until then "
            "instead, or ask the person to add a heartbeat to the goal",
        )
    return await act.observe(call, f"follow-up set for {later.at.isoformat()}")


async def _report(act: Activation, call: ToolCall, said: ReportToPerson) -> Outcome | None:
    stored = await act.run.report(
        what=said.what, why=said.why, todo=said.todo, importance=said.importance
    )
    where = {
        "pending": "it goes to the person now",
        "held": "it goes to the person when their quiet hours end",
        "digest": "it goes in the person's daily digest",
        "dropped": "it waits on the person's dashboard (not sent by the goal's report policy)",
        "delivered": "it has reached the person",
        "digested": "it went in the person's digest",
    }[stored.state.value]
    return await act.observe(call, f"reported: {where}")


async def _progress(act: Activation, call: ToolCall, directive: Progress) -> Outcome | None:
    progress = dict(act.state.progress)
    for key, value in directive.updates.items():
        if value is None:
            progress.pop(key, None)
        else:
            progress[key] = value
    size = len(json.dumps(progress, default=str))
    if size > act.h.config.context.task * 4:
        return await act.observe(
            call, f"error: progress would be {size} characters; keep it shorter", True
        )
    act.state.progress = progress
    return await act.observe(call, "progress saved")


async def _remember(act: Activation, call: ToolCall, directive: Remember) -> Outcome | None:
    answer = await act.h.personal.propose(
        MemoryProposal(
            person_id=act.task.person_id,
            content=directive.content,
            kind=directive.kind,
            subjects=tuple(directive.subjects),
            task_id=act.task.id,
            goal_id=act.task.goal_id,
            # once a task has read others' text, what it proposes may be theirs
            trusted=not provenance.read_untrusted(act.state.trail),
            items=tuple(act.state.trail.items),
            extra={
                "audience": str(act.input.audience),
                "slot": directive.slot,
                "valid_from": directive.valid_from,
                "importance": directive.importance,
                "detail": f"step {act.run.seq + 1}",
            },
        )
    )
    return await act.observe(call, answer)


async def _skill(
    act: Activation, call: ToolCall, directive: LoadSkill | ProposeSkill
) -> Outcome | None:
    answer, error = await skilluse.direct(act.h.personal, act.task, act.input, act.state, directive)
    return await act.observe(call, answer, error)


async def _read_artifact(act: Activation, call: ToolCall, read: ReadArtifact) -> Outcome | None:
    try:
        artifact = await act.run.artifact(read.artifact_id)
        text = await act.h.workspace.read_text(artifact, offset=read.offset, length=read.length)
    except UsageError as exc:
        return await act.observe(call, f"error: {exc}", True)
    end = read.offset + len(text)
    tail = f"\n…[characters {read.offset}-{end} of {artifact.size} bytes]"
    return await act.observe(call, text + tail)


async def _spawn(act: Activation, call: ToolCall, spawn: Spawn) -> Outcome | None:
    limit = act.h.config.max_subtask_depth
    if act.depth >= limit:
        return await act.observe(call, f"error: subtasks nest at most {limit} deep", True)
    parent_tools = act.input.tools
    tools = spawn.tools if spawn.tools is not None else parent_tools
    if tools is not None:
        unknown = [t for t in tools if t not in act.h.tools]
        if unknown:
            return await act.observe(call, f"error: unknown tools {unknown}", True)
        beyond = sorted(set(tools) - set(parent_tools)) if parent_tools is not None else []
        if beyond:
            # a subtask never gets more authority than its parent
            return await act.observe(call, f"error: a subtask may not use {beyond}", True)
    child_input: dict[str, Any] = {
        "instructions": spawn.instructions,
        "acceptance": spawn.acceptance,
    }
    if tools is not None:
        child_input["tools"] = list(tools)
    # a subtask speaks to the same people: it may disclose no more than its parent
    child_input["audience"] = str(act.input.audience)
    if act.input.mode == "research":
        child_input["mode"] = "research"  # a subtask of read-only research is read-only
    inherited = Inherited(trail=provenance.inherit(act.state.trail), trusted=act.trusted_text())
    child_input["provenance"] = inherited.to_json()
    child_input["depth"] = act.depth + 1
    child = await act.run.spawn(
        TaskSpec(kind=AGENT_KIND, title=spawn.title or spawn.instructions[:60], input=child_input)
    )
    condition = WaitCondition(kind="children")
    return act.suspend_on(
        Waiting(kind="children", call_id=call.id, children=(child,), condition=condition)
    )


HANDLERS: dict[type[Any], Handler] = {
    Finish: _finish,
    Abort: _abort,
    Suspend: suspend.suspend,
    Spawn: _spawn,
    GoalWrite: _goal_write,
    Progress: _progress,
    Remember: _remember,
    ReadArtifact: _read_artifact,
    LoadSkill: _skill,
    ProposeSkill: _skill,
    FollowUpLater: _follow_up,
    ReportToPerson: _report,
}
"""The handler of each directive type."""
