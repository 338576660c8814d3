"""The registry of runtime processes, and claims by what a worker can run: two runtimes on one
database (SQLite and PostgreSQL), one without a model; each registers, beats and stops; the
agent task waits for the one with a model."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import steward
from steward.app import build_harness, cannot_run, process_identity
from steward.config import Settings
from steward.domain import TaskSpec, TaskStatus
from steward.domain.clock import SimulatedClock
from steward.domain.workers import ProcessState
from steward.harness.agent import AGENT_KIND
from steward.models.scripted import ScriptedModel, call_tool
from steward.runtime.runtime import Runtime, RuntimeConfig
from steward.service import Service
from steward.store import Store
from support.waiting import eventually

LEASE = 30.0


async def _runtime(
    store: Store, clock: SimulatedClock, data_dir: Path, *, model: ScriptedModel | None
) -> Runtime:
    """A runtime as ``steward up`` builds one: without a model, it leaves agent tasks alone."""
    settings = Settings(data_dir=data_dir, model=None if model is None else "scripted")
    harness = await build_harness(settings, store, clock, model=model)
    return Runtime(
        store,
        harness,
        clock,
        RuntimeConfig(poll_seconds=None, lease_seconds=LEASE, skip_kinds=cannot_run(harness)),
        identity=process_identity(settings, harness, http=model is None),
    )


async def test_the_agent_task_goes_to_the_runtime_with_a_model(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    svc = Service(store, clock)
    person = await svc.ensure_person()
    bare = await _runtime(store, clock, tmp_path / "bare", model=None)
    model = ScriptedModel([call_tool("finish", result="Done.")])
    able = await _runtime(store, clock, tmp_path / "able", model=model)
    stop = asyncio.Event()
    beats = [asyncio.create_task(r.registration.run(stop)) for r in (bare, able) if r.registration]

    async def both_running() -> bool:
        status = await svc.status()
        return [p.state for p in status.processes] == [ProcessState.RUNNING] * 2

    await eventually(both_running, "both runtimes registered", seconds=30)
    task = await svc.ask_agent(person_id=person.id, instructions="Say done.")
    noop = await svc.create_task(person_id=person.id, spec=TaskSpec(kind="noop"))

    # the runtime without a model takes the step-function task and leaves the agent's
    assert await bare.workers[0].run_until_idle() == 1
    assert (await store.tasks.get_task(noop.id)).status is TaskStatus.SUCCEEDED
    assert (await store.tasks.get_task(task.id)).status is TaskStatus.PENDING
    assert (await svc.status()).can_run(AGENT_KIND)

    assert await able.workers[0].run_until_idle() == 1
    done = await store.tasks.get_task(task.id)
    assert done.status is TaskStatus.SUCCEEDED
    [activation] = await store.activations.list_activations(task_id=task.id)
    assert activation.worker.startswith(able.name)

    status = await svc.status()
    by_name = {p.process.id: p.process for p in status.processes}
    assert by_name[bare.name].model is None
    assert by_name[bare.name].cannot_run == (AGENT_KIND,)
    assert by_name[bare.name].roles == ("scheduler", "worker", "http")
    assert by_name[able.name].model == "scripted"
    assert by_name[able.name].version == steward.__version__
    assert by_name[bare.name].fingerprint != by_name[able.name].fingerprint

    stop.set()
    await asyncio.gather(*beats)
    for r in (bare, able):
        assert r.registration is not None
        await r.registration.stopped()
    states = {p.state for p in (await svc.status()).processes}
    assert states == {ProcessState.STOPPED}
    assert not (await svc.status()).can_run(AGENT_KIND)


async def test_a_process_that_stops_beating_is_gone_and_the_leader_is_shown(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    svc = Service(store, clock)
    runtime = await _runtime(store, clock, tmp_path, model=None)
    assert runtime.registration is not None
    assert runtime.scheduler is not None
    stop = asyncio.Event()
    beat = asyncio.create_task(runtime.registration.run(stop))
    await eventually(lambda: _registered(svc), "registered", seconds=30)
    await runtime.scheduler.tick()
    [process] = (await svc.status()).processes
    assert process.leader
    assert process.state is ProcessState.RUNNING
    # killed: no heartbeat any more, and no graceful stop
    beat.cancel()
    clock.advance(timedelta(seconds=LEASE * 3 + 1))
    [process] = (await svc.status()).processes
    assert process.state is ProcessState.GONE
    assert not process.leader


async def test_a_commands_own_runtime_is_not_left_work(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    """``steward ask`` running its own runtime registers it, but another ask does not leave its
    task to it: it ends with its command."""
    svc = Service(store, clock)
    settings = Settings(data_dir=tmp_path, model="scripted")
    harness = await build_harness(settings, store, clock, model=ScriptedModel([]))
    runtime = Runtime(
        store,
        harness,
        clock,
        RuntimeConfig(poll_seconds=None),
        identity=process_identity(settings, harness, cli=True),
    )
    assert runtime.registration is not None
    stop = asyncio.Event()
    beat = asyncio.create_task(runtime.registration.run(stop))
    await eventually(lambda: _registered(svc), "registered", seconds=30)
    [process] = (await svc.status()).processes
    assert "cli" in process.process.roles
    assert process.process.model == "scripted"
    assert not (await svc.status()).can_run(AGENT_KIND)
    stop.set()
    await beat


async def _registered(svc: Service) -> bool:
    return bool((await svc.status()).processes)
