"""What a person hands the facade to keep is bounded at every door, the ones found after the
first round included (issue 14, cold review): an in-doubt effect's result (a 950-deep one made
every later view of the effect and its task fail), a decision's note, a goal's budget, a
trigger's spec, a token's name and a memory's slot. Each is refused and changes nothing."""

from __future__ import annotations

from collections.abc import Awaitable
from pathlib import Path

import pytest

from steward.domain import ApprovalStatus, Budget, EffectStatus, TaskSpec, TriggerKind
from steward.domain.clock import SimulatedClock
from steward.domain.limits import MAX_DEPTH, MAX_TEXT
from steward.errors import TooLarge, UsageError
from steward.service import Service
from steward.store import Store
from support.api import Api

DEEP = 200
"""Levels of nesting far beyond the limit that the server still parses (the review's 950-deep
result, stored through the facade, made every later view of the effect and its task fail)."""


def nested(depth: int) -> str:
    """JSON text of a value ``depth`` levels deep (too deep for Python's encoder to write)."""
    return '{"a": ' * (depth - 1) + '{"leaf": 1}' + "}" * (depth - 1)


async def test_a_deep_result_for_an_effect_is_refused_and_the_effect_stays_in_doubt(
    api: Api,
) -> None:
    a = api.a
    async with api.client(a.control) as client:
        answer = await client.post(
            "/call/resolve_effect",
            content=f'{{"effect_id": "{a.effect.id}", "applied": true, "result": {nested(DEEP)}}}',
            headers={"content-type": "application/json"},
        )
        assert answer.status_code == 413, answer.text
        assert f"at most {MAX_DEPTH} levels" in answer.json()["detail"]
        assert "an effect's result" in answer.json()["detail"]
        shown = await client.post("/call/task_detail", json={"task_id": a.task.id})
        assert shown.status_code == 200, shown.text
    [effect] = [e for e in await api.owner.list_effects(task_id=a.task.id) if e.id == a.effect.id]
    assert (effect.status, effect.result) == (EffectStatus.IN_DOUBT, None)


async def test_a_decision_with_an_oversized_note_is_refused_and_changes_nothing(api: Api) -> None:
    a = api.a
    async with api.client(a.control) as client:
        answer = await client.post(
            "/call/decide_approval",
            json={"approval_id": a.approval.id, "approve": False, "note": "x" * (MAX_TEXT + 1)},
        )
    assert answer.status_code == 413  # its text would repeat the note
    assert "note" in answer.json()["detail"]
    approval = await api.owner.get_approval(a.approval.id)
    assert (approval.status, approval.note) == (ApprovalStatus.PENDING, None)


async def test_the_facade_bounds_budgets_specs_token_names_and_slots(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    owner = Service(store, clock, data_dir=tmp_path)
    pid = (await owner.ensure_person()).id
    goal = await owner.create_goal(person_id=pid, title="g")
    huge = "x" * 2_000_000
    refused: list[tuple[Awaitable[object], type[UsageError], str]] = [
        (
            owner.create_goal(person_id=pid, title="t", budget=Budget(max_cost_usd=float("inf"))),
            UsageError,
            "budget",
        ),
        (owner.set_goal_budget(goal.id, Budget(max_seconds=float("nan"))), UsageError, "budget"),
        (owner.set_goal_budget(goal.id, Budget(max_steps=10**30)), TooLarge, "budget"),
        (
            owner.add_trigger(
                person_id=pid, kind=TriggerKind.EVENT, spec=huge, task=TaskSpec(kind="noop")
            ),
            TooLarge,
            "a trigger",
        ),
        (owner.create_token(person_id=pid, name=huge, scopes=["read"]), TooLarge, "a token"),
        (owner.remember(person_id=pid, content="x", slot=huge), TooLarge, "slot"),
    ]
    for call, error, naming in refused:
        with pytest.raises(error, match=naming):
            await call
    assert [g.id for g in await owner.list_goals(person_id=pid)] == [goal.id]
    assert (await owner.goal_detail(goal.id))["goal"].budget == Budget()
    assert await owner.list_triggers(person_id=pid) == []
    assert await owner.list_tokens(person_id=pid) == []
    assert await owner.list_memories(person_id=pid) == []


async def test_names_kept_in_short_columns_are_refused_at_the_door(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    """PostgreSQL refused them on main with an error no person could read (a 500)."""
    owner = Service(store, clock, data_dir=tmp_path)
    pid = (await owner.ensure_person()).id
    long = "x" * 129  # the columns hold 128
    refused: list[tuple[Awaitable[object], str]] = [
        (owner.send_event(person_id=pid, type=long), "an event's type"),
        (owner.send_event(person_id=pid, type="t", source=long), "an event's source"),
        (owner.send_event(person_id=pid, type="t", dedupe_key="k" * 201), "dedupe key"),
        (owner.create_task(person_id=pid, spec=TaskSpec(kind=long)), "a task's kind"),
        (
            owner.add_connection(person_id=pid, kind="k" * 33, name="n", scopes=["a.b"]),
            "a connection's kind",
        ),
    ]
    for call, naming in refused:
        with pytest.raises(TooLarge, match=naming):
            await call
    assert await owner.list_events(person_id=pid) == []
    assert await owner.list_tasks(person_id=pid) == []
    assert await owner.list_connections(person_id=pid) == []
