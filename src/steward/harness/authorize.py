"""Running a tool call: parse it, authorize it (one flow, for a call the model just made and for
one the person approved), then execute it — through the effect journal when it acts on the
world — and observe the result."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

import structlog

from steward import telemetry
from steward.domain import Approval, Artifact
from steward.domain.actions import Verdict, provenance_reason
from steward.domain.outcome import Outcome
from steward.errors import EffectFailed, Signal, StewardRuntimeError
from steward.harness import suspend
from steward.harness.activation import Activation
from steward.harness.directives import direct
from steward.harness.tools import Tool, ToolArgumentError
from steward.models.base import ToolCall
from steward.sentinel import provenance

log = structlog.get_logger(__name__)


async def run_call(act: Activation, call: ToolCall) -> Outcome | None:
    """The first pending call, as the model made it."""
    found = act.h.tools.get(call.name)
    offered = {t.name for t in act.offered_tools()}
    if found is None or call.name not in offered:
        return await act.observe(
            call, f"error: unknown tool {call.name!r}; use one of: {sorted(offered)}", True
        )
    try:
        args = found.parse_arguments(call.arguments)
    except ToolArgumentError as exc:
        return await act.observe(call, f"error: {exc}", True)
    return await authorize(act, call, found, args)


async def authorize(
    act: Activation,
    call: ToolCall,
    found: Tool,
    args: dict[str, Any],
    approved: Approval | None = None,
) -> Outcome | None:
    """Ask the sentinel about a call and act on its verdict. ``approved``: the person approved
    this call — an answer to "ask", nothing else: a rule or revocation since then still
    denies or hands off."""
    if await _already_attempted(act, found):
        return await execute(act, call, found, args)
    request = act.request(found, args)
    with telemetry.span("sentinel decision", tool=found.name) as current:
        decision = await act.h.sentinel.check(request)
        current.set_attribute("verdict", decision.verdict.value)
    telemetry.sentinel_decided(decision.verdict.value)
    if decision.verdict is Verdict.DENY:
        return await act.observe(call, f"denied: {decision.reason}", True)
    if decision.verdict is Verdict.HANDOFF:
        return await suspend.hand_off(act, call, found, args, decision.reason)
    if approved is not None:
        return await execute(act, call, found, args)
    unvouched = request.untrusted_args or request.data_classes
    if decision.verdict is Verdict.ALLOW:
        if unvouched and not decision.vouched:
            # unless the sentinel found the person's grant for them, values from others' text
            # do not steer an action, and the person's sensitive data does not leave
            return await suspend.ask_approval(act, call, found, args, provenance_reason(request))
        return await execute(act, call, found, args)
    reason = decision.reason
    if unvouched and decision.rule != "provenance":
        # asked for another reason: the person still sees where the values came from
        reason = f"{reason}; {provenance_reason(request)}"
    return await suspend.ask_approval(act, call, found, args, reason)


async def _already_attempted(act: Activation, found: Tool) -> bool:
    """This step's effect was authorised and sent before a crash: settle it through the
    journal (retry under its key, reconcile, or ask the person) whatever a policy says now —
    a new verdict must not make it run again under another key, nor hide that it may have
    happened."""
    return found.effect.journalled and await act.run.attempted(act.run.seq + 1)


async def execute(
    act: Activation, call: ToolCall, found: Tool, args: dict[str, Any]
) -> Outcome | None:
    with telemetry.span("tool", tool=found.name, effect=found.effect.value):
        return await _run_tool(act, call, found, args)


async def _run_tool(
    act: Activation, call: ToolCall, found: Tool, args: dict[str, Any]
) -> Outcome | None:
    ctx = act.tool_context()
    if found.effect.journalled:

        async def send(key: str, fence: str) -> Any:
            keyed = replace(ctx, idempotency_key=key, fence=fence)
            return await asyncio.wait_for(found.invoke(args, keyed), found.timeout_seconds)

        try:
            # Anything but a definite failure propagates: the effect journal has already
            # marked the outcome unknown, and the runtime retries or hands it to the person.
            reconcile = found.reconcile
            result = await act.run.effect(
                found.name,
                args,
                send,
                idempotent=found.idempotent,
                reconcile=None
                if reconcile is None
                else (lambda key: reconcile(key, args, replace(ctx, idempotency_key=key))),
            )
        except EffectFailed as exc:
            return await act.observe(call, f"error: {exc}", True)
    else:
        try:
            result = await asyncio.wait_for(found.invoke(args, ctx), found.timeout_seconds)
        except TimeoutError:
            return await act.observe(
                call, f"error: {found.name} timed out after {found.timeout_seconds:g}s", True
            )
        except (EffectFailed, ToolArgumentError) as exc:
            return await act.observe(call, f"error: {exc}", True)
        except (Signal, StewardRuntimeError, asyncio.CancelledError):
            raise
        except Exception as exc:
            log.info("tool failed", tool=found.name, error=str(exc))
            return await act.observe(call, f"error: {found.name} failed: {exc}", True)
    if ctx.items_read:
        act.state.trail.read_items(ctx.items_read)
    if found.source == "control":
        return await direct(act, call, result)
    observation = await _render(act, found.name, result)
    if found.untrusted_output:
        full = result if isinstance(result, str) else json.dumps(result, default=str)
        provenance.remember(act.state.trail, full, source=found.name, step=act.run.seq + 1)
    return await act.observe(call, observation)


async def _render(act: Activation, name: str, result: Any) -> str:
    """The observation the model sees; a large output becomes an artifact and an excerpt."""
    text = result if isinstance(result, str) else json.dumps(result, default=str)
    config = act.h.config
    if len(text) <= config.artifact_threshold_chars:
        return text
    step = act.run.seq + 1
    person = act.task.person_id
    relative = act.h.workspace.artifact_path(person, act.task.id, step, name)
    size, digest = await act.h.workspace.write_text(person, relative, text)
    artifact = await act.run.add_artifact(
        Artifact(
            id=f"art.{act.task.id}.{step}",
            person_id=person,
            task_id=act.task.id,
            name=name,
            path=relative,
            size=size,
            sha256=digest,
            media_type="text/plain",
            created_at=act.run.clock.now(),
        )
    )
    return (
        f"{text[: config.excerpt_chars]}\n…[output is {len(text)} characters; stored as "
        f"artifact {artifact.id}; read more with read_artifact(artifact_id="
        f"'{artifact.id}', offset={config.excerpt_chars})]"
    )
