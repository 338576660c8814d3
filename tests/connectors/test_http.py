"""The web API tool as the application wires it: the vault key from the data directory, the
broker, the person's policy. The secret reaches the bound service; the model and the journal
hold only its placeholder; without a grant the call waits for the person."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from steward.app import build_harness
from steward.config import Settings
from steward.connectors.http import API_CALL
from steward.domain import ApprovalStatus, TaskStatus
from steward.domain.clock import SimulatedClock
from steward.domain.secrets import placeholder
from steward.models import ScriptedModel
from steward.models.scripted import call_tool
from steward.service import Service
from steward.store import Store
from steward.testing.model_server import serve_in_thread
from support.agents import agent_worker

SECRET = "tok-7Hq2-live"


@pytest.fixture
def service_url() -> Iterator[tuple[str, list[str]]]:
    seen: list[str] = []

    async def whoami(request: Request) -> Response:
        seen.append(request.headers.get("authorization", ""))
        return JSONResponse({"you": "ada", "token": request.headers.get("authorization")})

    with serve_in_thread(Starlette(routes=[Route("/me", whoami)])) as url:
        yield url, seen


async def run_fetch(
    store: Store, clock: SimulatedClock, tmp_path: Path, url: str, *, granted: bool
) -> tuple[Service, str, ScriptedModel]:
    svc = Service(store, clock, data_dir=tmp_path)
    person = await svc.ensure_person()
    await svc.put_secret(person_id=person.id, name="api", value=SECRET, hosts=["127.0.0.1"])
    await svc.add_connection(
        person_id=person.id, kind="http", name="api", scopes=[API_CALL], hosts=["127.0.0.1"]
    )
    if granted:
        await svc.add_grant(
            person_id=person.id, scopes=[API_CALL], constraints={"hosts": ["127.0.0.1"]}
        )
    model = ScriptedModel(
        [
            call_tool(
                "http_fetch",
                url=f"{url}/me",
                headers={"Authorization": f"Bearer {placeholder('api')}"},
            ),
            call_tool("finish", result="checked"),
        ]
    )
    harness = await build_harness(Settings(data_dir=tmp_path), store, clock, model=model)
    task = await svc.ask_agent(person_id=person.id, instructions="Who am I at the API?")
    await agent_worker(store, harness, clock).run_until_idle()
    return svc, task.id, model


async def test_a_granted_call_carries_the_secret_only_on_the_wire(
    store: Store,
    clock: SimulatedClock,
    tmp_path: Path,
    service_url: tuple[str, list[str]],
) -> None:
    url, seen = service_url
    svc, task_id, model = await run_fetch(store, clock, tmp_path, url, granted=True)

    assert seen == [f"Bearer {SECRET}"]
    task = await svc.get_task(task_id)
    assert task.status is TaskStatus.SUCCEEDED
    [observed] = [s.output for s in await svc.steps(task_id) if s.kind == "tool"][:1]
    assert placeholder("api") in str(observed)
    prompts = "\n".join(m.content for messages, _ in model.requests for m in messages)
    assert "ada" in prompts  # the service's answer reached the model...
    assert f"Bearer {placeholder('api')}" in prompts  # ...with the token it echoed redacted
    assert SECRET not in prompts
    assert SECRET not in str(await svc.steps(task_id))
    uses = [
        e.data for e in await svc.audit_log(person_id=task.person_id) if e.kind == "credential_use"
    ]
    assert uses == [{"secret": "api", "host": "127.0.0.1", "method": "GET", "status": 200}]


async def test_without_a_grant_the_call_waits_for_the_person(
    store: Store,
    clock: SimulatedClock,
    tmp_path: Path,
    service_url: tuple[str, list[str]],
) -> None:
    url, seen = service_url
    svc, task_id, _ = await run_fetch(store, clock, tmp_path, url, granted=False)

    assert seen == []
    task = await svc.get_task(task_id)
    assert task.status is TaskStatus.WAITING
    [asked] = await svc.list_approvals(person_id=task.person_id, status=ApprovalStatus.PENDING)
    assert (asked.tool, asked.task_id) == ("http_fetch", task_id)
