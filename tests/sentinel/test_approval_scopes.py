"""Deciding an approval can give lasting authority — for this task, for N hours, always for
this recipient — as an audited grant, bound to what the approved action touched."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from steward.domain import Lifetime, TaskStatus
from steward.domain.actions import EffectClass
from steward.domain.clock import SimulatedClock
from steward.errors import UsageError
from steward.harness.agent import AgentHarness
from steward.harness.tools import tool
from steward.harness.workspace import Workspace
from steward.models.scripted import ScriptedModel, call_tool
from steward.runtime.worker import Worker
from steward.sentinel.policy import PolicySentinel
from steward.service import Service
from steward.store import Store


def rig(
    store: Store, clock: SimulatedClock, tmp_path: Path, script: list[Any]
) -> tuple[Worker, list[str]]:
    sent: list[str] = []

    @tool(effect=EffectClass.EXTERNAL, scopes=["email.send"])
    async def send_email(to: str, body: str) -> str:
        """Send an email."""
        sent.append(to)
        return "sent"

    harness = AgentHarness(
        model=ScriptedModel(script),
        workspace=Workspace(tmp_path),
        tools=[send_email],
        sentinel=PolicySentinel(store, clock),
    )
    return Worker(store, harness, clock, poll_seconds=None), sent


async def setup(store: Store, clock: SimulatedClock) -> tuple[Service, str, str]:
    svc = Service(store, clock)
    person = await svc.ensure_person()
    await svc.add_connection(
        person_id=person.id, kind="email", name="mail", scopes=["email.read", "email.send"]
    )
    task = await svc.ask_agent(person_id=person.id, instructions="mail ada@x.io and bob@x.io")
    return svc, person.id, task.id


async def test_approve_for_the_task_allows_the_rest_of_the_task_for_that_recipient(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    script = [
        call_tool("send_email", to="ada@x.io", body="1"),
        call_tool("send_email", to="ada@x.io", body="2"),
        call_tool("send_email", to="bob@x.io", body="3"),
        call_tool("finish", result="done"),
    ]
    worker, sent = rig(store, clock, tmp_path, script)
    svc, person, task = await setup(store, clock)
    await worker.run_until_idle()
    [approval] = await svc.list_approvals(person_id=person)
    assert approval.scopes == ("email.send",)
    await svc.decide_approval(approval.id, approve=True, scope="task")
    await worker.run_until_idle()
    assert sent == ["ada@x.io", "ada@x.io"]  # the second send needed no second approval...
    [pending] = await svc.list_approvals(person_id=person)
    assert pending.args["to"] == "bob@x.io"  # ...but another recipient is asked about
    [grant] = await svc.list_grants(person_id=person)
    assert (grant.lifetime, grant.task_id) == (Lifetime.TASK, task)
    assert grant.constraints == {"tool": "send_email", "recipients": ["ada@x.io"]}
    await svc.decide_approval(pending.id, approve=True)
    await worker.run_until_idle()
    assert (await store.tasks.get_task(task)).status is TaskStatus.SUCCEEDED


async def test_always_binds_the_recipient_and_revoking_is_audited(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    script = [
        call_tool("send_email", to="ada@x.io", body="1"),
        call_tool("send_email", to="ada@x.io", body="2"),
        call_tool("send_email", to="bob@x.io", body="3"),
    ]
    worker, sent = rig(store, clock, tmp_path, script)
    svc, person, _task = await setup(store, clock)
    await worker.run_until_idle()
    [first] = await svc.list_approvals(person_id=person)
    await svc.decide_approval(first.id, approve=True, scope="always")
    await worker.run_until_idle()
    # ada again: covered by the standing grant; bob: not, so it asks
    assert sent == ["ada@x.io", "ada@x.io"]
    [pending] = await svc.list_approvals(person_id=person)
    assert pending.args["to"] == "bob@x.io"
    [grant] = await svc.list_grants(person_id=person)
    assert grant.constraints["recipients"] == ["ada@x.io"]
    assert grant.lifetime is Lifetime.STANDING
    await svc.revoke_grant(grant.id, person_id=person)
    assert await svc.list_grants(person_id=person) == []
    kinds = [e.kind for e in await svc.audit_log(person_id=person)]
    assert kinds.count("grant") == 1
    assert kinds.count("revocation") == 1


async def test_approve_for_hours_expires_and_bad_scopes_change_nothing(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    worker, _ = rig(store, clock, tmp_path, [call_tool("send_email", to="ada@x.io", body="1")])
    svc, person, _task = await setup(store, clock)
    await worker.run_until_idle()
    [approval] = await svc.list_approvals(person_id=person)
    with pytest.raises(UsageError, match="unknown approval scope"):
        await svc.decide_approval(approval.id, approve=True, scope="forever")
    with pytest.raises(UsageError, match="hours > 0"):
        await svc.decide_approval(approval.id, approve=True, scope="hours")
    for absurd in (1e300, float("inf"), float("nan"), -1.0):  # 1e300 overflowed a timedelta
        with pytest.raises(UsageError, match="at most"):
            await svc.decide_approval(approval.id, approve=True, scope="hours", hours=absurd)
    assert (await svc.get_approval(approval.id)).status.value == "pending"
    await svc.decide_approval(approval.id, approve=True, scope="hours", hours=2)
    [grant] = await svc.list_grants(person_id=person)
    assert grant.expires_at == clock.now() + timedelta(hours=2)
    clock.advance(timedelta(hours=2, seconds=1))
    assert await svc.list_grants(person_id=person) == []
