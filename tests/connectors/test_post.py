"""The ``http_post`` task kind as a worker runs it (the application's wiring): every request is
decided by the person's policy and sent through the egress broker, so an internal service on
127.0.0.1 is reached only when a connection of the person names it. Against a real local HTTP
service that counts what it received."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from steward.app import build_harness
from steward.config import Settings
from steward.domain import RuleMode, TaskSpec, TaskStatus
from steward.domain.clock import SimulatedClock
from steward.errors import UsageError
from steward.runtime.worker import Worker
from steward.service import Service
from steward.store import Store
from steward.testing.model_server import serve_in_thread


@dataclass
class Admin:
    url: str = ""
    received: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def reset(self, request: Request) -> Response:
        with self.lock:
            self.received.append(request.headers.get("idempotency-key", ""))
        return JSONResponse({"reset": "everything"})


@pytest.fixture
def admin() -> Iterator[Admin]:
    svc = Admin()
    app = Starlette(routes=[Route("/admin/reset", svc.reset, methods=["POST"])])
    with serve_in_thread(app) as url:
        svc.url = url
        yield svc


async def run_post(
    store: Store, clock: SimulatedClock, tmp_path: Path, svc: Service, url: str
) -> tuple[TaskStatus, str | None]:
    person = await svc.ensure_person()
    task = await svc.create_task(
        person_id=person.id, spec=TaskSpec(kind="http_post", input={"url": url, "body": {"n": 1}})
    )
    harness = await build_harness(Settings(data_dir=tmp_path), store, clock)
    await Worker(store, harness, clock, poll_seconds=None).run_until_idle()
    done = await store.tasks.get_task(task.id)
    return done.status, done.error


async def test_a_post_to_an_internal_address_without_a_connection_sends_nothing(
    store: Store, clock: SimulatedClock, tmp_path: Path, admin: Admin
) -> None:
    """Regression (H3): the task POSTed to 127.0.0.1 and returned the internal answer."""
    svc = Service(store, clock)
    status, error = await run_post(store, clock, tmp_path, svc, f"{admin.url}/admin/reset")
    assert admin.received == []
    assert status is TaskStatus.FAILED
    assert error is not None
    assert "no connection allows api.call" in error


async def test_a_connection_without_that_host_does_not_open_an_internal_address(
    store: Store, clock: SimulatedClock, tmp_path: Path, admin: Admin
) -> None:
    svc = Service(store, clock)
    person = await svc.ensure_person()
    await svc.add_connection(person_id=person.id, kind="http", name="web", scopes=["api.call"])
    status, error = await run_post(store, clock, tmp_path, svc, f"{admin.url}/admin/reset")
    assert admin.received == []
    assert status is TaskStatus.FAILED
    assert error is not None
    assert "local or private network address" in error
    assert "nothing was sent" in error


async def test_a_connection_naming_the_host_lets_the_post_through_once(
    store: Store, clock: SimulatedClock, tmp_path: Path, admin: Admin
) -> None:
    svc = Service(store, clock)
    person = await svc.ensure_person()
    await svc.add_connection(
        person_id=person.id, kind="http", name="admin", scopes=["api.call"], hosts=["127.0.0.1"]
    )
    status, _ = await run_post(store, clock, tmp_path, svc, f"{admin.url}/admin/reset")
    assert status is TaskStatus.SUCCEEDED
    assert len(admin.received) == 1
    assert admin.received[0]
    decisions = [e.data for e in await svc.audit_log(person_id=person.id) if e.kind == "decision"]
    # the policy asked by default; what sent it is the task the person wrote, and the log says so
    assert [(d["tool"], d["verdict"], d["basis"]) for d in decisions] == [
        ("http_post", "ask", "default:external-asks"),
        ("http_post", "allow", "task:written-by-person"),
    ]


@pytest.mark.parametrize("mode", [RuleMode.ASK, RuleMode.DO_IF_PREAPPROVED])
async def test_the_persons_own_ask_rule_is_not_overridden_by_a_post_task(
    store: Store, clock: SimulatedClock, tmp_path: Path, admin: Admin, mode: RuleMode
) -> None:
    """Regression: an ask verdict counted as the person's approval even when their own rule
    asked, so a task fired by a webhook posted unattended past "ask before posting"."""
    svc = Service(store, clock)
    person = await svc.ensure_person()
    await svc.add_connection(
        person_id=person.id, kind="http", name="admin", scopes=["api.call"], hosts=["127.0.0.1"]
    )
    await svc.add_rule(person_id=person.id, pattern="http_post", mode=mode)
    status, error = await run_post(store, clock, tmp_path, svc, f"{admin.url}/admin/reset")
    assert admin.received == []
    assert status is TaskStatus.FAILED
    assert error is not None
    assert "your rule asks before posting there" in error
    assert "use an agent task" in error


async def test_a_connection_naming_the_host_for_another_scope_does_not_open_it(
    store: Store, clock: SimulatedClock, tmp_path: Path, admin: Admin
) -> None:
    """Regression: the broker let a request reach a private address named by any active
    connection of the person, whatever it was for (here: mail)."""
    svc = Service(store, clock)
    person = await svc.ensure_person()
    await svc.add_connection(person_id=person.id, kind="http", name="web", scopes=["api.call"])
    await svc.add_connection(
        person_id=person.id, kind="mail", name="relay", scopes=["mail.send"], hosts=["127.0.0.1"]
    )
    status, error = await run_post(store, clock, tmp_path, svc, f"{admin.url}/admin/reset")
    assert admin.received == []
    assert status is TaskStatus.FAILED
    assert error is not None
    assert "local or private network address" in error


async def test_a_deny_rule_stops_the_post(
    store: Store, clock: SimulatedClock, tmp_path: Path, admin: Admin
) -> None:
    svc = Service(store, clock)
    person = await svc.ensure_person()
    await svc.add_connection(
        person_id=person.id, kind="http", name="admin", scopes=["api.call"], hosts=["127.0.0.1"]
    )
    await svc.add_rule(person_id=person.id, pattern="http_post", mode=RuleMode.DENY)
    status, error = await run_post(store, clock, tmp_path, svc, f"{admin.url}/admin/reset")
    assert admin.received == []
    assert status is TaskStatus.FAILED
    assert error is not None
    assert "not sent" in error


@pytest.mark.parametrize(
    ("given", "why"),
    [
        ({}, "needs input.url"),
        ({"url": "http://ada@127.0.0.1/admin/reset"}, "user information"),
        ({"url": "file:///etc/passwd"}, "not an http or https URL"),
        ({"url": "https://api.example/x", "body": [1]}, "body must be a JSON object"),
        ({"url": "https://api.example/x", "calls": 0}, "calls must be a whole number"),
        ({"url": "https://api.example/x", "calls": "2"}, "calls must be a whole number"),
        ({"url": "https://api.example/x", "calls": True}, "calls must be a whole number"),
    ],
)
async def test_a_post_task_whose_url_cannot_be_read_is_refused_at_the_door(
    store: Store, clock: SimulatedClock, given: dict[str, Any], why: str
) -> None:
    svc = Service(store, clock)
    person = await svc.ensure_person()
    with pytest.raises(UsageError, match=why):
        await svc.create_task(person_id=person.id, spec=TaskSpec(kind="http_post", input=given))
    assert await svc.list_tasks(person_id=person.id) == []
