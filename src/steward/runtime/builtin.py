"""Built-in deterministic task kinds, available without a model.

* ``noop`` — takes ``input.steps`` (default 1) empty steps, then succeeds.
* ``note`` — writes ``input.text`` into its goal as a note, then succeeds.
* ``wait_event`` — waits for an event of ``input.type`` matching ``input.match`` (optionally
  until ``input.timeout_seconds``), records it as evidence in the goal, succeeds.

``http_post`` sends a request out of the machine, so it is not here: it is registered where
the application wires the sentinel and the egress broker (:mod:`steward.connectors.post`).
"""

from __future__ import annotations

from datetime import timedelta

from steward.domain.outcome import Outcome, Succeed, Wait
from steward.domain.task import WaitCondition
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


def builtin_harness() -> StepHarness:
    harness = StepHarness()
    harness.register("noop", noop)
    harness.register("note", note)
    harness.register("wait_event", wait_event)
    return harness
