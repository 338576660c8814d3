"""Steward as an MCP server over streamable HTTP, through the official MCP client over a real
socket, on both backends, for two tenants: the same tokens and policy as the HTTP API.

(Not ``tests/mcp``: that package would shadow the SDK's ``mcp`` for pytest, and make ruff
count ``mcp`` as first-party everywhere.)
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from steward.api import create_app
from steward.api.common import PROBLEM
from steward.api.mcp import PATH
from steward.domain import ApprovalStatus
from steward.domain.clock import SimulatedClock
from steward.service import Service
from steward.store import Store
from steward.testing.http_server import serving
from support.mcp import ok, refused
from support.tenancy import Tenant, ids_of, make_tenant

TOOLS = {
    "create_goal",
    "list_goals",
    "ask",
    "list_tasks",
    "task",
    "list_approvals",
    "decide_approval",
    "search_memory",
    "remember",
    "list_notifications",
}


@dataclass
class Served:
    url: str
    """``http://127.0.0.1:<port>/mcp``."""
    owner: Service
    a: Tenant
    b: Tenant


@pytest.fixture
async def served(store: Store, clock: SimulatedClock, tmp_path: Path) -> AsyncIterator[Served]:
    a = await make_tenant(store, clock, "ann", tmp_path)
    b = await make_tenant(store, clock, "bob", tmp_path)
    owner = Service(store, clock, data_dir=tmp_path)
    app = create_app(owner)
    async with serving(app) as base:
        yield Served(url=base + PATH, owner=owner, a=a, b=b)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@asynccontextmanager
async def connect(url: str, token: str, *, mode: str = "auto") -> AsyncIterator[Client]:
    """The official client, sending ``token`` as the bearer on every request."""
    async with httpx2.AsyncClient(headers=bearer(token), timeout=30) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode, cache=None) as client:
            yield client


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_lists_the_tools_with_typed_arguments(served: Served, mode: str) -> None:
    async with connect(served.url, served.a.read, mode=mode) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert set(listed) == TOOLS
        assert all(t.description for t in listed.values())
        assert listed["create_goal"].input_schema["required"] == ["title"]
        scope = listed["decide_approval"].input_schema["properties"]["scope"]
        assert scope["enum"] == ["once", "task", "hours", "always"]
        assert listed["list_goals"].annotations is not None
        assert listed["list_goals"].annotations.read_only_hint
        # a read-token client works in both protocol eras
        assert (await ok(client, "list_goals"))["items"]


async def test_creates_a_goal_and_lists_it(served: Served) -> None:
    a = served.a
    async with connect(served.url, a.control) as client:
        goal = await ok(client, "create_goal", title="Learn Portuguese", instructions="daily")
        assert goal["person_id"] == a.person.id
        assert (goal["title"], goal["instructions"]) == ("Learn Portuguese", "daily")
        listed = await ok(client, "list_goals")
        assert {g["id"] for g in listed["items"]} == {goal["id"], a.goal.id}
        assert (await ok(client, "list_goals", status="paused"))["items"] == []
        assert "title" in await refused(client, "create_goal", title="")
    assert (await served.owner.goal_detail(goal["id"]))["goal"].person_id == a.person.id


async def test_asks_the_agent_and_follows_the_task(served: Served) -> None:
    a = served.a
    async with connect(served.url, a.control) as client:
        asked = await ok(client, "ask", instructions="Book a table for two", goal_id=a.goal.id)
        assert (asked["kind"], asked["goal_id"]) == ("agent", a.goal.id)
        listed = await ok(client, "list_tasks", goal_id=a.goal.id)
        assert {t["id"] for t in listed["items"]} == {asked["id"], a.task.id}
        pending = await ok(client, "list_tasks", status="pending")
        assert [t["id"] for t in pending["items"]] == [asked["id"]]
        detail = await ok(client, "task", task_id=asked["id"])
        assert detail["task"]["input"]["instructions"] == "Book a table for two"
        assert "empty" in await refused(client, "ask", instructions="   ")


async def test_remembers_searches_and_lists_notifications(served: Served) -> None:
    a = served.a
    async with connect(served.url, a.control) as client:
        written = await ok(client, "remember", content="Ann prefers aisle seats", kind="preference")
        assert written["memory"]["kind"] == "preference"
        found = await ok(client, "search_memory", query="aisle seats")
        assert [h["memory"]["id"] for h in found["items"]] == [written["memory"]["id"]]
        assert "group" in await refused(client, "search_memory", query="x", audience="group:")
        notes = await ok(client, "list_notifications", unread=True)
        assert [n["id"] for n in notes["items"]] == [a.notification]


