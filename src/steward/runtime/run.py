"""What a harness holds during one activation: checkpoints, effects and goal writes, all fenced.

The fence guards the database, not the world: a worker that lost its lease cannot write, but
nothing in the database stops it from sending a request it had already decided to send. So an
effect is sent at most once like this:

* Marking it ``sent`` is a fenced write that also stores a *send deadline*: the lease's expiry
  at that moment, by the database's clock. The sender may start the request only within
  :data:`SEND_SHARE` of the lease left then, measured from just before the marking on its
  own monotonic clock (one that keeps counting while the process is stopped or the machine
  sleeps), and checks that right before the request; past it, it does not send and records
  that it did not (a fenced write: if its lease is gone, the effect stays ``sent`` and whoever
  comes next treats it as in doubt).
* Until the send deadline has passed, an in-doubt effect cannot be decided "not applied" (by
  the person, or by a reconcile hook whose answer would lead to sending it again); and a new
  owner, which can claim the task only after the lease expired, comes later anyway.
* Every request carries the fencing token ``task:epoch`` (the built-in ``http_post`` sends it
  as ``X-Steward-Fence``): a service that remembers the highest epoch it saw for a task can
  refuse a request from an older one, whatever the timing.

The residual window, honestly: a process paused (or a request delayed) between its last check
of the deadline and its bytes reaching the service for longer than the margin between the
sender's deadline and the stored one (half the lease left at marking, normally a third of the
lease or more) can still deliver a request after someone decided, from the service's records,
that it never came. The window includes what the tool does before its bytes leave (for
``http_post``, the egress broker's address check: a name resolution and a read of the
person's connections). A request to a service that checks the fencing token closes that window;
for any other, the margin is the bound. The monotonic clock and the database's clock are
assumed to run at the same rate (a step of the database host's wall clock moves the stored
deadline by as much).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

import structlog

from steward import telemetry
from steward.domain import (
    Approval,
    Artifact,
    Effect,
    EffectStatus,
    Goal,
    Notification,
    Step,
    Task,
    TaskSpec,
)
from steward.domain.channel import Importance
from steward.domain.clock import Clock
from steward.domain.followup import FollowUp
from steward.domain.goal import GoalRecordKind
from steward.domain.ids import effect_key
from steward.domain.journal import APPLIED_RESULT_UNKNOWN
from steward.domain.outcome import Claim
from steward.domain.report import Report, report_id
from steward.domain.wake import WakeReason
from steward.errors import (
    DatabaseUnavailable,
    EffectFailed,
    EffectInDoubt,
    EffectMaybeInFlight,
    NotFound,
    NotSent,
    RetryLater,
    StopRequested,
)
from steward.failpoints import failpoint
from steward.sendby import elapsed as _elapsed
from steward.sendby import sending_by
from steward.store import Fence, FinalStep, Store

log = structlog.get_logger(__name__)

EffectCall = Callable[[str, str], Awaitable[Any]]
"""Performs a side effect given its idempotency key and the fencing token of the lease it is
sent under (``task:epoch``, for services that can refuse an older epoch); returns the tool's
result."""
Reconcile = Callable[[str], Awaitable[tuple[bool, Any] | None]]
"""Asks the service whether the effect with this key happened: ``(True, result)``,
``(False, None)`` for not applied, or None if it cannot tell. A result of None with
``True`` is recorded as :data:`~steward.domain.journal.APPLIED_RESULT_UNKNOWN`."""

SEND_SHARE = 0.5
"""Of the lease left when an effect is marked sent, the share within which its request must
start; the rest is margin for a request started just in time to reach the service."""
SEND_TRIES = 3
"""Times an activation marks an effect sent and misses its send deadline (a stalled process,
a lease nearly out) before it gives the step back to be retried."""


class TaskRun:
    """One activation's handle on its task: a harness reads and writes the store only through
    it, and every write goes through the claim's fence."""

    def __init__(
        self,
        *,
        store: Store,
        clock: Clock,
        claim: Claim,
        draining: asyncio.Event | None = None,
    ) -> None:
        self.store = store
        self.draining = draining
        """Set when the worker shuts down: the activation hands the task back at its next
        checkpoint instead of running to the end."""
        self.clock = clock
        self.claim = claim
        self.fence = Fence.of(claim)
        self.state: dict[str, Any] = dict(claim.task.state)
        """Handler state as of the last committed step; harnesses mutate a copy and commit it."""
        self.seq = claim.task.step_seq
        """Steps committed so far (over all activations)."""
        self.steps = 0
        """Steps committed in this activation."""
        self.usage: dict[str, float] = {}
        """Usage the harness accumulates (tokens, cost_usd, ...)."""
        self._effects_in_step = 0
        self._spawned_in_step = 0
        self._goal_writes_in_step = 0
        self._follow_ups_in_step = 0
        self._reports_in_step = 0
        self._usage_dirty = False
        self.final_step: FinalStep | None = None
        """Set by :meth:`decide`; the worker commits it with the outcome."""

    @property
    def task(self) -> Task:
        return self.claim.task

    @property
    def wake(self) -> WakeReason:
        """Why this activation started."""
        return self.claim.wake

    def add_usage(self, **amounts: float) -> None:
        """Add to this activation's usage; saved with the next checkpoint."""
        for name, amount in amounts.items():
            self.usage[name] = self.usage.get(name, 0) + amount
        self._usage_dirty = True

    async def checkpoint(self, *, kind: str = "step", output: Any = None) -> None:
        """Commit the next step and :attr:`state` atomically. Raises StopRequested if the task
        was cancelled or paused meanwhile, LeaseLost if another worker owns it now."""
        with telemetry.span("checkpoint", kind=kind, seq=self.seq + 1):
            control = await self.store.activations.checkpoint(
                self.fence,
                seq=self.seq + 1,
                kind=kind,
                output=output,
                state=self.state,
                now=self.clock.now(),
                lease_now=self.clock.lease_now(),
                usage=self.usage if self._usage_dirty else None,
            )
        self.seq += 1
        self.steps += 1
        self._usage_dirty = False
        self._effects_in_step = 0
        self._spawned_in_step = 0
        self._goal_writes_in_step = 0
        self._follow_ups_in_step = 0
        self._reports_in_step = 0
        if control is not None:
            raise StopRequested(control)
        if self.draining is not None and self.draining.is_set():
            raise StopRequested("shutdown")

    def decide(self, *, kind: str = "step", output: Any = None) -> None:
        """Mark the step just computed as the one that decides how the activation ends: it is
        committed atomically with the outcome instead of as a checkpoint of its own."""
        self.final_step = FinalStep(
            seq=self.seq + 1, kind=kind, output=output, state=dict(self.state)
        )

    async def effect(
        self,
        tool: str,
        args: dict[str, Any],
        call: EffectCall,
        *,
        idempotent: bool,
        reconcile: Reconcile | None = None,
    ) -> Any:
        """Perform a side effect at most once, through the effect journal.

        The intent is committed durably before ``call`` runs, and the result after. When a
        previous attempt crashed after sending (outcome unknown), the effect is retried with
        the same key only if the tool honours keys, else reconciled through ``reconcile``, else
        left *in doubt* for the person (:class:`EffectInDoubt`) — never blindly replayed.
        """
        with telemetry.span("effect", tool=tool):
            try:
                result = await self._effect(tool, args, call, idempotent, reconcile)
            except EffectFailed:
                telemetry.effect_ended("failed")
                raise
            except EffectInDoubt:
                telemetry.effect_ended("in_doubt")
                raise
            telemetry.effect_ended("succeeded")
            return result

    async def _effect(
        self,
        tool: str,
        args: dict[str, Any],
        call: EffectCall,
        idempotent: bool,
        reconcile: Reconcile | None,
    ) -> Any:
        key = effect_key(self.task.id, self.seq + 1, self._effects_in_step)
        self._effects_in_step += 1
        effect = await self.store.effects.plan_effect(
            self.fence,
            key=key,
            step_seq=self.seq + 1,
            tool=tool,
            args=args,
            idempotent=idempotent,
            now=self.clock.now(),
            lease_now=self.clock.lease_now(),
        )
        if effect.status is EffectStatus.SUCCEEDED:
            return effect.result
        if effect.status is EffectStatus.FAILED:
            raise EffectFailed(effect.error or f"effect {key} failed")
        if effect.status in (EffectStatus.SENT, EffectStatus.IN_DOUBT):
            effect = await self._settle_unknown(effect, reconcile)
            if effect.status is EffectStatus.SUCCEEDED:
                return effect.result
        return await self._send(effect, call)

    async def _settle_unknown(self, effect: Effect, reconcile: Reconcile | None) -> Effect:
        """An earlier attempt sent this effect and never recorded the answer."""
        if effect.status is EffectStatus.SENT:
            effect = await self._set(effect, EffectStatus.IN_DOUBT, error="outcome unknown")
        log.warning("effect in doubt", key=effect.key, tool=effect.tool)
        if effect.idempotent:
            return effect  # safe: the service dedupes the same key
        if reconcile is not None:
            answer = await reconcile(effect.key)
            if answer is not None:
                applied, result = answer
                if applied:
                    known = APPLIED_RESULT_UNKNOWN if result is None else result
                    return await self._set(effect, EffectStatus.SUCCEEDED, result=known)
                # not applied: send it (the store refuses while its sender may still send)
                return effect
        raise EffectInDoubt(effect.id, effect.key)

    @property
    def fence_token(self) -> str:
        """``task:epoch``: what a service that checks fencing compares across requests."""
        return f"{self.fence.task_id}:{self.fence.epoch}"

    async def _send(self, effect: Effect, call: EffectCall) -> Any:
        # what it goes back to if it is not sent after all: an effect in doubt stays in doubt
        unsent = effect.status
        for _ in range(SEND_TRIES):
            started = _elapsed()
            try:
                window = await self.store.effects.mark_effect_sent(
                    self.fence,
                    effect.id,
                    now=self.clock.now(),
                    lease_now=self.clock.lease_now(),
                )
            except EffectMaybeInFlight as wait:
                raise RetryLater(
                    str(wait), delay_seconds=wait.seconds_left, attempt=False
                ) from wait
            effect = window.effect
            deadline = started + window.lease_seconds_left * SEND_SHARE
            failpoint("effect.after_mark_sent")
            if _elapsed() < deadline:  # the last check: the request starts next, no await between
                failpoint("effect.before_request")  # inside the residual window (see above)
                break
            log.warning("effect not sent: its send deadline passed", key=effect.key)
            effect = await self._unsent(
                effect, unsent, "not sent: its send deadline passed before the request started"
            )
        else:
            raise RetryLater(f"effect {effect.tool} could not start within its send deadline")
        try:
            # the tool's own sender checks the deadline again right before its request
            with sending_by(deadline):
                result = await call(effect.key, self.fence_token)
        except NotSent as exc:
            # certainly not sent (the deadline passed in the tool, a lookup failed, no address
            # took the connection): back to what it was, and the step is tried again
            log.warning("effect not sent", key=effect.key, reason=str(exc))
            await self._unsent(effect, unsent, str(exc))
            if isinstance(exc.__cause__, DatabaseUnavailable):
                raise exc.__cause__ from None  # an outage: the worker requeues, no attempt
            raise RetryLater(f"effect {effect.tool} {exc}") from exc
        except EffectFailed as exc:
            await self._set(effect, EffectStatus.FAILED, error=str(exc))
            raise
        except Exception as exc:
            # We cannot tell whether it happened: in doubt; the retry settles it.
            await self._set(effect, EffectStatus.IN_DOUBT, error=f"{type(exc).__name__}: {exc}")
            raise RetryLater(f"effect {effect.tool} outcome unknown: {exc}") from exc
        await self._set(effect, EffectStatus.SUCCEEDED, result=result)
        return result

    async def _unsent(self, effect: Effect, unsent: EffectStatus, error: str) -> Effect:
        """Record that an effect marked sent was not sent after all."""
        return await self.store.effects.set_effect_status(
            self.fence,
            effect.id,
            unsent,
            now=self.clock.now(),
            error=error,
            lease_now=self.clock.lease_now(),
            not_sent=True,
        )

    async def _set(
        self, effect: Effect, status: EffectStatus, *, result: Any = None, error: str | None = None
    ) -> Effect:
        return await self.store.effects.set_effect_status(
            self.fence,
            effect.id,
            status,
            now=self.clock.now(),
            result=result,
            error=error,
            lease_now=self.clock.lease_now(),
        )

    async def write_goal(
        self,
        *,
        state: dict[str, Any] | None = None,
        record: tuple[GoalRecordKind, dict[str, Any]] | None = None,
    ) -> None:
        """Write results, evidence or notes back into the goal (fenced). A record is keyed by
        this step, so replaying the step after a crash does not write it twice."""
        if self.task.goal_id is None:
            raise RuntimeError(f"task {self.task.id} has no goal to write to")
        key = f"{self.task.id}.{self.seq + 1}.{self._goal_writes_in_step}"
        self._goal_writes_in_step += 1
        await self.store.goals.write_goal(
            self.task.goal_id,
            now=self.clock.now(),
            state=state,
            record=record,
            fence=self.fence,
            lease_now=self.clock.lease_now(),
            key=key,
        )

    async def follow_up(self, *, due_at: datetime, note: str) -> FollowUp:
        """Set a follow-up on the task's goal (fenced). Its id is derived from this step, so
        replaying the step after a crash sets it once (a model's call ids may change)."""
        if self.task.goal_id is None:
            raise RuntimeError(f"task {self.task.id} has no goal to follow up")
        follow_up_id = f"fup_{self.task.id}.{self.seq + 1}.{self._follow_ups_in_step}"
        self._follow_ups_in_step += 1
        return await self.store.heartbeats.add_follow_up(
            FollowUp(
                id=follow_up_id,
                person_id=self.task.person_id,
                goal_id=self.task.goal_id,
                task_id=self.task.id,
                due_at=due_at,
                note=note,
                created_at=self.clock.now(),
            ),
            fence=self.fence,
            lease_now=self.clock.lease_now(),
        )

    async def report(
        self, *, what: str, why: str, todo: str | None, importance: Importance
    ) -> Report:
        """Tell the person something (fenced). Its id derives from this step, so replaying
        the step after a crash reports once; the goal's policy decides when it reaches them."""
        cause = f"agent:{self.task.id}.{self.seq + 1}.{self._reports_in_step}"
        self._reports_in_step += 1
        return await self.store.reports.add(
            Report(
                id=report_id(cause),
                person_id=self.task.person_id,
                goal_id=self.task.goal_id,
                task_id=self.task.id,
                origin="agent",
                what=what,
                why=why,
                todo=todo,
                importance=importance,
                created_at=self.clock.now(),
            ),
            fence=self.fence,
            lease_now=self.clock.lease_now(),
        )

    async def spawn(self, spec: TaskSpec) -> str:
        """Create a subtask (same person and goal); returns its id. The id is derived from this
        step, so replaying the step after a crash finds the child instead of making another."""
        child_id = f"{self.task.id}.{self.seq + 1}.{self._spawned_in_step}"
        self._spawned_in_step += 1
        child = await self.store.tasks.create_task(
            spec,
            person_id=self.task.person_id,
            goal_id=self.task.goal_id,
            parent_id=self.task.id,
            now=self.clock.now(),
            task_id=child_id,
            fence=self.fence,
            lease_now=self.clock.lease_now(),
        )
        return child.id

    # --- the person's inbox and the task's artifacts (fenced) ------------------------------

    async def request_approval(self, approval: Approval, notification: Notification) -> Approval:
        """Ask the person to approve a call, and tell them so."""
        return await self.store.inbox.request_approval(
            self.fence, approval, notification, lease_now=self.clock.lease_now()
        )

    async def expire_approval(self, approval_id: str) -> Approval:
        """Mark this task's still-pending approval expired (the task woke at its deadline)."""
        return await self.store.inbox.expire_approval(
            approval_id, now=self.clock.now(), fence=self.fence, lease_now=self.clock.lease_now()
        )

    async def notify(self, notification: Notification) -> None:
        await self.store.inbox.notify(
            notification, fence=self.fence, lease_now=self.clock.lease_now()
        )

    async def add_artifact(self, artifact: Artifact) -> Artifact:
        return await self.store.inbox.add_artifact(
            artifact, fence=self.fence, lease_now=self.clock.lease_now()
        )

    # --- reads ---------------------------------------------------------------------------

    async def goal(self) -> Goal | None:
        """The task's goal (None for a stand-alone task)."""
        if self.task.goal_id is None:
            return None
        return await self.store.goals.get_goal(self.task.goal_id)

    async def timezone(self) -> str:
        """The time zone of the person the task works for (what "Friday at 9" means)."""
        return (await self.store.persons.get_person(self.task.person_id)).timezone

    async def goal_usage(self) -> dict[str, float]:
        """What all the goal's activations spent so far (this one included); empty without a
        goal."""
        if self.task.goal_id is None:
            return {}
        return await self.store.activations.goal_usage(self.task.goal_id)

    async def steps_after(self, seq: int) -> list[Step]:
        """The task's committed steps after ``seq``."""
        return await self.store.activations.list_steps(self.task.id, after=seq, limit=100_000)

    async def attempted(self, step_seq: int) -> bool:
        """Whether the first effect of step ``step_seq`` was planned already (before a crash)."""
        return (
            await self.store.effects.get_effect_by_key(effect_key(self.task.id, step_seq, 0))
            is not None
        )

    async def approval(self, approval_id: str) -> Approval:
        return await self.store.inbox.get_approval(approval_id)

    async def subtask(self, task_id: str) -> Task:
        """A subtask this task spawned."""
        return await self.store.tasks.get_task(task_id)

    async def artifact(self, artifact_id: str) -> Artifact:
        """An artifact of the task's person (NotFound for anyone else's)."""
        found = await self.store.inbox.get_artifact(artifact_id)
        if found.person_id != self.task.person_id:
            raise NotFound("artifact", artifact_id)
        return found
