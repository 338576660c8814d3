"""Memory's background work as ordinary Steward tasks: the nightly consolidation pass.

``memory.consolidate`` is a step function. With an extractor, it first extracts candidate
memories from the agent tasks that finished since the previous pass (at most
``max_extractions`` of them, each one model call: the job's budget), then one step plans the
pass and applies it or holds it, and notifies the person when it is held. Its input is the
pass's rules (:meth:`PassRules.from_json`); ``max_operations`` is its work budget per run. The
pass id comes from the task id, so a retried task finds the pass an earlier try recorded
instead of running a second one.
"""

from __future__ import annotations

from steward.domain import Notification, TaskSpec, TaskStatus, Trigger, TriggerKind
from steward.domain.clock import Clock
from steward.domain.ids import new_id
from steward.domain.memory_pass import MemoryPass, PassStatus
from steward.domain.outcome import Outcome, Succeed
from steward.memory.book import MemoryBook
from steward.memory.consolidation import PassRules, consolidate
from steward.memory.extraction import Extractor, extract_task
from steward.runtime.schedule import first_fire, validate_spec
from steward.runtime.stepfn import Handler, StepContext, StepHarness
from steward.store import Store

CONSOLIDATE = "memory.consolidate"
"""The task kind of a consolidation pass."""
NIGHTLY = "0 3 * * *"
"""When the pass runs by default: 03:00 in the person's time zone."""
REVIEW_LINES = 40
"""Lines of a held pass's diff shown in its notification (the rest: in the pass itself)."""


MAX_EXTRACTIONS = 20
"""Finished tasks one pass extracts from, by default (one model call each)."""


def consolidation_job(book: MemoryBook, extractor: Extractor | None = None) -> Handler:
    """The step function of ``memory.consolidate`` tasks over ``book``."""

    async def run(ctx: StepContext) -> Outcome | None:
        task = await book.store.tasks.get_task(
            ctx.task_id
        )  # its owner: whose memories, never input
        pass_id = f"mps_{task.id}"
        done = await book.store.memory_passes.find_memory_pass(pass_id)
        if done is None and extractor is not None and "extracted" not in ctx.state:
            limit = int(ctx.input.get("max_extractions", MAX_EXTRACTIONS))
            count, mark = await _extract_recent(book, extractor, task.person_id, limit)
            # a retry does not extract again
            ctx.state["extracted"], ctx.state["extracted_until"] = count, mark
        if done is None:
            rules = PassRules.from_json(ctx.input)
            done = await consolidate(
                book, task.person_id, rules=rules, task_id=task.id, pass_id=pass_id
            )
        if done.status is PassStatus.HELD:
            await book.store.inbox.notify(_review(done, ctx))
        return Succeed(
            result={
                "pass": done.id,
                "status": str(done.status),
                "operations": len(done.operations),
                "skipped": sum(1 for op in done.operations if op.skipped),
                "share": round(done.share, 4),
                "extracted_from": int(ctx.state.get("extracted", 0)),
                **(
                    {"extracted_until": ctx.state["extracted_until"]}
                    if ctx.state.get("extracted_until")
                    else {}
                ),
            }
        )

    return run


async def _extract_recent(
    book: MemoryBook, extractor: Extractor, person_id: str, limit: int
) -> tuple[int, list[str] | None]:
    """Extract from the person's top-level agent tasks finished after the last one an
    earlier pass read, oldest first, at most ``limit``; returns how many were read and the new
    mark (``[finished_at, task id]``). What one night leaves, the next night reads."""
    mark = await _extraction_mark(book, person_id)
    finished = await book.store.tasks.list_tasks(
        person_id=person_id, status=[TaskStatus.SUCCEEDED], limit=10_000
    )
    waiting = sorted(
        [t.finished_at.isoformat(), t.id]
        for t in finished
        if t.kind == "agent" and t.parent_id is None and t.finished_at is not None
    )
    chosen = [key for key in waiting if mark is None or key > mark][:limit]
    for _, task_id in chosen:
        await extract_task(book, extractor, task_id)
    return len(chosen), (chosen[-1] if chosen else mark)


async def _extraction_mark(book: MemoryBook, person_id: str) -> list[str] | None:
    """Where the last pass that extracted stopped."""
    for task in await book.store.tasks.list_tasks(
        person_id=person_id, status=[TaskStatus.SUCCEEDED], limit=10_000
    ):
        if task.kind == CONSOLIDATE and (task.result or {}).get("extracted_until"):
            return list((task.result or {})["extracted_until"])
    return None


def with_memory_jobs(
    harness: StepHarness, book: MemoryBook, *, extractor: Extractor | None = None
) -> StepHarness:
    """``harness`` with memory's task kinds registered."""
    harness.register(CONSOLIDATE, consolidation_job(book, extractor))
    return harness


async def schedule_consolidation(
    store: Store,
    clock: Clock,
    *,
    person_id: str,
    cron: str = NIGHTLY,
    rules: PassRules | None = None,
) -> Trigger:
    """Run a consolidation pass for the person on ``cron`` (in their time zone). A person has
    one such schedule: asking again returns the one there is."""
    for trigger in await store.schedule.list_triggers(person_id=person_id):
        if trigger.task.kind == CONSOLIDATE:
            return trigger
    zone = (await store.persons.get_person(person_id)).timezone
    validate_spec(TriggerKind.CRON, cron, zone)
    now = clock.now()
    return await store.schedule.create_trigger(
        Trigger(
            id=new_id("trg"),
            person_id=person_id,
            goal_id=None,
            name="memory consolidation",
            kind=TriggerKind.CRON,
            spec=cron,
            timezone=zone,
            task=TaskSpec(
                kind=CONSOLIDATE,
                input=(rules or PassRules()).to_json(),
                title="Consolidate memories",
                max_attempts=3,
            ),
            next_fire_at=first_fire(TriggerKind.CRON, cron, zone, now),
            created_at=now,
        )
    )


def _review(held: MemoryPass, ctx: StepContext) -> Notification:
    lines = held.describe()
    more = len(lines) - REVIEW_LINES
    body = "\n".join(lines[:REVIEW_LINES] + ([f"… and {more} more lines"] if more > 0 else []))
    return Notification(
        id=f"ntf.{held.id}",  # once per pass, however often the step is replayed
        person_id=held.person_id,
        kind="memory_review",
        title=(
            f"Memory consolidation would set aside {held.drops} of {held.active} memories: "
            "review it"
        ),
        body=body,
        task_id=ctx.task_id,
        goal_id=ctx.goal_id,
        ref=held.id,
        created_at=ctx.now(),
    )
