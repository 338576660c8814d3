"""A simulated month: 100 goals with a daily cron trigger, replayed on a SimulatedClock.

Same shape as ``steward simulate``: one person (16 at once), 100 goals each with a ``0 9 * * *``
trigger firing a one-step ``noop`` task, replayed for 30 days through
:func:`steward.runtime.simulate.run_simulation` (real scheduler, real worker, real store; only
the clock is simulated). Wall seconds of the replay are measured; setup is not.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bench_support import Outcome, fresh_database
from steward.domain import MissedPolicy, TaskSpec, Trigger, TriggerKind
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.runtime.builtin import builtin_harness
from steward.runtime.schedule import first_fire
from steward.runtime.simulate import run_simulation
from steward.store import Store

TARGET_SECONDS = 60.0
CRON = "0 9 * * *"


async def run(url: str, goals: int, days: int) -> dict[str, object]:
    store = await Store.open(url)
    try:
        start = datetime(2026, 1, 1, tzinfo=UTC)
        clock = SimulatedClock(start)
        person = await store.persons.create_person(name="sim", now=start, max_concurrency=16)
        for i in range(goals):
            goal = await store.goals.create_goal(person_id=person.id, title=f"goal {i}", now=start)
            await store.schedule.create_trigger(
                Trigger(
                    id=new_id("trg"),
                    person_id=person.id,
                    goal_id=goal.id,
                    name="daily",
                    kind=TriggerKind.CRON,
                    spec=CRON,
                    task=TaskSpec(kind="noop"),
                    missed_policy=MissedPolicy.RUN_ONCE,
                    created_at=start,
                    next_fire_at=first_fire(TriggerKind.CRON, CRON, "UTC", start),
                )
            )
        report = await run_simulation(
            store, builtin_harness(), clock, until=start + timedelta(days=days)
        )
        counts = await store.tasks.count_tasks()
    finally:
        await store.close()
    expected = goals * days  # 09:00 on each of the days replayed
    return {
        "goals": goals,
        "days": days,
        "wall_seconds": round(report.wall_seconds, 3),
        "activations": report.activations,
        "clock_jumps": report.jumps,
        "tasks": counts,
        "expected_tasks": expected,
    }


async def bench_simulate(backend: str, quick: bool) -> Outcome:
    out = Outcome()
    goals, days = (100, 7) if quick else (100, 30)
    with fresh_database(backend) as url:
        result = await run(url, goals, days)
    out.details = result
    succeeded = result["tasks"].get("succeeded", 0)  # type: ignore[attr-defined]
    wall = float(result["wall_seconds"])  # type: ignore[arg-type]
    judged = days >= 28
    complete = succeeded == result["expected_tasks"]
    out.add(
        bench="simulate",
        backend=backend,
        name=f"simulated {days} days x {goals} daily goals",
        value=wall,
        unit="s wall",
        target=f"< {TARGET_SECONDS:.0f} s (a month)" if judged else "",
        met=False if not complete else (wall < TARGET_SECONDS if judged else None),
        note=("" if complete else "INCOMPLETE REPLAY: ")
        + f"{succeeded} of {result['expected_tasks']} tasks succeeded, "
        f"{result['clock_jumps']} clock jumps",
    )
    return out
