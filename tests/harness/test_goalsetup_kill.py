"""Kill -9 a worker process in the middle of setting up a goal — the goal written, its schedule
not yet, the effect's outcome not recorded: the next worker settles the effect under the same
key, and the person has one goal with one schedule. Real processes, a real socket."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from steward.domain import TaskStatus, TriggerKind
from steward.domain.clock import Clock
from steward.domain.journal import EffectStatus
from steward.models.scripted import ScriptedModel, call_tool
from steward.service import Service
from steward.store import Store
from steward.testing.model_server import run_model_server
from support.startup import scaled
from support.waiting import eventually

pytestmark = pytest.mark.slow


def start(role: str, db_url: str, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "steward.cli.main", role, "--db", db_url]
    if role == "worker":
        cmd += ["--lease-seconds", "2"]
    with log.open("ab") as out:
        return subprocess.Popen(cmd, env=env, stdout=out, stderr=out)


async def test_a_worker_killed_after_the_goal_was_written_leaves_one_goal_and_one_schedule(
    db_url: str, tmp_path: Path
) -> None:
    model = ScriptedModel(
        [
            call_tool(
                "create_goal",
                title="Calendar conflicts",
                instructions="Check your calendar and tell you if two events overlap.",
                schedule=["cron 0 8 * * 1-5"],
                report_policy="actionable",
            ),
            call_tool("finish", result="Set up."),
        ]
    )
    store = await Store.open(db_url)
    clock = Clock()
    log = tmp_path / "workers.log"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with run_model_server(model) as server:
            env = os.environ | {
                "STEWARD_DATA_DIR": str(tmp_path),
                "STEWARD_MODEL": "scripted",
                "STEWARD_MODEL_BASE_URL": server.url,
                "STEWARD_MODEL_API_KEY": server.api_key,
            }
            person = await store.persons.create_person(
                name="Ana", timezone="Europe/Zurich", now=clock.now()
            )
            svc = Service(store, clock)
            await svc.add_rule(person_id=person.id, pattern="create_goal", mode="do")
            task = await svc.ask_agent(
                person_id=person.id, instructions="Every weekday at 8, check my calendar"
            )
            armed = env | {"STEWARD_FAILPOINTS": "goalsetup.after_goal"}
            doomed = start("worker", db_url, armed, log)
            procs.append(doomed)
            assert await asyncio.to_thread(doomed.wait, scaled(60)) == 137, log.read_text()
            [goal] = await store.goals.list_goals(person_id=person.id)
            assert await store.schedule.list_triggers(goal_id=goal.id) == []  # died before

            procs.append(start("scheduler", db_url, env, log))
            procs.append(start("worker", db_url, env, log))

            async def succeeded() -> bool:
                return (await store.tasks.get_task(task.id)).status is TaskStatus.SUCCEEDED

            await eventually(
                succeeded,
                "the task to succeed",
                seconds=scaled(90),
                every=0.2,
                details=log.read_text,
            )
            assert [g.id for g in await store.goals.list_goals(person_id=person.id)] == [goal.id]
            [trigger] = await store.schedule.list_triggers(goal_id=goal.id)
            assert (trigger.kind, trigger.spec, trigger.timezone) == (
                TriggerKind.CRON,
                "0 8 * * 1-5",
                "Europe/Zurich",
            )
            [effect] = await store.effects.list_effects(task_id=task.id)
            assert effect.status is EffectStatus.SUCCEEDED
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
        await store.close()
