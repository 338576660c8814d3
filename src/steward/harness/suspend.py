"""Suspending an agent task: on what a wait tool asked for, on the person's approval, on a
hand-off, on a budget stop. A wait leaves its tool call pending and records what it waits for
(:class:`~steward.harness.state.Waiting`); the next activation resumes from that record
(``steward.harness.resume``). The notifications that tell the person a task waits on them are
sent from here."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import structlog

from steward.domain import Approval, ApprovalPreview, ApprovalStatus, WaitCondition, args_hash
from steward.domain.outcome import Outcome, Wait
from steward.domain.roles import plain_line
from steward.domain.wording import reason_in_words
from steward.errors import EffectFailed, NotFound, Signal, StewardRuntimeError
from steward.harness.activation import Activation
from steward.harness.budget import Exhausted
from steward.harness.control import Suspend
from steward.harness.state import Waiting
from steward.harness.tools import Preview, Tool
from steward.models.base import ToolCall

log = structlog.get_logger(__name__)

MOST_FACTS = 20
"""The most labelled lines a preview shows (a long form's first ones)."""
LABEL_CHARS = 60
"""The longest label shown."""
FACT_CHARS = 300
"""The longest value shown (a long text field is cut, and says so)."""
NOTICE_FACTS = 8
"""The most of them a notification carries (a push message holds 4 KB; the dashboard page it
links to shows them all)."""
NOTICE_FACT_CHARS = 120
"""The longest value a notification carries."""


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
) -> Outcome | None:
    """Ask the person to approve the call, showing what its tool previews of it; a preview
    that fails with :class:`~steward.harness.tools.ToolError` (or not in time) asks nothing:
    the model is told why."""
    now = act.run.clock.now()
    ttl = act.h.config.approval_ttl
    approval_id = f"apr.{act.task.id}.{act.run.seq + 1}"
    summary = found.summary(args)
    preview = None
    show = found.preview
    if show is not None and not await _asked_already(act, approval_id):
        # a replayed step gets the approval recorded the first time, picture and all: its
        # tool is not asked to look again (a second screenshot of a page that moved on)
        try:
            preview = await _preview(act, show, found, args)
        except EffectFailed as exc:  # a ToolError: the tool says it cannot show it
            return await act.observe(call, f"error: {exc}", True)
        except TimeoutError:
            return await act.observe(
                call,
                f"error: {found.name} could not show the person what it would do: it took "
                f"longer than {found.timeout_seconds:g}s",
                True,
            )
    body = reason_in_words(reason)
    if preview is not None and preview.facts:
        # every channel shows the body as it is: the facts go with the reason, as lines
        body += "\n\n" + "\n".join(
            f"{label}: {_cut(value, NOTICE_FACT_CHARS)}"
            for label, value in preview.facts[:NOTICE_FACTS]
        )
        if len(preview.facts) > NOTICE_FACTS:
            body += f"\n(and {len(preview.facts) - NOTICE_FACTS} more in the dashboard)"
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
            preview=preview,
        ),
        # the person reads why in words wherever it reaches them (a phone, a mail, a chat)
        act.notification("approval", approval_id, f"Approve? {summary}", body),
    )
    condition = WaitCondition(kind="approval", ref=approval.id, until=approval.expires_at)
    return act.suspend_on(
        Waiting(kind="approval", call_id=call.id, approval_id=approval.id, condition=condition)
    )


async def _asked_already(act: Activation, approval_id: str) -> bool:
    try:
        await act.run.approval(approval_id)
    except NotFound:
        return False
    return True


async def _preview(
    act: Activation, show: Preview, found: Tool, args: dict[str, Any]
) -> ApprovalPreview | None:
    """What the tool shows of the call, bounded by its timeout, as plain lines. A preview that
    breaks otherwise is logged and left out: the person still decides on the sentence."""
    try:
        shown = await asyncio.wait_for(show(args, act.tool_context()), found.timeout_seconds)
        facts = tuple(
            (_cut(plain_line(str(label)), LABEL_CHARS), _cut(plain_line(str(value)), FACT_CHARS))
            for label, value in shown.facts[:MOST_FACTS]
        )
    except (TimeoutError, Signal, StewardRuntimeError):
        raise  # a tool's refusal, or the run's own trouble (a lost lease): not ours to hide
    except Exception as exc:
        log.warning("tool preview failed", tool=found.name, error=str(exc))
        return None
    return replace(shown, facts=facts)


def _cut(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


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
