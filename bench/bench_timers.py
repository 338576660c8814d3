"""Timer lateness: many one-shot ('at') triggers due over a minute of real time.

10,000 triggers are created through the service, due at evenly spread times over ``SPREAD``
seconds that start after the setup is done; each fires a one-step ``noop`` task. The runtime is
a separate ``steward up --db URL`` process (scheduler + one worker of concurrency 8, as
deployed). Lateness is measured twice, from the stored records:

* firing: ``firings.recorded_at - scheduled_for`` — when the scheduler's tick that handled it
  began;
* start: first ``activations.started_at`` of the fired task - ``scheduled_for`` — end to end, up
  to a worker starting the work. The target (p99 < 1 s) is judged on this one.
"""

from __future__ import annotations

import asyncio
import functools
import time
from datetime import timedelta

from sqlalchemy import func, select

from bench_support import Outcome, fresh_database, gather_chunked, subprocess_up, summary
from steward.domain import TaskSpec, TriggerKind
from steward.domain.clock import Clock
from steward.service import Service
from steward.store import Store
from steward.store.schema import activations, firings, tasks

TARGET_P99 = 1.0
STALL_SECONDS = 20.0
SPEC = TaskSpec(kind="noop")
LABELS = {"firing": "firing recorded", "start": "task started"}


def _plan(backend: str, quick: bool) -> tuple[int, float, float]:
    """(triggers, spread seconds, lead seconds before the first is due). The lead covers
    creating the triggers (PostgreSQL takes 17-23 s for 10,000 here) and starting the runtime."""
    if quick:
        return 1000, 20.0, 8.0
    return 10_000, 60.0, 20.0 if backend == "sqlite" else 30.0


async def run(url: str, n: int, spread: float, lead: float) -> dict[str, object]:
    store = await Store.open(url)
    try:
        clock = Clock()
        service = Service(store, clock)
        # the worker in `steward up` runs 8 at once; let this person use all of them
        person = await store.persons.create_person(name="me", now=clock.now(), max_concurrency=8)
        base = clock.now() + timedelta(seconds=lead)
        times = [base + timedelta(seconds=spread * i / n) for i in range(n)]
        setup = time.perf_counter()
        await gather_chunked(
            functools.partial(
                service.add_trigger,
                person_id=person.id,
                kind=TriggerKind.AT,
                spec=when.isoformat(),
                task=SPEC,
                name="bench",
            )
            for when in times
        )
        setup_seconds = time.perf_counter() - setup
        async with subprocess_up(url):
            # both a readiness check and the end condition: every fired task has finished
            started = clock.now()
            done_query = select(func.count()).where(tasks.c.status == "succeeded")
            first_due = time.monotonic() + (times[0] - clock.now()).total_seconds()
            deadline = time.monotonic() + lead + spread + 120
            done, progress_at = 0, first_due
            while time.monotonic() < deadline:
                now_done = await store.backend.read(lambda c: c.execute(done_query).scalar() or 0)
                if now_done >= n:
                    done = now_done
                    break
                if now_done > done:
                    done, progress_at = now_done, time.monotonic()
                elif time.monotonic() - progress_at > STALL_SECONDS:
                    break  # nothing finished for a while: do not wait out the whole deadline
                await asyncio.sleep(1.0)
            if done < n:
                raise RuntimeError(
                    f"only {done} of {n} timer tasks finished "
                    f"(no progress for {STALL_SECONDS:.0f} s)"
                )
        query = (
            select(
                firings.c.scheduled_for,
                firings.c.recorded_at,
                firings.c.status,
                func.min(activations.c.started_at),
            )
            .join(activations, activations.c.task_id == firings.c.task_id)
            .group_by(firings.c.id, firings.c.scheduled_for, firings.c.recorded_at)
        )
        found = await store.backend.read(lambda c: c.execute(query).all())
    finally:
        await store.close()
    late_firing = [recorded - scheduled for scheduled, recorded, _, _ in found]
    late_start = [start - scheduled for scheduled, _, _, start in found]
    return {
        "triggers": n,
        "spread_seconds": spread,
        "setup_seconds": round(setup_seconds, 2),
        "due_before_runtime_started": sum(1 for t in times if t <= started),
        "fired": len(found),
        "missed": sum(1 for *_, status, _ in found if status != "fired"),
        "firing": summary(late_firing),
        "start": summary(late_start),
    }


async def bench_timers(backend: str, quick: bool) -> Outcome:
    out = Outcome()
    n, spread, lead = _plan(backend, quick)
    with fresh_database(backend) as url:
        result = await run(url, n, spread, lead)
    out.details = result
    note = f"{n} 'at' triggers over {spread:.0f} s; `steward up` subprocess"
    if result["due_before_runtime_started"]:
        note += f"; {result['due_before_runtime_started']} were due before it started"
    for which in ("firing", "start"):
        stats = result[which]
        assert isinstance(stats, dict)
        for p in ("p50", "p99"):
            judged = which == "start" and p == "p99"
            out.add(
                bench="timers",
                backend=backend,
                name=f"timer lateness {p}, {LABELS[which]}",
                value=round(stats[p] * 1000, 1),
                unit="ms",
                target=f"< {TARGET_P99 * 1000:.0f} ms" if judged else "",
                met=stats[p] < TARGET_P99 if judged else None,
                note=note if judged else "",
            )
    return out
