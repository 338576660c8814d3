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
    needs = {"http_post": {"url": "https://api.example.org/hook"}}  # refused without one
    for kind in sorted(task_kinds()):
        await svc.create_task(
            person_id=person.id, spec=TaskSpec(kind=kind, input=needs.get(kind, {}))
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
