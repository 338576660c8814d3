"""Where ``steward ask`` runs its task: a server registered on the same database that runs agent
tasks takes it (the command runs no worker of its own); without one, the command runs its own."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from steward.cli.agent import _live
from steward.domain.clock import Clock
from steward.domain.workers import WorkerProcess
from steward.store import Store


def server(clock: Clock, *, model: str | None, ago: float = 0.0) -> WorkerProcess:
    at = clock.now() - timedelta(seconds=ago)
    return WorkerProcess(
        id=f"nas:{int(ago)}:{model}",
        host="nas",
        pid=1,
        version="1",
        fingerprint="f",
        model=model,
        roles=("scheduler", "worker", "http"),
        cannot_run=() if model else ("agent",),
        lease_seconds=30.0,
        started_at=at,
        heartbeat_at=at,
    )


@pytest.mark.parametrize(
    ("registered", "own_worker"),
    [
        ([("llama3.1", 0.0)], False),  # a live server with a model: enqueue and follow
        ([(None, 0.0)], True),  # the server has no model: run our own
        ([("llama3.1", 3600.0)], True),  # the server stopped beating an hour ago
        ([], True),  # nothing registered
    ],
)
async def test_ask_runs_a_worker_only_when_no_live_server_can(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    registered: list[tuple[str | None, float]],
    own_worker: bool,
) -> None:
    monkeypatch.setenv("STEWARD_DATA_DIR", str(tmp_path))
    for name in ("STEWARD_SERVER", "STEWARD_TOKEN", "STEWARD_DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    url = f"sqlite:///{tmp_path / 'steward.db'}"
    store = await Store.open(url)
    clock = Clock()
    for model, ago in registered:
        await store.workers.register(server(clock, model=model, ago=ago))
    await store.close()
    async with _live(url) as svc:
        assert (svc.runtime is not None) is own_worker
