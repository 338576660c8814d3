"""Steward as an MCP server over stdio, as a desktop assistant launches it: a subprocess serving
one token's person on a SQLite file, driven by the official MCP client."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from steward.api.mcp import run_stdio
from steward.domain import ApprovalStatus
from steward.domain.clock import SimulatedClock
from steward.errors import Unauthorized
from steward.service import Service
from steward.store import Store
from support.mcp import ok, refused
from support.tenancy import make_tenant

SERVE = """
import asyncio, os, sys
from steward.api.mcp import run_stdio
from steward.logs import configure as configure_logging
from steward.service import Service
from steward.store import Store

configure_logging("warning")  # to stderr: stdout is the wire

async def main() -> None:
    store = await Store.open(sys.argv[1])
    try:
        await run_stdio(Service(store), os.environ["STEWARD_TOKEN"])
    finally:
        await store.close()

asyncio.run(main())
"""


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    """A SQLite file, which the server process opens too."""
    opened = await Store.open(f"sqlite:///{tmp_path}/steward.db")
    try:
        yield opened
    finally:
        await opened.close()


def serve(store: Store, token: str) -> Client:
    command = StdioServerParameters(
        command=sys.executable, args=["-c", SERVE, store.url], env={"STEWARD_TOKEN": token}
    )
    return Client(command, cache=None)


@pytest.mark.slow  # a server process, which takes seconds to import Steward and the SDK
async def test_serves_one_tokens_person_over_stdio(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    a = await make_tenant(store, clock, "ann", tmp_path)
    b = await make_tenant(store, clock, "bob", tmp_path)
    async with serve(store, a.control) as client:
        assert "decide_approval" in {t.name for t in (await client.list_tools()).tools}
        goals = await ok(client, "list_goals")
        assert [g["id"] for g in goals["items"]] == [a.goal.id]
        await ok(client, "decide_approval", approval_id=a.approval.id, approve=False)
        assert "not found" in await refused(client, "task", task_id=b.task.id)
    approval = await Service(store).get_approval(a.approval.id)
    assert (approval.status, approval.decided_by) == (ApprovalStatus.DENIED, f"token:{a.token.id}")


async def test_refuses_a_bad_token_before_serving(store: Store) -> None:
    # refused before stdin/stdout are touched, so this runs in the test process itself
    with pytest.raises(Unauthorized):
        await run_stdio(Service(store), "stw_not-a-token")
