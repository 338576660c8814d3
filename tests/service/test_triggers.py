"""The trigger facade's door: heartbeat settings and budgets are checked before anything is
stored, another person's trigger or goal is not found, and a budget change lifts a pause."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from steward.domain import TaskSpec, TriggerKind
from steward.domain.clock import SimulatedClock
from steward.domain.followup import FollowUp
from steward.domain.trigger import TriggerBudget
from steward.errors import NotFound, UsageError
from steward.service import Service
from steward.store import Store
from support.tenancy import Tenant, make_tenant


@pytest.fixture
async def two(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> tuple[Tenant, Tenant, Service]:
    """Ann and Bob, and the facade bound to Ann's control token."""
    a = await make_tenant(store, clock, "ann", tmp_path)
    b = await make_tenant(store, clock, "bob", tmp_path)
    owner = Service(store, clock, data_dir=tmp_path)
    return a, b, await owner.authenticate(a.control)


@pytest.mark.parametrize(
    ("kind", "spec", "extra", "says"),
    [
        (TriggerKind.CRON, "0 9 * * *", {"active_hours": "08:00-20:00"}, "for heartbeats only"),
        (TriggerKind.EVENT, "ping", {"watch": ["file.*"]}, "for heartbeats only"),
        (TriggerKind.HEARTBEAT, "0", {}, "positive"),
        (TriggerKind.HEARTBEAT, "10 minutes", {}, "looks like 10m"),
        (TriggerKind.HEARTBEAT, "10m", {"active_hours": "08:00-25:00"}, "25:00"),
        (TriggerKind.HEARTBEAT, "10m", {"active_hours": "08:00-20:00", "days": "sun-"}, "days"),
        (TriggerKind.INTERVAL, "60", {"budget": TriggerBudget(tokens=-5)}, "negative"),
        (TriggerKind.INTERVAL, "60", {"budget": TriggerBudget(runs=0)}, "switch the trigger off"),
    ],
)
async def test_bad_trigger_settings_are_refused_and_store_nothing(
    store: Store,
    two: tuple[Tenant, Tenant, Service],
    kind: TriggerKind,
    spec: str,
    extra: dict[str, object],
    says: str,
) -> None:
    a, _, as_a = two
    before = await as_a.list_triggers(person_id=a.person.id)
    with pytest.raises(UsageError, match=says):
        await as_a.add_trigger(
            person_id=a.person.id,
            kind=kind,
            spec=spec,
            goal_id=a.goal.id,
            task=TaskSpec(kind="noop"),
            **extra,  # type: ignore[arg-type]
        )
    assert await as_a.list_triggers(person_id=a.person.id) == before


async def test_anothers_trigger_budget_and_follow_ups_are_not_found(
    two: tuple[Tenant, Tenant, Service],
) -> None:
    _, b, as_a = two
    with pytest.raises(NotFound):
        await as_a.set_trigger_budget(b.trigger.id, TriggerBudget(runs=1))
    with pytest.raises(NotFound):
        await as_a.follow_ups(b.goal.id)
    with pytest.raises(NotFound):
        await as_a.add_trigger(
            person_id="",
            kind=TriggerKind.HEARTBEAT,
            spec="10m",
            goal_id=b.goal.id,
            task=TaskSpec(kind="noop"),
        )


async def test_a_goals_timeline_shows_its_latest_follow_ups(
    store: Store, clock: SimulatedClock, two: tuple[Tenant, Tenant, Service]
) -> None:
    a, _, as_a = two
    for day in range(5):
        await store.heartbeats.add_follow_up(
            FollowUp(
                id=f"fup_day{day}",
                person_id=a.person.id,
                goal_id=a.goal.id,
                task_id=None,
                due_at=clock.now() + timedelta(days=day + 1),
                note=f"day {day}",
                created_at=clock.now(),
            )
        )
    shown = [e.summary for e in await as_a.timeline(a.goal.id, limit=2) if e.kind == "follow-up"]
    assert shown == ["follow up: day 3", "follow up: day 4"]


async def test_an_unnamed_heartbeat_is_named_in_words(two: tuple[Tenant, Tenant, Service]) -> None:
    a, _, as_a = two
    beat = await as_a.add_trigger(
        person_id=a.person.id,
        kind=TriggerKind.HEARTBEAT,
        spec="10m",
        goal_id=a.goal.id,
        task=TaskSpec(kind="noop"),
    )
    assert beat.name == "Every 10 min"
