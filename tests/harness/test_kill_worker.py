"""Kill -9 a worker process right after the model answered with a tool call and before the
tool ran: the next worker reuses the recorded answer (the scripted server counts requests) and
the tool runs once. Real processes, a real socket, an MCP tool over stdio."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from steward.domain import TaskSpec, TaskStatus
from steward.models.scripted import ScriptedModel, call_tool
from steward.store import Store
from steward.testing.model_server import run_model_server
from support.startup import scaled
from support.waiting import eventually

pytestmark = pytest.mark.slow


def config(tmp_path: Path, record: Path) -> Path:
    path = tmp_path / "steward.toml"
    path.write_text(
        f"""
[[mcp_servers]]
name = "test"
command = "{sys.executable}"
args = ["-m", "steward.testing.mcp_server"]
env = {{ STEWARD_MCP_RECORD = "{record}" }}

[mcp_servers.tools.record]
effect = "local"
"""
    )
    return path


def start(role: str, db_url: str, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """``steward <role>`` as its own process, with a short lease so a dead worker's task is
    taken over quickly."""
    cmd = [sys.executable, "-m", "steward.cli.main", role, "--db", db_url]
    if role == "worker":
        cmd += ["--lease-seconds", "2"]
    with log.open("ab") as out:
        return subprocess.Popen(cmd, env=env, stdout=out, stderr=out)


async def test_killed_after_the_model_answered_reuses_the_answer_and_runs_the_tool_once(
    db_url: str, tmp_path: Path
) -> None:
    record = tmp_path / "record.txt"
    model = ScriptedModel(
        [call_tool("test__record", "call_rec", text="once"), call_tool("finish", result="ok")]
    )
    store = await Store.open(db_url)
    log = tmp_path / "workers.log"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with run_model_server(model) as server:
            env = os.environ | {
                "STEWARD_CONFIG": str(config(tmp_path, record)),
                "STEWARD_DATA_DIR": str(tmp_path),
                "STEWARD_MODEL": "scripted",
                "STEWARD_MODEL_BASE_URL": server.url,
                "STEWARD_MODEL_API_KEY": server.api_key,
            }
            now = datetime.now(UTC)
            person = await store.persons.create_person(name="p", now=now)
            task = await store.tasks.create_task(
                TaskSpec(kind="agent", input={"instructions": "record once"}, max_attempts=5),
                person_id=person.id,
                now=now,
            )
            armed = env | {"STEWARD_FAILPOINTS": "agent.after_model_step"}
            doomed = start("worker", db_url, armed, log)
            procs.append(doomed)
            assert await asyncio.to_thread(doomed.wait, scaled(60)) == 137, log.read_text()
            assert server.requests == 1
            assert not record.exists()  # died before the tool ran
            steps = await store.activations.list_steps(task.id)
            assert [s.kind for s in steps] == ["model"]

            # a scheduler reaps the expired lease; a fresh worker carries on
            procs.append(start("scheduler", db_url, env, log))
            procs.append(start("worker", db_url, env, log))

            async def succeeded() -> bool:
                return (await store.tasks.get_task(task.id)).status is TaskStatus.SUCCEEDED

            await eventually(
                succeeded,
                "the task to succeed",
                seconds=scaled(60),
                every=0.1,
                details=log.read_text,
            )
            assert server.requests == 2  # the recorded answer was reused, not asked again
            assert record.read_text() == "once\n"  # the tool ran once
            kinds = [s.kind for s in await store.activations.list_steps(task.id)]
            assert kinds == ["model", "tool", "model", "tool"]
            first, second = await store.activations.list_activations(task_id=task.id)
            assert first.outcome in (None, "lost")  # its worker died holding it
            assert (second.reason, second.outcome) == ("recovered", "succeed")
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
        await store.close()
