"""Make ``release-0.1.0.db``: a SQLite database as Steward 0.1.0 left it, with work waiting.

Run with the code of release 0.1.0 (git commit 5062659), from the repository root::

    git worktree add /tmp/steward-0.1.0 5062659
    PYTHONPATH=/tmp/steward-0.1.0/src .venv/bin/python tests/data/make_release_db.py \\
        tests/data/release-0.1.0.db

It holds one person (Mia) with

* a goal whose agent task waits on an approval: the agent proposed ``send_invoice`` (an
  external action, so the default sentinel asked first), and the approval is pending;
* a second pending approval, of another agent task of the same goal;
* a task sleeping on a timer (``wait_event`` with a one-hour timeout, nothing will come);
* three memories.

``tests/store/test_release_upgrade.py`` opens a copy with the current code and checks that all
of it resumes. This file imports only what release 0.1.0 had, and the test imports the tool
and the script from here, so both sides agree on them.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from steward.domain import TaskSpec
from steward.domain.actions import EffectClass
from steward.domain.clock import SimulatedClock
from steward.harness.agent import AgentHarness
from steward.harness.tools import Tool, tool
from steward.harness.workspace import Workspace
from steward.models.scripted import ScriptedModel, call_tool
from steward.runtime.builtin import builtin_harness
from steward.runtime.worker import Worker
from steward.service import Service
from steward.store import Store

STARTED = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
"""The simulated time the database was made at."""
SEND = call_tool("send_invoice", to="ana@example.com", amount=120)
FINISH = call_tool("finish", result="done")
TIMER_SECONDS = 3600
MEMORIES = (
    "My sister Ana lives in Porto",
    "I prefer invoices in euros",
    "The settlement bug reports come from #payments",
)


def invoice_tool(sent: list[dict[str, Any]]) -> Tool:
    """An external tool that records what it really sent into ``sent``."""

    @tool(effect=EffectClass.EXTERNAL, scopes=["invoice.send"])
    async def send_invoice(to: str, amount: int) -> str:
        """Send an invoice."""
        sent.append({"to": to, "amount": amount})
        return f"invoice sent to {to}"

    return send_invoice


async def make(path: Path) -> None:
    clock = SimulatedClock(STARTED)
    store = await Store.open(f"sqlite:///{path}")
    try:
        svc = Service(store, clock)
        person = await svc.ensure_person("Mia")
        goal = await svc.create_goal(person_id=person.id, title="Send Ana's invoice")
        for content in MEMORIES:
            await svc.remember(person_id=person.id, content=content)
        for n in range(2):
            await store.tasks.create_task(
                TaskSpec(kind="agent", title=f"invoice {n}", input={"instructions": "send it"}),
                person_id=person.id,
                goal_id=goal.id,
                now=clock.now(),
            )
        await store.tasks.create_task(
            TaskSpec(
                kind="wait_event",
                title="timer",
                input={"type": "never", "timeout_seconds": TIMER_SECONDS},
            ),
            person_id=person.id,
            now=clock.now(),
        )
        with tempfile.TemporaryDirectory() as scratch:
            harness = AgentHarness(
                model=ScriptedModel([SEND, SEND]),
                workspace=Workspace(Path(scratch)),
                tools=[invoice_tool([])],
                fallback=builtin_harness(),
            )
            worker = Worker(store, harness, clock, lease_seconds=30.0, poll_seconds=None)
            await worker.run_until_idle()
    finally:
        await store.close()


if __name__ == "__main__":
    target = Path(sys.argv[1])
    for suffix in ("", "-wal", "-shm"):
        target.with_name(target.name + suffix).unlink(missing_ok=True)
    asyncio.run(make(target))
