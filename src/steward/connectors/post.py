"""The ``http_post`` task kind: a deterministic POST, through the sentinel and the egress broker.

For each of ``input.calls`` (default 1) steps it POSTs ``input.body`` (JSON) to ``input.url``
through the effect journal with an ``Idempotency-Key`` header and the lease's fencing token
as ``X-Steward-Fence: <task>:<epoch>``; ``input.idempotent`` says whether the service honours
the key (default true).

It lives here, not among the runtime's built-in kinds, because a request leaves the machine:
each time the step runs (a retry under the same key included), before the effect is marked
sent, the person's policy decides it like any action of the ``api.call`` scope — the
connection must offer the scope and, if it names hosts, this host; a deny rule or a hard
limit stops it — and the egress broker sends it, refusing a loopback, private or link-local
address that no connection of the person names.
The person wrote the exact URL and body when creating the task, so a verdict of *ask* that no
rule of theirs gave (the default for an external action) counts as their approval of exactly
this call, and the audit log says so; an *ask* from one of their own rules (``ask``, or
``do_if_preapproved`` without a grant) is honoured: this step cannot wait for an answer, so the
task fails saying which rule asked. *deny* and *handoff* fail it too, and nothing is sent.
"""

from __future__ import annotations

import os
from typing import Any

from steward.connectors.http import API_CALL
from steward.domain.actions import ActionRequest, EffectClass, Sentinel, Verdict
from steward.domain.agent_input import AgentTaskInput
from steward.domain.outcome import Fail, Outcome, Succeed
from steward.errors import EffectFailed, StewardRuntimeError
from steward.runtime.stepfn import Handler, StepContext
from steward.sentinel.egress import AuditFn, EgressBroker, EgressRefused

KIND = "http_post"


class ServiceError(StewardRuntimeError):
    """The service answered 5xx: whether it applied the effect is unknown (retried)."""


def http_post_kind(
    broker: EgressBroker, sentinel: Sentinel, audit: AuditFn | None = None
) -> Handler:
    """The ``http_post`` step function, checked by ``sentinel`` and sent by ``broker``; when
    the task itself stands for the person's approval, that is recorded with ``audit``."""

    async def http_post(ctx: StepContext) -> Outcome | None:
        url = str(ctx.input["url"])
        body: dict[str, Any] = dict(ctx.input.get("body", {}))

        request = ActionRequest(
            person_id=ctx.person_id,
            task_id=ctx.task_id,
            goal_id=ctx.goal_id,
            tool=KIND,
            args={"url": url, "body": body},
            effect=EffectClass.EXTERNAL,
            scopes=(API_CALL,),
            source="builtin",
            wake_reason=str(ctx.wake.get("reason", "")),
            task_input=AgentTaskInput.from_json(ctx.input),
        )
        # decided on every run of the step (a retry under the same key too), before the effect
        # is marked sent: the send itself then stays within its deadline (see runtime.run)
        decision = await sentinel.check(request)
        if decision.verdict in (Verdict.DENY, Verdict.HANDOFF):
            return Fail(reason=f"POST to {url} not sent: {decision.reason}")
        if decision.verdict is Verdict.ASK:
            if not (decision.rule or "").startswith("default:"):
                return Fail(
                    reason=f"POST to {url} not sent: {decision.reason} — your rule asks before "
                    "posting there, and http_post cannot wait for approval; use an agent task"
                )
            if audit is not None:
                # the sentinel logged "ask"; what lets this run is the task the person wrote
                await audit(
                    person_id=ctx.person_id,
                    kind="decision",
                    actor=f"task:{ctx.task_id}",
                    data={
                        "tool": KIND,
                        "verdict": Verdict.ALLOW.value,
                        "basis": "task:written-by-person",
                        "asked": decision.rule,
                        "reason": f"the person's own task names this URL and body ({url})",
                    },
                    now=ctx.now(),
                )

        async def call(key: str, fence: str) -> Any:
            try:
                response = await broker.request(
                    person_id=ctx.person_id,
                    method="POST",
                    url=url,
                    json=body,
                    # the worker's pid lets test services and logs tell which process sent
                    # it; the fence (task:epoch) lets a service refuse a worker that lost
                    # the task
                    headers={
                        "Idempotency-Key": key,
                        "X-Steward-Fence": fence,
                        "X-Steward-Worker": str(os.getpid()),
                    },
                    actor=f"task:{ctx.task_id}",
                    scope=API_CALL,
                )
            except EgressRefused as exc:
                raise EffectFailed(f"POST to {url} not sent: {exc}") from None
            if 400 <= response.status < 500:
                raise EffectFailed(f"{url} refused: {response.status} {response.text[:200]}")
            if response.status >= 500:  # outcome unknown: retried under the same key
                raise ServiceError(f"{url} answered {response.status}")
            return response.json()

        try:
            result = await ctx.effect(
                KIND,
                {"url": url, "body": body},
                call,
                idempotent=bool(ctx.input.get("idempotent", True)),
            )
        except EffectFailed as exc:
            return Fail(reason=str(exc))
        ctx.state.setdefault("results", []).append(result)
        calls = int(ctx.input.get("calls", 1))
        return Succeed(result=ctx.state["results"]) if len(ctx.state["results"]) >= calls else None

    return http_post
