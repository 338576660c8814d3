"""A task of a kind no worker runs is refused when it is asked for (from the command line, the
API or a trigger), with the kinds there are, and nothing is stored; before, it was accepted
and failed only when a worker picked it up."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from steward.app import build_harness, task_kinds
from steward.config import Settings
from steward.domain import TaskSpec, TriggerKind
from steward.domain.clock import SimulatedClock
from steward.errors import UsageError
from steward.harness.agent import AGENT_KIND
from steward.runtime.stepfn import StepHarness
from steward.service import Service
from steward.store import Store
from support.cli import cli


def test_the_command_line_refuses_an_unknown_kind_and_names_the_known_ones(
    tmp_path: Path,
) -> None:
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    code, out = cli(db, "task", "create", "nosuch")
    assert code == 1, out
    assert "unknown task kind 'nosuch'" in out
    assert all(kind in out for kind in ("agent", "noop", "wait_event")), out
    code, out = cli(db, "trigger", "add", "interval", "3600", "--task", "nosuch")
    assert code == 1, out
    assert "unknown task kind 'nosuch'" in out
    assert json.loads(cli(db, "task", "list", "--json")[1]) == []
    assert json.loads(cli(db, "trigger", "list", "--json")[1]) == []
    code, out = cli(db, "task", "create", "noop", "--json")
    assert code == 0, out


async def test_the_facade_refuses_an_unknown_kind_for_tasks_and_triggers(
    store: Store, clock: SimulatedClock
) -> None:
    """What the API, the dashboard and MCP call: the kinds come from the app's registry."""
    svc = Service(store, clock, task_kinds=task_kinds())
    person = await svc.ensure_person()
    _, token = await svc.create_token(person_id=person.id, name="t", scopes=["control", "read"])
    bound = await svc.authenticate(token)
    for caller in (svc, bound):
        with pytest.raises(UsageError, match=r"unknown task kind 'nosuch'.*noop"):
            await caller.create_task(person_id=person.id, spec=TaskSpec(kind="nosuch"))
        with pytest.raises(UsageError, match="unknown task kind 'nosuch'"):
            await caller.add_trigger(
                person_id=person.id,
                kind=TriggerKind.INTERVAL,
                spec="3600",
                task=TaskSpec(kind="nosuch"),
            )
    assert await store.tasks.list_tasks(person_id=person.id) == []
    assert await store.schedule.list_triggers(person_id=person.id) == []
    # each refused without what it needs (see the test of input below)
    needs = {
        "http_post": {"url": "https://api.example.org/hook"},
        "note": {"text": "remember the milk"},
        "wait_event": {"type": "email.received"},
    }
    goal = await svc.create_goal(person_id=person.id, title="a note needs a goal")
    for kind in sorted(task_kinds()):
        await svc.create_task(
            person_id=person.id,
            spec=TaskSpec(kind=kind, input=needs.get(kind, {})),
            goal_id=goal.id,
        )


async def test_the_kinds_checked_are_the_kinds_the_workers_run(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    """``task_kinds`` names exactly what the harness a worker builds has registered: a kind
    registered there and not listed would be refused at the door, one listed and not
    registered accepted and then failed."""
    harness = await build_harness(Settings(data_dir=tmp_path), store, clock)
    assert isinstance(harness.fallback, StepHarness)
    assert task_kinds() == {AGENT_KIND, *harness.fallback.kinds}


def test_the_command_line_refuses_a_note_without_a_goal_and_writes_nothing(
    tmp_path: Path,
) -> None:
    """A note writes into its goal: without one it used to fail five times on a worker and end
    dead-lettered."""
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    code, out = cli(db, "task", "create", "note", "--input", '{"text": "hi"}')
    assert code == 1, out
    assert "a note task writes into its goal, so it needs one" in out
    assert json.loads(cli(db, "task", "list", "--json")[1]) == []
    goal = json.loads(cli(db, "goal", "create", "Notes", "--json")[1])
    code, out = cli(db, "task", "create", "note", "--goal", goal["id"], "--input", "{}")
    assert code == 1, out
    assert "a note task needs input.text" in out
    code, out = cli(db, "task", "create", "note", "--goal", goal["id"], "--input", '{"text": "hi"}')
    assert code == 0, out


@pytest.mark.parametrize(
    ("spec", "goal", "why"),
    [
        (TaskSpec(kind="note", input={"text": "hi"}), False, "needs one"),
        (TaskSpec(kind="note", input={"text": 3}), True, "needs input.text"),
        (TaskSpec(kind="noop", input={"steps": 0}), False, "input.steps must be a whole number"),
        (TaskSpec(kind="noop", input={"steps": "2"}), False, "input.steps must be a whole number"),
        (TaskSpec(kind="wait_event"), False, "needs input.type"),
        (TaskSpec(kind="wait_event", input={"type": "x", "match": []}), False, "input.match"),
        (
            TaskSpec(kind="wait_event", input={"type": "x", "timeout_seconds": -1}),
            False,
            "input.timeout_seconds must be above 0",
        ),
    ],
)
async def test_the_facade_refuses_input_a_kind_cannot_run_for_tasks_and_triggers(
    store: Store, clock: SimulatedClock, spec: TaskSpec, goal: bool, why: str
) -> None:
    svc = Service(store, clock, task_kinds=task_kinds())
    person = await svc.ensure_person()
    goal_id = (await svc.create_goal(person_id=person.id, title="g")).id if goal else None
    with pytest.raises(UsageError, match=why):
        await svc.create_task(person_id=person.id, spec=spec, goal_id=goal_id)
    with pytest.raises(UsageError, match=why):
        await svc.add_trigger(
            person_id=person.id,
            goal_id=goal_id,
            kind=TriggerKind.INTERVAL,
            spec="3600",
            task=spec,
        )
    assert await store.tasks.list_tasks(person_id=person.id) == []
    assert await store.schedule.list_triggers(person_id=person.id) == []
