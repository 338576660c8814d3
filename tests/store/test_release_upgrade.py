"""A database Steward 0.1.0 left behind (``tests/data/release-0.1.0.db``, made by
``tests/data/make_release_db.py`` with that release's code) is upgraded by ``steward upgrade``
and all its waiting work resumes with the current code."""

from __future__ import annotations

import asyncio
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from data.make_release_db import FINISH, MEMORIES, STARTED, TIMER_SECONDS, invoice_tool
from steward.cli.main import app
from steward.domain import ApprovalStatus, TaskStatus
from steward.domain.clock import SimulatedClock
from steward.harness.agent import AgentHarness
from steward.harness.workspace import Workspace
from steward.models.scripted import ScriptedModel
from steward.runtime.builtin import builtin_harness
from steward.runtime.scheduler import Scheduler
from steward.runtime.worker import Worker
from steward.service import Service
from steward.store import Store, migrate

RELEASE_DB = Path(__file__).parent.parent / "data" / "release-0.1.0.db"


async def test_a_release_0_1_0_database_upgrades_and_its_waiting_work_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    shutil.copyfile(RELEASE_DB, data_dir / "steward.db")
    monkeypatch.setenv("STEWARD_DATA_DIR", str(data_dir))
    monkeypatch.delenv("STEWARD_DATABASE_URL", raising=False)
    # the command runs its own event loop: off this test's
    upgraded = await asyncio.to_thread(CliRunner().invoke, app, ["upgrade"])
    assert upgraded.exit_code == 0, upgraded.output
    assert migrate.head_revision() in upgraded.output

    clock = SimulatedClock(STARTED + timedelta(days=2))
    store = await Store.open(f"sqlite:///{data_dir / 'steward.db'}")
    try:
        svc = Service(store, clock)
        [person] = await store.persons.list_persons()
        # the memories are there and recall finds them
        for content in MEMORIES:
            hits = await svc.search_memories(person_id=person.id, query=content.split()[-1])
            assert content in [hit.memory.content for hit in hits]
        approvals = await store.inbox.list_approvals(person_id=person.id)
        assert [a.status for a in approvals] == [ApprovalStatus.PENDING] * 2

        sent: list[dict[str, Any]] = []
        harness = AgentHarness(
            model=ScriptedModel([FINISH]),
            workspace=Workspace(data_dir / "workspace"),
            tools=[invoice_tool(sent)],
            fallback=builtin_harness(),
        )
        worker = Worker(store, harness, clock, lease_seconds=30.0, poll_seconds=None)
        assert await worker.run_until_idle() == 0  # nothing is due until the person decides

        # approved two days later: the waiting goal task resumes at the proposed call
        approved = approvals[0]
        await svc.decide_approval(approved.id, approve=True)
        assert await worker.run_until_idle() == 1
        task = await store.tasks.get_task(approved.task_id)
        assert task.status is TaskStatus.SUCCEEDED
        assert sent == [{"to": "ana@example.com", "amount": 120}]

        # the timer fires once the clock passes it
        [timer] = await store.tasks.list_tasks(kind="wait_event")
        assert timer.status is TaskStatus.WAITING
        clock.advance(timedelta(seconds=TIMER_SECONDS))
        await Scheduler(store, clock).tick()
        assert await worker.run_until_idle() == 1
        timer = await store.tasks.get_task(timer.id)
        assert timer.status is TaskStatus.SUCCEEDED
        assert timer.result == {"event": None, "timed_out": True}
        # the other approval still waits, untouched
        assert (await store.inbox.get_approval(approvals[1].id)).status is ApprovalStatus.PENDING
    finally:
        await store.close()


def _steward(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_upgrade_takes_a_backup_then_migrates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    monkeypatch.setenv("STEWARD_DATA_DIR", str(data))
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("STEWARD_DATABASE_URL", raising=False)
    behind = migrate.revisions()[-2]
    engine = sa.create_engine(f"sqlite:///{data / 'steward.db'}")
    migrate.upgrade(engine, behind)
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO persons (id, name, max_concurrency, timezone, created_at) "
                "VALUES ('per_1', 'Mia', 4, 'UTC', 0)"
            )
        )
    engine.dispose()
    code, out = _steward("upgrade")
    assert code == 0, out
    head = migrate.head_revision()
    assert f"Upgraded the schema from {behind} to {head}" in " ".join(out.split())
    [backup] = (data / "backups").iterdir()
    assert backup.name in "".join(out.split())  # the terminal may wrap it anywhere
    code, out = _steward("upgrade")
    assert "up to date" in out
