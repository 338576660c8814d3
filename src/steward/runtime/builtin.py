"""Built-in deterministic task kinds, available without a model.

* ``noop`` — takes ``input.steps`` (default 1) empty steps, then succeeds.
* ``note`` — writes ``input.text`` into its goal as a note, then succeeds.
* ``wait_event`` — waits for an event of ``input.type`` matching ``input.match`` (optionally
  until ``input.timeout_seconds``), records it as evidence in the goal, succeeds.
* ``http_post`` — for each of ``input.calls`` (default 1) steps, POSTs ``input.body`` to
  ``input.url`` through the effect journal with an ``Idempotency-Key`` header and the
  lease's fencing token as ``X-Steward-Fence: <task>:<epoch>``;
  ``input.idempotent`` says whether the service honours it (default true).
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

import httpx

from steward.domain.outcome import Outcome, Succeed, Wait
from steward.domain.task import WaitCondition
from steward.errors import EffectFailed
from steward.runtime.stepfn import StepContext, StepHarness


async def noop(ctx: StepContext) -> Outcome | None:
    done = ctx.state.get("done", 0) + 1
    ctx.state["done"] = done
    return Succeed(result={"steps": done}) if done >= int(ctx.input.get("steps", 1)) else None


async def note(ctx: StepContext) -> Outcome | None:
    await ctx.write_goal(record=("note", {"text": str(ctx.input.get("text", ""))}))
    return Succeed(result=None)


async def wait_event(ctx: StepContext) -> Outcome | None:
    if not ctx.state.get("waiting"):
        ctx.state["waiting"] = True
        timeout = ctx.input.get("timeout_seconds")
        return Wait(
            condition=WaitCondition(
                kind="event",
                event_type=str(ctx.input["type"]),
                match=dict(ctx.input.get("match", {})),
                until=ctx.now() + timedelta(seconds=float(timeout)) if timeout else None,
                since=ctx.created_at,
            )
        )
    event = ctx.wake.get("event")
    if event is not None and ctx.goal_id is not None:
        await ctx.write_goal(record=("evidence", {"event": event}))
    return Succeed(result={"event": event, "timed_out": event is None})


async def http_post(ctx: StepContext) -> Outcome | None:
    url = str(ctx.input["url"])
    body: dict[str, Any] = dict(ctx.input.get("body", {}))

    async def call(key: str, fence: str) -> Any:
        async with httpx.AsyncClient(timeout=10.0) as client:
            response = await client.post(
                url,
                json=body,
                # the worker's pid lets test services and logs tell which process sent it; the
                # fence (task:epoch) lets a service refuse a worker that lost the task
                headers={
                    "Idempotency-Key": key,
                    "X-Steward-Fence": fence,
                    "X-Steward-Worker": str(os.getpid()),
                },
            )
        if 400 <= response.status_code < 500:
            raise EffectFailed(f"{url} refused: {response.status_code} {response.text[:200]}")
        response.raise_for_status()  # 5xx: outcome unknown, retried under the same key
        return response.json()

    result = await ctx.effect(
        "http_post",
        {"url": url, "body": body},
        call,
        idempotent=bool(ctx.input.get("idempotent", True)),
    )
    ctx.state.setdefault("results", []).append(result)
    calls = int(ctx.input.get("calls", 1))
    return Succeed(result=ctx.state["results"]) if len(ctx.state["results"]) >= calls else None


def builtin_harness() -> StepHarness:
    harness = StepHarness()
    harness.register("noop", noop)
    harness.register("note", note)
    harness.register("wait_event", wait_event)
    harness.register("http_post", http_post)
    return harness
