"""Workers: claim due tasks under a lease, run one activation each, release.

A worker holds no state of its own worth keeping: everything is in the store. While a task runs,
its lease is renewed in the background; if renewal finds the lease gone (this process was
paused, partitioned, or too slow), the activation is abandoned — every write it might still try
would be rejected by the fence anyway. When the database is unavailable (restarting, failing
over), the worker stays up: it backs off and claims again later; an activation whose write
failed is abandoned and its task re-queued once the database answers (it resumes from its last
checkpoint, under whichever worker claims it next).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import random
import socket
from datetime import timedelta
from typing import Any

import structlog

from steward import telemetry
from steward.domain.clock import Clock
from steward.domain.goal import Budget, Overrun
from steward.domain.outcome import Claim, Fail, Outcome, Requeue, Retry, Stop, Wait
from steward.domain.task import WaitCondition
from steward.domain.wake import Again
from steward.errors import (
    DatabaseUnavailable,
    EffectInDoubt,
    LeaseLost,
    RetryLater,
    StopRequested,
)
from steward.runtime.harness import Harness
from steward.runtime.outage import DatabaseOutage
from steward.runtime.run import TaskRun
from steward.store import Fence, Store

log = structlog.get_logger(__name__)


def default_worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{os.urandom(3).hex()}"


CUT_OFF_CAP_SECONDS = 300.0
"""Longest wait before running a task cut off by the database again."""


def backoff_seconds(attempt: int, *, base: float = 1.0, cap: float = 300.0) -> float:
    """Exponential backoff with full jitter: uniform in [0, min(cap, base·2^attempt)]."""
    return random.uniform(0, min(cap, base * 2**attempt))


class Worker:
    def __init__(
        self,
        store: Store,
        harness: Harness,
        clock: Clock,
        *,
        name: str | None = None,
        concurrency: int = 8,
        lease_seconds: float = 30.0,
        poll_seconds: float | None = 1.0,
        retry_base_seconds: float = 1.0,
        wakeup: asyncio.Event | None = None,
        outage: DatabaseOutage | None = None,
        skip_kinds: frozenset[str] = frozenset(),
    ) -> None:
        self.store = store
        self.harness = harness
        self.clock = clock
        self.name = name or default_worker_name()
        self.concurrency = concurrency
        self.lease_seconds = lease_seconds
        self.poll_seconds = poll_seconds
        """Longest idle sleep before looking again (other processes add work we are not told
        about). None: sleep until the next known due time or a wake-up (in-process only)."""
        self.retry_base_seconds = retry_base_seconds
        self.wakeup = wakeup or asyncio.Event()
        """Set it to make the worker look for work now."""
        self.outage = outage or DatabaseOutage(clock)
        """Database outages as this process sees them (shared by its loops)."""
        self.skip_kinds = skip_kinds
        """Task kinds it never claims (its harness cannot run them: no model)."""
        self._running: dict[str, asyncio.Task[None]] = {}
        self._draining = asyncio.Event()
        self.activations = 0

    async def run(self, stop: asyncio.Event) -> None:
        """Claim and run tasks until ``stop`` is set; then let running activations finish."""
        self.clock.register()
        try:
            while not stop.is_set():
                self.wakeup.clear()
                try:
                    claimed = await self.claim_and_start()
                    self.outage.ok()
                    if not claimed:
                        await self._idle(stop)
                except DatabaseUnavailable as error:
                    await self.outage.wait(error, stop)
                except Exception as error:  # never exit on one failure: log it and go on
                    await self.outage.unexpected("claiming work", error, stop)
        finally:
            self.clock.unregister()
            self._draining.set()
            if self._running:
                await asyncio.gather(*self._running.values(), return_exceptions=True)

    async def _idle(self, stop: asyncio.Event) -> None:
        if self._running:
            # Busy: not asleep as far as a simulated clock is concerned.
            signals = [
                asyncio.ensure_future(self.wakeup.wait()),
                asyncio.ensure_future(stop.wait()),
            ]
            waits: set[asyncio.Future[Any]] = {*self._running.values(), *signals}
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            for signal in signals:
                signal.cancel()
            return
        now = self.clock.now()
        due = await self.store.tasks.next_run_time()
        # Nothing due, or something due that we may not take (a person's concurrency limit, a
        # paused goal): wait to be woken, or poll.
        deadline = due if due is not None and due > now else now + timedelta(days=3650)
        if self.poll_seconds is not None:
            deadline = min(deadline, now + timedelta(seconds=self.poll_seconds))
        wake = _either(self.wakeup, stop)
        try:
            await self.clock.sleep_until(deadline, wake.event)
        finally:
            wake.close()

    async def claim_and_start(self) -> int:
        free = self.concurrency - len(self._running)
        if free <= 0:
            return 0
        claims = await self.store.tasks.claim_tasks(
            worker=self.name,
            limit=free,
            lease_seconds=self.lease_seconds,
            now=self.clock.now(),
            lease_now=self.clock.lease_now(),
            skip_kinds=self.skip_kinds,
        )
        for claim in claims:
            task = asyncio.get_running_loop().create_task(self._execute(claim))
            self._running[claim.task.id] = task
            task.add_done_callback(functools.partial(self._done, claim.task.id))
        return len(claims)

    def _done(self, task_id: str, _task: object = None) -> None:
        self._running.pop(task_id, None)
        self.wakeup.set()

    async def run_until_idle(self) -> int:
        """Run everything due now to completion (tests and simulations). Returns activations."""
        start = self.activations
        while True:
            await self.claim_and_start()
            if not self._running:
                return self.activations - start
            await asyncio.gather(*list(self._running.values()), return_exceptions=True)

    async def _execute(self, claim: Claim) -> None:
        telemetry.claimed((claim.activation.started_at - claim.task.run_at).total_seconds())
        task = claim.task
        with telemetry.span(
            "activation", task=task.id, kind=task.kind, reason=claim.activation.reason
        ):
            await self._run_claim(claim)

    async def _run_claim(self, claim: Claim) -> None:
        self.activations += 1
        # every record of this activation names its task (its own asyncio task: nothing leaks)
        structlog.contextvars.bind_contextvars(task_id=claim.task.id)
        run = TaskRun(store=self.store, clock=self.clock, claim=claim, draining=self._draining)
        log.debug("activation start", task=claim.task.id, reason=claim.activation.reason)
        work = asyncio.ensure_future(self._activate(run))
        beat = asyncio.ensure_future(self._heartbeat(run.fence, work))
        cut_off = False
        try:
            outcome = await work
        except asyncio.CancelledError:
            log.warning("activation abandoned: lease lost", task=claim.task.id)
            telemetry.activation_ended("lost")
            return
        except LeaseLost:
            log.warning("activation rejected by fence", task=claim.task.id)
            telemetry.activation_ended("lost")
            return
        except DatabaseUnavailable as error:
            # cut off mid-way: what it committed stands (each write is fenced); hand the task
            # back to be resumed from its last checkpoint, as soon as the database answers,
            # later each time it is cut off again (not an attempt: the step did not fail)
            self.outage.noticed(error)
            log.info("activation abandoned: database unavailable", task=claim.task.id)
            cut_offs = (claim.wake.cut_offs if isinstance(claim.wake, Again) else 0) + 1
            ceiling = min(CUT_OFF_CAP_SECONDS, self.retry_base_seconds * 2 ** (cut_offs - 1))
            outcome = Requeue(
                reason="database unavailable",
                delay_seconds=random.uniform(ceiling / 2, ceiling),
                cut_offs=cut_offs,
            )
            run.final_step = None
            cut_off = True
        finally:
            beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beat
        await self._finish(run, outcome, cut_off=cut_off)

    async def _finish(self, run: TaskRun, outcome: Outcome, *, cut_off: bool) -> None:
        """Write the outcome, trying again while the database is unavailable (until the worker
        stops: the lease then lapses and the scheduler re-queues the task). ``cut_off``: the
        database went away during the activation or while writing its outcome."""
        while True:
            try:
                await self.store.activations.finish_activation(
                    run.fence,
                    outcome,
                    now=self.clock.now(),
                    steps_taken=run.steps + (run.final_step is not None),
                    usage=run.usage,
                    lease_now=self.clock.lease_now(),
                    final_step=run.final_step,
                )
            except LeaseLost:
                telemetry.activation_ended("lost")
                if cut_off:  # the lease lapsed meanwhile, or the cut-off commit landed after all
                    log.info("outcome not written after the outage: lease gone", task=run.task.id)
                else:
                    log.warning("outcome rejected by fence", task=run.task.id, outcome=outcome.kind)
                return
            except DatabaseUnavailable as error:
                if self._draining.is_set():
                    return
                cut_off = True
                await self.outage.wait(error, self._draining)
                continue
            except Exception as error:  # tried again until the lease lapses (LeaseLost)
                if self._draining.is_set():
                    return
                await self.outage.unexpected("writing an outcome", error, self._draining)
                continue
            self.outage.ok()
            telemetry.activation_ended(outcome.kind)
            return

    async def _activate(self, run: TaskRun) -> Outcome:
        try:
            overrun = await self._over_budget(run)
            if overrun is not None:
                return Fail(reason=overrun.refused(), budget=overrun)
            return await self.harness.activate(run)
        except StopRequested as stop:
            if stop.kind == "shutdown":
                return Requeue(reason="worker shutdown")
            return Stop(control="cancel" if stop.kind == "cancel" else "pause")
        except EffectInDoubt as doubt:
            return Wait(condition=WaitCondition(kind="effect", ref=doubt.effect_id))
        except RetryLater as retry:
            delay = retry.delay_seconds
            if delay is None:
                delay = backoff_seconds(run.task.attempts, base=self.retry_base_seconds)
            if not retry.attempt:
                return Requeue(reason=retry.reason, delay_seconds=delay)
            return Retry(reason=retry.reason, delay_seconds=delay)
        except (LeaseLost, DatabaseUnavailable, asyncio.CancelledError):
            raise
        except Exception as exc:
            log.exception("step failed", task=run.task.id)
            delay = backoff_seconds(run.task.attempts, base=self.retry_base_seconds)
            return Retry(reason=f"{type(exc).__name__}: {exc}", delay_seconds=delay)

    async def _over_budget(self, run: TaskRun) -> Overrun | None:
        """The goal's cap that refuses this activation before it runs (its count includes
        this one), or None."""
        goal_id = run.task.goal_id
        if goal_id is None:
            return None
        budget = (await self.store.goals.get_goal(goal_id)).budget
        if budget == Budget():
            return None
        return budget.overrun(await self.store.activations.goal_usage(goal_id))

    async def _heartbeat(self, fence: Fence, work: asyncio.Future[Outcome]) -> None:
        interval = self.lease_seconds / 3
        while True:
            await asyncio.sleep(interval)
            try:
                await self.store.tasks.renew_lease(
                    fence, lease_seconds=self.lease_seconds, lease_now=self.clock.lease_now()
                )
            except LeaseLost:
                work.cancel()
                return
            except DatabaseUnavailable as error:
                self.outage.noticed(error)  # the activation meets it too, at its next write
            except Exception:
                log.exception("lease renewal failed; will retry", task=fence.task_id)


class _either:
    """An event set when either of two events is."""

    def __init__(self, a: asyncio.Event, b: asyncio.Event) -> None:
        self.event = asyncio.Event()
        if a.is_set() or b.is_set():
            self.event.set()
        self._tasks = [asyncio.ensure_future(self._relay(e)) for e in (a, b)]

    async def _relay(self, source: asyncio.Event) -> None:
        await source.wait()
        self.event.set()

    def close(self) -> None:
        for task in self._tasks:
            task.cancel()
