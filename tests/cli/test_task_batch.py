"""Many tasks at once (a script's): ``steward task create --from-file`` and
:meth:`Service.create_tasks` write every task in one transaction, each checked first; one that
cannot run refuses them all, named by its line, and nothing is written."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from steward.app import task_kinds
from steward.cli.main import app
from steward.domain import TaskSpec
from steward.domain.clock import SimulatedClock
from steward.domain.task import TaskRequest
from steward.errors import NotFound, UsageError
from steward.service import Service
from steward.store import Store
from support.cli import cli, cli_json, runner


def test_a_file_of_tasks_is_created_in_one_command_and_a_bad_line_refuses_all(
    tmp_path: Path,
) -> None:
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    goal = cli_json(db, "goal", "create", "Weekly review")["id"]
    lines = [json.dumps({"kind": "noop", "title": f"step {n}"}) for n in range(178)]
    lines += [
        # a shortened goal id, as a person types it
        json.dumps({"kind": "note", "goal": goal[:12], "input": {"text": "remember milk"}}),
        json.dumps({"kind": "noop", "run_at": "2030-01-01T09:00:00+01:00", "priority": 3}),
    ]
    batch = tmp_path / "tasks.jsonl"
    batch.write_text("\n".join(lines) + "\n")
    code, out = cli(db, "task", "create", "--from-file", str(batch))
    assert code == 0, out
    assert "180 tasks created" in out
    listed = cli_json(db, "task", "list", "--limit", "500")
    assert len(listed) == 180
    note = next(t for t in listed if t["kind"] == "note")
    assert note["goal_id"] == goal
    later = next(t for t in listed if t["priority"] == 3)
    assert later["run_at"].startswith("2030-01-01T08:00:00")

    # from standard input: a note without its goal, on line 2, refuses the whole batch
    bad = json.dumps({"kind": "noop"}) + "\n" + json.dumps({"kind": "note", "input": {}}) + "\n"
    refused = runner.invoke(app, ["task", "create", "--from-file", "-", "--db", db], input=bad)
    assert refused.exit_code == 1, refused.output
    assert "task 2: a note task writes into its goal" in refused.output
    malformed = "\n" + json.dumps({"kind": "noop", "colour": "red"}) + "\n"
    refused = runner.invoke(
        app, ["task", "create", "--from-file", "-", "--db", db], input=malformed
    )
    assert refused.exit_code == 1, refused.output
    assert "line 2: “colour” is not a field of a task" in refused.output
    code, out = cli(db, "task", "create", "noop", "--from-file", str(batch))
    assert code != 0, out
    assert "not both" in out
    assert len(cli_json(db, "task", "list", "--limit", "500")) == 180


async def test_the_facade_writes_all_or_none(store: Store, clock: SimulatedClock) -> None:
    svc = Service(store, clock, task_kinds=task_kinds())
    me = await svc.ensure_person()
    other = await store.persons.create_person(name="other", now=clock.now())
    mine = await svc.create_goal(person_id=me.id, title="mine")
    theirs = await svc.create_goal(person_id=other.id, title="theirs")
    ok = TaskRequest(spec=TaskSpec(kind="noop"))
    soon = clock.now() + timedelta(hours=1)
    created = await svc.create_tasks(
        person_id=me.id,
        requests=[
            ok,
            TaskRequest(spec=TaskSpec(kind="note", input={"text": "x"}), goal_id=mine.id),
            TaskRequest(spec=TaskSpec(kind="noop"), run_at=soon),
        ],
    )
    assert [t.kind for t in created] == ["noop", "note", "noop"]
    assert created[1].goal_id == mine.id
    assert created[2].run_at == soon
    before = await store.tasks.list_tasks(person_id=me.id)
    with pytest.raises(UsageError, match=r"task 2: a noop task's input\.steps"):
        await svc.create_tasks(
            person_id=me.id,
            requests=[ok, TaskRequest(spec=TaskSpec(kind="noop", input={"steps": 0}))],
        )
    # another person's goal is not found, and nothing of the batch is written
    with pytest.raises(NotFound):
        await svc.create_tasks(
            person_id=me.id,
            requests=[ok, TaskRequest(spec=TaskSpec(kind="noop"), goal_id=theirs.id)],
        )
    with pytest.raises(UsageError, match="no tasks"):
        await svc.create_tasks(person_id=me.id, requests=[])
    assert await store.tasks.list_tasks(person_id=me.id) == before
