"""``POST /api/v1/call/<method>``: any facade method by name, as the CLI's remote mode uses it.
Results come back as the same domain objects a local call returns; the token's tenancy and
scopes hold; bad arguments are refused, naming the argument, and change nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from steward.cli.remote import Login, RemoteRefused, remote_service
from steward.domain import GoalStatus
from steward.service import Service
from steward.service.wire import NOT_REMOTE, remote_methods
from support.api import Api
from support.tenancy import Tenant

Read = Callable[[Service, Tenant], Awaitable[Any]]
READS: dict[str, Read] = {
    "person": lambda s, t: s.person(None),
    "list_goals": lambda s, t: s.list_goals(person_id=t.person.id),
    "goal_detail": lambda s, t: s.goal_detail(t.goal.id),
    "timeline": lambda s, t: s.timeline(t.goal.id),
    "list_tasks": lambda s, t: s.list_tasks(person_id=t.person.id),
    "get_task": lambda s, t: s.get_task(t.task.id),
    "task_detail": lambda s, t: s.task_detail(t.task.id),
    "steps": lambda s, t: s.steps(t.task.id),
    "list_triggers": lambda s, t: s.list_triggers(person_id=t.person.id),
    "list_events": lambda s, t: s.list_events(person_id=t.person.id),
    "list_effects": lambda s, t: s.list_effects(task_id=t.task.id),
    "list_approvals": lambda s, t: s.list_approvals(person_id=t.person.id, status=None),
    "get_approval": lambda s, t: s.get_approval(t.approval.id),
    "list_notifications": lambda s, t: s.list_notifications(person_id=t.person.id),
    "audit_log": lambda s, t: s.audit_log(person_id=t.person.id),
    "list_tokens": lambda s, t: s.list_tokens(person_id=t.person.id),
    "list_connections": lambda s, t: s.list_connections(person_id=t.person.id),
    "list_grants": lambda s, t: s.list_grants(person_id=t.person.id),
    "list_rules": lambda s, t: s.list_rules(person_id=t.person.id),
    "list_secrets": lambda s, t: s.list_secrets(person_id=t.person.id),
    "list_memories": lambda s, t: s.list_memories(person_id=t.person.id),
    "memory_detail": lambda s, t: s.memory_detail(t.memory.id),
    "list_memory_passes": lambda s, t: s.list_memory_passes(person_id=t.person.id),
    "list_skills": lambda s, t: s.list_skills(person_id=t.person.id),
    "get_skill": lambda s, t: s.get_skill(t.skill.name, person_id=t.person.id),
    "skill_history": lambda s, t: s.skill_history(t.skill.name, person_id=t.person.id),
    "feed": lambda s, t: s.feed(person_id=t.person.id),
    "status": lambda s, t: s.status(),
    "readiness": lambda s, t: s.readiness(),
}


@asynccontextmanager
async def remote(api: Api, token: str) -> AsyncIterator[Service]:
    async with remote_service(Login(server=api.base.removesuffix("/api/v1"), token=token)) as svc:
        yield svc


async def test_remote_calls_return_what_local_ones_do(api: Api) -> None:
    local = await api.owner.authenticate(api.a.control)
    async with remote(api, api.a.control) as there:
        for method, read in READS.items():
            assert await read(there, api.a) == await read(local, api.a), method


async def test_a_remote_change_is_the_facade_change(api: Api) -> None:
    async with remote(api, api.a.control) as there:
        goal = await there.create_goal(person_id=api.a.person.id, title="Learn Portuguese")
        paused = await there.set_goal_status(goal.id, GoalStatus.PAUSED)
    goals = await api.owner.list_goals(person_id=api.a.person.id)
    assert [g for g in goals if g.id == goal.id] == [paused]
    assert paused.status is GoalStatus.PAUSED


async def test_tenancy_and_scopes_hold(api: Api) -> None:
    async with remote(api, api.a.control) as there:
        for call in (there.get_task(api.b.task.id), there.get_task("tsk_nonexistent")):
            with pytest.raises(RemoteRefused) as refused:
                await call
            assert refused.value.status_code == 404
    before = await api.owner.list_goals(person_id=api.a.person.id)
    async with remote(api, api.a.read) as there:
        with pytest.raises(RemoteRefused) as refused:
            await there.create_goal(person_id=api.a.person.id, title="Sneaky")
        assert refused.value.status_code == 403
    assert await api.owner.list_goals(person_id=api.a.person.id) == before
    async with api.client(None) as anyone:
        assert (await anyone.post("/call/list_goals", json={})).status_code == 401


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({"person_id": "", "title": "x", "deadline": "soon"}, "deadline: Input should be"),
        ({"person_id": "", "title": "x", "colour": "red"}, "colour: not an argument of"),
        ({"person_id": ""}, "title: Field required"),
        ({"person_id": "", "title": "x", "budget": {"max_steps": 2**64}}, "budget.max_steps"),
    ],
)
async def test_bad_arguments_are_refused_naming_them(
    api: Api, body: dict[str, Any], detail: str
) -> None:
    before = await api.owner.list_goals(person_id=api.a.person.id)
    async with api.client(api.a.control) as client:
        response = await client.post("/call/create_goal", json=body)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert detail in response.json()["detail"], response.text
    assert await api.owner.list_goals(person_id=api.a.person.id) == before


async def test_only_facade_methods_may_be_named(api: Api) -> None:
    assert NOT_REMOTE.isdisjoint(remote_methods())
    async with api.client(api.a.control) as client:
        for name in (*NOT_REMOTE, "_for", "store", "nonexistent"):
            response = await client.post(f"/call/{name}", json={})
            assert response.status_code == 422, (name, response.text)
