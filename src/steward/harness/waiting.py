"""Waiting and resuming: how an agent activation suspends its task, and how the next one
turns what woke it into the waiting call's observation.

A wait leaves its tool call pending and records ``state["waiting"]``: its kind (``approval``,
``children``, ``until``, ``event``, ``input``, ``handoff``, ``budget`` or a chat ``reply``) and
the condition the runtime sleeps on. The next activation resumes from that record, never from
memory of the one that suspended; a wake-up that is not the awaited thing sleeps again. The
notifications that tell the person a task waits on them are sent from here too.
"""

from __future__ import annotations

import abc
import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from steward.domain import (
    Approval,
    ApprovalStatus,
    Notification,
    Task,
    WaitCondition,
    args_hash,
)
from steward.domain.actions import ActionRequest, Verdict
from steward.domain.outcome import Outcome, Wait
from steward.harness.control import Suspend
from steward.harness.tools import Tool, ToolArgumentError
from steward.models.base import ToolCall
from steward.runtime.run import TaskRun
from steward.sentinel import provenance

if TYPE_CHECKING:
    from steward.harness.agent import AgentHarness
    from steward.store import Store


class WaitingActivation(abc.ABC):
    """The part of an agent activation that suspends its task and resumes it. The activation
    (``agent._Activation``) sets the attributes below and provides the steps a resumed wait
    ends in: observing the waiting call, or running it once it is approved."""

    h: AgentHarness
    run: TaskRun
    store: Store
    task: Task

    @property
    def state(self) -> dict[str, Any]:
        return self.run.state

    # --- what the activation provides ---------------------------------------------------

    @abc.abstractmethod
    async def _commit(self, *, kind: str, output: dict[str, Any]) -> None: ...

    @abc.abstractmethod
    async def _observe(
        self, call: ToolCall, observation: str, error: bool = False
    ) -> Outcome | None: ...

    @abc.abstractmethod
    async def _say(self, text: str) -> None: ...

    @abc.abstractmethod
    async def _already_attempted(self, found: Tool) -> bool: ...

    @abc.abstractmethod
    def _request(self, found: Tool, args: dict[str, Any]) -> ActionRequest: ...

    @abc.abstractmethod
    async def _execute(
        self, call: ToolCall, found: Tool, args: dict[str, Any]
    ) -> Outcome | None: ...

    # --- suspending ---------------------------------------------------------------------

    async def _suspend(self, call: ToolCall, directive: Suspend) -> Outcome:
        """Suspend on what a wait tool asked for (a time, an event, the person's answer); an
        event wait looks from the last event delivered (see ``_mark_event``)."""
        condition = directive.condition
        waiting: dict[str, Any] = {"kind": directive.kind, "call_id": call.id}
        mark = self.state.get("event_mark")
        if directive.kind == "event" and mark and condition.since is not None:
            since = datetime.fromtimestamp(mark["at"], UTC)
            condition = replace(
                condition, since=min(since, condition.since), seen=list(mark["ids"])
            )
        if directive.kind == "input":
            ref = f"q.{self.task.id}.{self.run.seq + 1}"
            condition = replace(condition, ref=ref)
            await self._notify("question", ref, directive.question or "", "")
        return self._suspend_on(waiting, condition)

    def _suspend_on(self, waiting: dict[str, Any], condition: WaitCondition) -> Outcome:
        waiting["condition"] = condition.to_json()
        self.state["waiting"] = waiting
        self.run.decide(kind="suspend", output={"waiting": waiting})
        return Wait(condition=condition)

    # --- authorization ------------------------------------------------------------------

    async def _ask_approval(
        self, call: ToolCall, found: Tool, args: dict[str, Any], reason: str
    ) -> Outcome:
        now = self.run.clock.now()
        ttl = self.h.config.approval_ttl
        approval_id = f"apr.{self.task.id}.{self.run.seq + 1}"
        approval = await self.store.inbox.request_approval(
            self.run.fence,
            Approval(
                id=approval_id,
                person_id=self.task.person_id,
                task_id=self.task.id,
                goal_id=self.task.goal_id,
                step_seq=self.run.seq + 1,
                tool=found.name,
                args=args,
                args_hash=args_hash(found.name, args),
                reason=reason,
                scopes=found.scopes,
                roles=None if found.roles is None else dict(found.roles),
                status=ApprovalStatus.PENDING,
                created_at=now,
                expires_at=now + ttl if ttl is not None else None,
            ),
            self._notification(
                "approval",
                approval_id,
                f"Approve {found.name}?",
                f"{reason}\n{found.name}({json.dumps(args, sort_keys=True, default=str)})",
            ),
            lease_now=self.run.clock.lease_now(),
        )
        condition = WaitCondition(kind="approval", ref=approval.id, until=approval.expires_at)
        return self._suspend_on(
            {"kind": "approval", "call_id": call.id, "approval_id": approval.id}, condition
        )

    async def _hand_off(
        self, call: ToolCall, found: Tool, args: dict[str, Any], reason: str
    ) -> Outcome:
        ref = f"h.{self.task.id}.{self.run.seq + 1}"
        action = f"{found.name}({json.dumps(args, sort_keys=True, default=str)})"
        await self._notify(
            "handoff", ref, f"Please do this yourself: {found.name}", f"{reason}\n{action}"
        )
        condition = WaitCondition(
            kind="input", ref=ref, prompt=f"Steward cannot do {action}: {reason}. Reply when done."
        )
        return self._suspend_on({"kind": "handoff", "call_id": call.id}, condition)

    # --- resuming -----------------------------------------------------------------------

    async def _resume(self, waiting: dict[str, Any]) -> Outcome | None:
        """Turn what the task waited for into the next step, or go back to sleep if it has
        not happened yet (woken early by recovery or a timeout that is not due)."""
        kind = waiting["kind"]
        wake = dict(self.state.get("wake") or {})
        condition = WaitCondition.from_json(waiting["condition"])
        call = ToolCall.from_json(self.state["pending"][0]) if self.state["pending"] else None
        timed_out = wake.get("reason") == "timeout"
        if kind == "approval":
            assert call is not None
            return await self._resume_approval(call, waiting, condition)
        if kind == "children":
            assert call is not None
            return await self._resume_children(call, waiting, condition)
        if kind == "until":
            assert call is not None
            if condition.until is not None and self.run.clock.now() < condition.until:
                return Wait(condition=condition)
            return await self._observe(call, f"waited until {self.run.clock.now().isoformat()}")
        if kind == "event":
            assert call is not None
            if "event" in wake:
                self._mark_event(wake["event"])
                event = json.dumps(wake["event"], sort_keys=True, default=str)
                source = f"event:{wake['event'].get('type')}"
                provenance.remember(self.state, event, source=source, step=self.run.seq + 1)
                return await self._observe(call, f"event arrived: {event}")
            if timed_out:
                return await self._observe(call, "no matching event arrived before the timeout")
            return Wait(condition=condition)
        # the person's input: a question's answer, a chat reply, a hand-off or budget stop
        answer = wake.get("answer")
        if answer is not None:
            provenance.trust(self.state, str(answer))
        if answer is None:
            if timed_out and call is not None:
                return await self._observe(call, "the person did not answer in time", True)
            return Wait(condition=condition)
        if kind == "input":
            assert call is not None
            return await self._observe(call, f"the person answered: {answer}")
        if kind == "handoff":
            assert call is not None
            return await self._observe(call, f"the person handled it themselves: {answer}")
        if kind == "budget":
            self.state.pop("waiting", None)
            await self._commit(kind="resumed", output={"answer": answer})
            return None
        await self._say(str(answer))  # a chat reply
        return None

    def _mark_event(self, event: dict[str, Any]) -> None:
        """Remember the last event delivered (its time, and the ids delivered at that time): the
        next event wait looks from there, so an event that arrived while the task was busy is
        not lost, and the delivered ones do not match again."""
        mark = self.state.get("event_mark") or {}
        at = event["received_at"]
        ids = [i for i in mark.get("ids", []) if mark.get("at") == at]
        self.state["event_mark"] = {"at": at, "ids": [*ids, event["id"]]}

    async def _resume_approval(
        self, call: ToolCall, waiting: dict[str, Any], condition: WaitCondition
    ) -> Outcome | None:
        approval = await self.store.inbox.get_approval(waiting["approval_id"])
        if approval.status is ApprovalStatus.PENDING:
            expired = (
                approval.expires_at is not None and self.run.clock.now() >= approval.expires_at
            )
            if not expired:
                return Wait(condition=condition)
            approval = await self.store.inbox.expire_approval(approval.id, now=self.run.clock.now())
        if approval.status is ApprovalStatus.EXPIRED:
            return await self._observe(call, "not done: the approval request expired", True)
        if approval.status is ApprovalStatus.DENIED:
            note = f" ({approval.note})" if approval.note else ""
            return await self._observe(call, f"not done: the person denied it{note}", True)
        found = self.h.tools.get(call.name)
        if found is None:
            return await self._observe(call, f"error: tool {call.name!r} is gone", True)
        try:
            args = found.parse_arguments(call.arguments)
        except ToolArgumentError as exc:
            return await self._observe(call, f"error: {exc}", True)
        if args_hash(found.name, args) != approval.args_hash:
            return await self._observe(call, "not done: the approval was for other arguments", True)
        if await self._already_attempted(found):
            return await self._execute(call, found, args)
        # the approval answers "ask", nothing else: a rule or revocation since then still bites
        decision = await self.h.sentinel.check(self._request(found, args))
        if decision.verdict is Verdict.DENY:
            return await self._observe(call, f"denied: {decision.reason}", True)
        if decision.verdict is Verdict.HANDOFF:
            return await self._hand_off(call, found, args, decision.reason)
        return await self._execute(call, found, args)

    async def _resume_children(
        self, call: ToolCall, waiting: dict[str, Any], condition: WaitCondition
    ) -> Outcome | None:
        children = [await self.store.tasks.get_task(c) for c in waiting.get("children", [])]
        if any(not child.status.terminal for child in children):
            return Wait(condition=condition)
        for child in children:
            provenance.absorb(self.state, child.state, child_id=child.id)
        report = [
            {"task": c.id, "status": c.status.value, "result": c.result, "error": c.error}
            for c in children
        ]
        return await self._observe(call, json.dumps(report, default=str))

    async def _suspend_for_budget(self, reason: str) -> Outcome:
        ref = f"b.{self.task.id}.{self.run.seq + 1}"
        await self._notify(
            "budget",
            ref,
            f"Task paused: {reason}",
            f"'{self.task.title or self.task.id}' stopped instead of spending more. "
            "Answer the task to let it continue (raise the goal's budget first if that one "
            "ran out), or cancel it.",
        )
        condition = WaitCondition(kind="input", ref=ref, prompt=f"Budget reached: {reason}")
        return self._suspend_on({"kind": "budget", "reason": reason}, condition)

    # --- notifications ------------------------------------------------------------------

    def _notification(self, kind: str, ref: str, title: str, body: str) -> Notification:
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

    async def _notify(self, kind: str, ref: str, title: str, body: str) -> None:
        await self.store.inbox.notify(
            self._notification(kind, ref, title, body),
            fence=self.run.fence,
            lease_now=self.run.clock.lease_now(),
        )
