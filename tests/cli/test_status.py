"""``steward status`` in plain text and JSON, from a database with registered processes (one
killed, one running and leading), queued and waiting work, an approval and a trigger."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path

from steward.cli.status import describe
from steward.domain import TaskSpec, TriggerKind
from steward.domain.clock import Clock
from steward.domain.workers import WorkerProcess
from steward.runtime.scheduler import Scheduler
from steward.service import Service
from steward.store import Store
from support.cli import cli


def _process(name: str, clock: Clock, *, model: str | None, ago: float) -> WorkerProcess:
    at = clock.now() - timedelta(seconds=ago)
    return WorkerProcess(
        id=name,
        host="nas",
        pid=4242 if model else 77,
        version="1.2.3",
        fingerprint="abc123def456",
        model=model,
        roles=("scheduler", "worker", "http"),
        cannot_run=() if model else ("agent",),
        lease_seconds=30.0,
        started_at=at,
        heartbeat_at=at,
    )


async def _world(url: str) -> list[str]:
    """Two processes (one killed an hour ago), a queued task and a daily trigger; what
    ``steward status`` prints about them."""
    store = await Store.open(url)
    clock = Clock()
    try:
        svc = Service(store, clock)
        person = await svc.ensure_person()
        await store.workers.register(_process("nas:77:aa", clock, model=None, ago=3600))
        await store.workers.register(_process("nas:4242:bb", clock, model="llama3.1", ago=2))
        await Scheduler(store, clock, name="nas:4242:bb").tick()
        await svc.create_task(person_id=person.id, spec=TaskSpec(kind="noop"))
        await svc.add_trigger(
            person_id=person.id, kind=TriggerKind.CRON, spec="0 8 * * *", task=TaskSpec(kind="noop")
        )
        return describe(await svc.status())
    finally:
        await store.close()


def test_status_says_what_runs_where_and_what_waits(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'steward.db'}"
    lines = asyncio.run(_world(url))
    assert lines[0] == "Processes:"
    assert lines[1].startswith(
        "  running: scheduler (at work), worker, http - pid 4242 on nas, steward 1.2.3, model "
        "llama3.1, settings abc123def456, last heartbeat "
    )
    assert lines[2].startswith(
        "  GONE (no heartbeat): scheduler, worker, http - pid 77 on nas, steward 1.2.3, model no "
        "model (leaves agent tasks to others), settings abc123def456, last heartbeat 60 min ago"
    )
    assert lines[3] == "Tasks: 1 pending"
    assert lines[4] == "Goals at work: 0; approvals waiting for you: 0; effects in doubt: 0"
    assert lines[5].startswith("Next wake-up: ")
    assert "(a trigger fires, in " in lines[5]

    code, out = cli(url, "status", "--json")
    assert code == 0, out
    shown = json.loads(out)
    assert shown["tasks"] == {"pending": 1}
    assert [p["state"] for p in shown["processes"]] == ["running", "gone"]
    assert [p["leader"] for p in shown["processes"]] == [True, False]
    code, out = cli(url, "status")
    assert code == 0, out
    assert "scheduler (at work)" in out


def test_nothing_running_says_how_to_start(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'steward.db'}"
    code, out = cli(url, "status")
    assert code == 0, out
    assert out.splitlines()[:3] == [
        "Processes:",
        "  none running: start one with 'steward up'",
        "  no scheduler is at work: triggers and timed waits are not firing",
    ]