async def test_decides_an_approval_as_the_token(served: Served) -> None:
    a = served.a
    async with connect(served.url, a.control) as client:
        pending = await ok(client, "list_approvals")
        assert [p["id"] for p in pending["items"]] == [a.approval.id]
        decided = await ok(
            client, "decide_approval", approval_id=a.approval.id, approve=True, note="fine"
        )
        assert decided["status"] == "approved"
        assert decided["decided_by"] == f"token:{a.token.id}"
        assert (await ok(client, "list_approvals"))["items"] == []
        # the facade's own refusal, as the tool's error
        again = await refused(client, "decide_approval", approval_id=a.approval.id, approve=False)
        assert "already approved" in again
    stored = await served.owner.get_approval(a.approval.id)
    assert (stored.status, stored.decided_by) == (ApprovalStatus.APPROVED, f"token:{a.token.id}")


async def test_a_read_token_lists_but_changes_nothing(served: Served) -> None:
    a = served.a
    async with connect(served.url, a.read) as client:
        assert [g["id"] for g in (await ok(client, "list_goals"))["items"]] == [a.goal.id]
        assert (await ok(client, "list_approvals"))["items"]
        assert (await ok(client, "search_memory", query="Lisbon"))["items"]
        changes: list[tuple[str, dict[str, Any]]] = [
            ("create_goal", {"title": "t"}),
            ("ask", {"instructions": "do it"}),
            ("remember", {"content": "c"}),
            ("decide_approval", {"approval_id": a.approval.id, "approve": True}),
        ]
        for tool, arguments in changes:
            assert "'control' scope" in await refused(client, tool, **arguments)
    assert [g.id for g in await served.owner.list_goals(person_id=a.person.id)] == [a.goal.id]
    assert (await served.owner.get_approval(a.approval.id)).status is ApprovalStatus.PENDING


async def test_a_token_never_sees_or_touches_another_persons_objects(served: Served) -> None:
    a, b = served.a, served.b
    async with connect(served.url, a.control) as client:
        shown = [
            await ok(client, "list_goals"),
            await ok(client, "list_tasks"),
            await ok(client, "list_tasks", goal_id=b.goal.id),
            await ok(client, "list_approvals"),
            await ok(client, "list_notifications"),
            await ok(client, "search_memory", query="lives in Lisbon"),
        ]
        text = json.dumps(shown)
        assert a.goal.id in text
        assert a.memory.id in text
        assert not [i for i in ids_of(b) if i in text]
        assert "not found" in await refused(client, "task", task_id=b.task.id)
        for approve in (True, False):
            message = await refused(
                client, "decide_approval", approval_id=b.approval.id, approve=approve
            )
            assert "not found" in message
        assert "not found" in await refused(client, "ask", instructions="x", goal_id=b.goal.id)
    assert (await served.owner.get_approval(b.approval.id)).status is ApprovalStatus.PENDING
    assert [t.id for t in await served.owner.list_tasks(goal_id=b.goal.id)] == [b.task.id]


async def test_refuses_requests_without_a_live_token(served: Served) -> None:
    a = served.a
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream"}
    await served.owner.revoke_token(a.token.id, person_id=a.person.id)  # a.control's token
    async with httpx.AsyncClient(timeout=30) as http:
        for auth in ({}, {"Authorization": "Basic YTpi"}, bearer("garbage"), bearer(a.control)):
            answer = await http.post(served.url, json=initialize, headers=accept | auth)
            assert answer.status_code == 401, (auth, answer.text)
            assert answer.headers["content-type"] == PROBLEM
            assert answer.headers["www-authenticate"] == "Bearer"
        # the same request with a live token is served
        answer = await http.post(served.url, json=initialize, headers=accept | bearer(a.read))
        assert answer.status_code == 200, answer.text
        assert answer.json()["result"]["serverInfo"]["name"] == "steward"
        # no sessions: no stream to open, none to end
        for method in ("GET", "DELETE"):
            answer = await http.request(method, served.url, headers=accept | bearer(a.read))
            assert answer.status_code == 405, (method, answer.text)
    # the official client cannot even connect (it reports the 401 as an error response)
    with pytest.raises(ExceptionGroup) as caught:
        async with connect(served.url, "garbage"):
            pass
    assert caught.group_contains(MCPError, match="error response")
