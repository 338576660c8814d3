"""Where ``steward ask`` runs its task: a server registered on the same database that runs agent
tasks takes it (the command runs no worker of its own); without one, the command runs its own.
And what it shows while its task is retried."""

from __future__ import annotations

import asyncio
import io
from datetime import timedelta
from pathlib import Path

import pytest
import typer
from rich.console import Console

from steward.cli import agent
from steward.cli.agent import _final, _follow, _live
from steward.domain import TaskSpec
from steward.domain.clock import Clock
from steward.domain.outcome import Outcome
from steward.domain.workers import WorkerProcess
from steward.runtime.runtime import Runtime, RuntimeConfig
from steward.runtime.stepfn import StepContext, StepHarness
from steward.service import Service
from steward.store import Store
from support.waiting import eventually


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


async def test_ask_says_each_failed_attempt_and_the_cause_it_gave_up_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Retries are not silent: each failed attempt is shown with its cause and the time of the
    next one; the end names the cause too."""
    shown = io.StringIO()
    monkeypatch.setattr(agent, "console", Console(file=shown, width=300))
    calls = 0

    async def out_of_paper(ctx: StepContext) -> Outcome | None:
        nonlocal calls
        calls += 1
        # the next attempt only once the terminal said the last one failed
        await eventually(
            lambda: _said(shown, f"attempt {calls - 1} of 5 failed") if calls > 1 else _true(),
            "the failed attempt shown",
            seconds=60,
        )
        raise OSError("the printer is out of paper")

    store = await Store.open(f"sqlite:///{tmp_path / 'steward.db'}")
    clock = Clock()
    harness = StepHarness()
    harness.register("print", out_of_paper)
    runtime = Runtime(
        store, harness, clock, RuntimeConfig(poll_seconds=0.05, retry_base_seconds=0.01)
    )
    try:
        svc = Service(store, clock, runtime)
        person = await svc.ensure_person()
        task = await svc.create_task(person_id=person.id, spec=TaskSpec(kind="print"))
        running = asyncio.create_task(runtime.run())
        ended = await _follow(svc, task.id, interactive=False)
        runtime.stop()
        await running
        with pytest.raises(typer.Exit):
            _final(ended)
    finally:
        await store.close()
    lines = shown.getvalue().splitlines()
    assert [line.split("; trying again at ")[0] for line in lines if "attempt" in line[:12]] == [
        f"  attempt {n} of 5 failed: OSError: the printer is out of paper" for n in range(1, 5)
    ]
    assert lines[-1] == "gave up after 5 attempts: OSError: the printer is out of paper"


async def _said(shown: io.StringIO, text: str) -> bool:
    return text in shown.getvalue()


async def _true() -> bool:
    return True
