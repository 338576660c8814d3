"""Suspending an agent task: on what a wait tool asked for, on the person's approval, on a
hand-off, on a budget stop. A wait leaves its tool call pending and records what it waits for
(:class:`~steward.harness.state.Waiting`); the next activation resumes from that record
(``steward.harness.resume``). The notifications that tell the person a task waits on them are
sent from here."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from steward.domain import Approval, ApprovalStatus, WaitCondition, args_hash
from steward.domain.outcome import Outcome, Wait
from steward.domain.wording import reason_in_words
from steward.harness.activation import Activation
from steward.harness.budget import Exhausted
from steward.harness.control import Suspend
from steward.harness.state import Waiting
from steward.harness.tools import Tool
from steward.models.base import ToolCall


async def suspend(act: Activation, call: ToolCall, directive: Suspend) -> Outcome:
    """Suspend on what a wait tool asked for (a time, an event, the person's answer); an event
    wait looks from the last event delivered (see ``EventMark``)."""
    condition = directive.condition
    mark = act.state.event_mark
    if directive.kind == "event" and mark and condition.since is not None:
        since = datetime.fromtimestamp(mark.at, UTC)
        condition = replace(condition, since=min(since, condition.since), seen=list(mark.ids))
    if directive.kind == "input":
        ref = f"q.{act.task.id}.{act.run.seq + 1}"
        condition = replace(condition, ref=ref)
        await act.notify("question", ref, directive.question or "", "")
    return act.suspend_on(Waiting(kind=directive.kind, call_id=call.id, condition=condition))


async def ask_approval(
    act: Activation, call: ToolCall, found: Tool, args: dict[str, Any], reason: str
) -> Outcome:
    now = act.run.clock.now()
    ttl = act.h.config.approval_ttl
    approval_id = f"apr.{act.task.id}.{act.run.seq + 1}"
    summary = found.summary(args)
    approval = await act.run.request_approval(
        Approval(
            id=approval_id,
            person_id=act.task.person_id,
            task_id=act.task.id,
            goal_id=act.task.goal_id,
            step_seq=act.run.seq + 1,
            tool=found.name,
            args=args,
            args_hash=args_hash(found.name, args),
            reason=reason,
            scopes=found.scopes,
            roles=None if found.roles is None else dict(found.roles),
            status=ApprovalStatus.PENDING,
            created_at=now,
            expires_at=now + ttl if ttl is not None else None,
            summary=summary,
        ),
        # the person reads why in words wherever it reaches them (a phone, a mail, a chat)
        act.notification("approval", approval_id, f"Approve? {summary}", reason_in_words(reason)),
    )
    condition = WaitCondition(kind="approval", ref=approval.id, until=approval.expires_at)
    return act.suspend_on(
        Waiting(kind="approval", call_id=call.id, approval_id=approval.id, condition=condition)
    )


async def hand_off(
    act: Activation, call: ToolCall, found: Tool, args: dict[str, Any], reason: str
) -> Outcome:
    ref = f"h.{act.task.id}.{act.run.seq + 1}"
    action = found.summary(args)
    await act.notify("handoff", ref, f"Please do this yourself: {action}", reason)
    condition = WaitCondition(
        kind="input", ref=ref, prompt=f"Steward cannot do {action}: {reason}. Reply when done."
    )
    return act.suspend_on(Waiting(kind="handoff", call_id=call.id, condition=condition))


async def for_budget(act: Activation, stop: Exhausted) -> Outcome:
    """Stop spending and ask the person whether to go on (the goal's cap, when it was that,
    goes with the outcome: the runtime reports it in the same transaction)."""
    reason = stop.reason
    ref = f"b.{act.task.id}.{act.run.seq + 1}"
    await act.notify(
        "budget",
        ref,
        f"Task paused: {reason}",
        f"'{act.task.title or act.task.id}' stopped instead of spending more. "
        "Answer the task to let it continue (raise the goal's budget first if that one "
        "ran out), or cancel it.",
    )
    condition = WaitCondition(kind="input", ref=ref, prompt=f"Budget reached: {reason}")
    act.suspend_on(Waiting(kind="budget", reason=reason, condition=condition))
    return Wait(condition=condition, budget=stop.goal)
