"""An approval that waits days: the task asks, suspends, and after the person approves it days
later (in simulated time) another worker *process* resumes it at the same step — through the
real OpenAI-compatible adapter over a socket and an MCP tool configured as an external effect.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from steward.app import build_harness
from steward.config import Settings
from steward.domain import ApprovalStatus, Connection, TaskStatus
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.models.scripted import ScriptedModel, call_tool
from steward.runtime.worker import Worker
from steward.service import Service
from steward.store import Store
from steward.testing.model_server import run_model_server
from support.startup import scaled
from support.waiting import eventually

pytestmark = pytest.mark.slow

MCP_SERVER = {
    "name": "test",
    "command": sys.executable,
    "args": ["-m", "steward.testing.mcp_server"],
    "tools": {"echo": {"effect": "external", "scopes": ["demo.send"]}},
}
CONFIG_TOML = f"""
[[mcp_servers]]
name = "test"
command = "{sys.executable}"
args = ["-m", "steward.testing.mcp_server"]

[mcp_servers.tools.echo]
effect = "external"
scopes = ["demo.send"]
"""


async def test_approval_days_later_resumes_in_another_process(db_url: str, tmp_path: Path) -> None:
    model = ScriptedModel(
        [call_tool("test__echo", "call_send", text="hello Ada"), call_tool("finish", result="sent")]
    )
    store = await Store.open(db_url)
    # Simulated days that end before the real "now", so a worker process on the real clock
    # finds the task due; the approval (7 days) is still valid then.
    clock = SimulatedClock(datetime.now(UTC) - timedelta(days=5))
    svc = Service(store, clock)
    worker_proc: subprocess.Popen[bytes] | None = None
    try:
        with run_model_server(model) as server:
            settings = Settings(
                data_dir=tmp_path,
                model="scripted",
                model_base_url=server.url,
                model_api_key=server.api_key,
                mcp_servers=[MCP_SERVER],
            )
            harness = await build_harness(settings, store, clock)
            person = await svc.ensure_person()
            # the MCP server is a connection that may send (reading is not sending)
            await store.authority.add_connection(
                Connection(
                    id=new_id("con"),
                    person_id=person.id,
                    kind="mcp",
                    name="test",
                    scopes=("demo.send",),
                    created_at=clock.now(),
                )
            )
            task = await svc.ask_agent(person_id=person.id, instructions="Send Ada a hello")
            worker = Worker(store, harness, clock, poll_seconds=None, name="first")
            await worker.run_until_idle()

            waiting = await store.tasks.get_task(task.id)
            assert waiting.status is TaskStatus.WAITING
            assert waiting.wait is not None
            assert waiting.wait.kind == "approval"
            [approval] = await svc.list_approvals(person_id=person.id)
            assert approval.tool == "test__echo"
            assert approval.args == {"text": "hello Ada"}
            assert approval.id == waiting.wait.ref
            [note] = await svc.list_notifications(person_id=person.id)
            assert (note.kind, note.ref) == ("approval", approval.id)
            assert server.requests == 1
            suspended_at = waiting.step_seq

            clock.advance(timedelta(days=3))
            decided = await svc.decide_approval(approval.id, approve=True, decided_by="test")
            assert decided.status is ApprovalStatus.APPROVED

            config = tmp_path / "steward.toml"
            config.write_text(CONFIG_TOML)
            env = os.environ | {
                "STEWARD_CONFIG": str(config),
                "STEWARD_DATA_DIR": str(tmp_path),
                "STEWARD_MODEL": "scripted",
                "STEWARD_MODEL_BASE_URL": server.url,
                "STEWARD_MODEL_API_KEY": server.api_key,
            }
            cmd = [sys.executable, "-m", "steward.cli.main", "worker", "--db", db_url]
            with (tmp_path / "worker.log").open("wb") as log:
                # started once and polled below; nothing blocks on it
                worker_proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=log)  # noqa: ASYNC220

            async def succeeded() -> bool:
                return (await store.tasks.get_task(task.id)).status is TaskStatus.SUCCEEDED

            await eventually(
                succeeded,
                "the task to succeed",
                seconds=scaled(60),
                every=0.2,
                gone=lambda: None if worker_proc.poll() is None else "the worker exited",
                details=(tmp_path / "worker.log").read_text,
            )

            steps = await store.activations.list_steps(task.id)
            kinds = [(s.seq, s.kind) for s in steps]
            assert kinds == [(1, "model"), (2, "suspend"), (3, "tool"), (4, "model"), (5, "tool")]
            assert suspended_at == 2
            observed = steps[2].output
            assert observed["call_id"] == "call_send"
            assert "hello Ada" in observed["observation"]
            assert not observed["error"]
            # the recorded answer was reused: one request before, one (finish) after
            assert server.requests == 2
            first, second = await store.activations.list_activations(task_id=task.id)
            assert first.worker == "first"
            assert second.worker != "first"
            assert second.reason == "approval"
            # every decision is in the audit log with what decided it, and the chain holds
            decisions = [
                (e.data["tool"], e.data["verdict"])
                for e in await store.audit.list_audit(person_id=person.id)
                if e.kind == "decision"
            ]
            assert decisions[0] == ("test__echo", "ask")
            assert ("finish", "allow") in decisions
            assert (await store.audit.verify_audit()).ok
    finally:
        if worker_proc is not None:
            worker_proc.terminate()
            worker_proc.wait(timeout=scaled(10))
        await store.close()
