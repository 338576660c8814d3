"""Resuming a suspended agent task: turn what it waited for into the waiting call's
observation, or go back to sleep if that has not happened yet (woken early by recovery, or by a
timeout that is not due). The record of the wait (:class:`~steward.harness.state.Waiting`) is
all it goes by, never memory of the activation that suspended."""

from __future__ import annotations

import json
from typing import Any

from steward.domain import ApprovalStatus, args_hash
from steward.domain.outcome import Outcome, Wait
from steward.domain.trail import Trail
from steward.domain.wake import answer_of, event_of
from steward.harness.activation import Activation, Node
from steward.harness.authorize import authorize
from steward.harness.state import EventMark, Waiting
from steward.harness.tools import ToolArgumentError
from steward.models.base import ToolCall
from steward.sentinel import provenance


class Resume(Node):
    """The first step of an activation of a suspended task."""

    def __init__(self, waiting: Waiting) -> None:
        self.waiting = waiting

    async def run(self, act: Activation) -> Outcome | None:
        waiting = self.waiting
        kind = waiting.kind
        wake = act.wake
        condition = waiting.condition
        call = act.state.pending[0] if act.state.pending else None
        timed_out = wake.reason == "timeout"
        if kind == "approval":
            assert call is not None
            assert waiting.approval_id is not None
            return await _approval(act, call, waiting.approval_id, waiting)
        if kind == "children":
            assert call is not None
            return await _children(act, call, waiting)
        if kind == "until":
            assert call is not None
            if condition.until is not None and act.run.clock.now() < condition.until:
                return Wait(condition=condition)
            return await act.observe(call, f"waited until {act.run.clock.now().isoformat()}")
        if kind == "event":
            assert call is not None
            event = event_of(wake)
            if event is not None:
                _mark_event(act, event)
                text = provenance.remember_event(act.state.trail, event, step=act.run.seq + 1)
                return await act.observe(call, f"event arrived: {text}")
            if timed_out:
                return await act.observe(call, "no matching event arrived before the timeout")
            return Wait(condition=condition)
        # the person's input: a question's answer, a chat reply, a hand-off or budget stop
        answer = answer_of(wake)
        if answer is None:
            if timed_out and call is not None:
                return await act.observe(call, "the person did not answer in time", True)
            return Wait(condition=condition)
        provenance.trust(act.state.trail, str(answer))
        if kind == "input":
            assert call is not None
            return await act.observe(call, f"the person answered: {answer}")
        if kind == "handoff":
            assert call is not None
            return await act.observe(call, f"the person handled it themselves: {answer}")
        if kind == "budget":
            act.state.waiting = None
            await act.commit(kind="resumed", output={"answer": answer})
            return None
        await act.say(str(answer))  # a chat reply
        return None


def _mark_event(act: Activation, event: dict[str, Any]) -> None:
    """Remember the last event delivered (see :class:`EventMark`)."""
    mark = act.state.event_mark or EventMark(at=event["received_at"], ids=())
    act.state.event_mark = mark.after(event["id"], event["received_at"])


async def _approval(
    act: Activation, call: ToolCall, approval_id: str, waiting: Waiting
) -> Outcome | None:
    approval = await act.run.approval(approval_id)
    if approval.status is ApprovalStatus.PENDING:
        expired = approval.expires_at is not None and act.run.clock.now() >= approval.expires_at
        if not expired:
            return Wait(condition=waiting.condition)
        approval = await act.run.expire_approval(approval.id)
    if approval.status is ApprovalStatus.EXPIRED:
        return await act.observe(call, "not done: the approval request expired", True)
    if approval.status is ApprovalStatus.DENIED:
        note = f" ({approval.note})" if approval.note else ""
        return await act.observe(call, f"not done: the person denied it{note}", True)
    found = act.h.tools.get(call.name)
    if found is None:
        return await act.observe(call, f"error: tool {call.name!r} is gone", True)
    try:
        args = found.parse_arguments(call.arguments)
    except ToolArgumentError as exc:
        return await act.observe(call, f"error: {exc}", True)
    if args_hash(found.name, args) != approval.args_hash:
        return await act.observe(call, "not done: the approval was for other arguments", True)
    return await authorize(act, call, found, args, approved=approval)


async def _children(act: Activation, call: ToolCall, waiting: Waiting) -> Outcome | None:
    children = [await act.run.subtask(c) for c in waiting.children]
    if any(not child.status.terminal for child in children):
        return Wait(condition=waiting.condition)
    for child in children:
        child_trail = Trail.from_json(child.state)
        provenance.absorb(act.state.trail, child_trail, child_id=child.id)
    report = [
        {"task": c.id, "status": c.status.value, "result": c.result, "error": c.error}
        for c in children
    ]
    return await act.observe(call, json.dumps(report, default=str))
