"""A person with a mail connection, two tasks and a store-backed sentinel, for sentinel tests
(the ``w`` fixture in ``tests/sentinel/conftest.py`` builds one)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from steward.domain import Person
from steward.domain.actions import ActionRequest, EffectClass, Verdict
from steward.domain.agent_input import AgentTaskInput
from steward.domain.authority import Connection, Grant, Lifetime
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.sentinel.policy import PolicySentinel
from steward.store import Store


@dataclass
class World:
    store: Store
    clock: SimulatedClock
    sentinel: PolicySentinel
    me: Person
    other: Person
    task: str
    other_task: str
    mail: Connection

    def grant(self, *scopes: str, lifetime: Lifetime = Lifetime.STANDING, **fields: Any) -> Grant:
        return Grant(
            id=new_id("grt"),
            person_id=self.me.id,
            scopes=scopes,
            lifetime=lifetime,
            issued_by="person",
            reason="test",
            created_at=self.clock.now(),
            **fields,
        )

    async def check(self, **kw: Any) -> tuple[Verdict, str | None]:
        decided = await self.sentinel.check(request(self, **kw))
        return decided.verdict, decided.rule


def request(
    w: World,
    *,
    tool: str = "send_email",
    scopes: tuple[str, ...] = ("email.send",),
    effect: EffectClass = EffectClass.EXTERNAL,
    args: dict[str, Any] | None = None,
    task_id: str | None = None,
    task_input: dict[str, Any] | None = None,
    person_id: str | None = None,
) -> ActionRequest:
    return ActionRequest(
        person_id=person_id or w.me.id,
        task_id=task_id or w.task,
        goal_id=None,
        tool=tool,
        args={"to": "ann@example.com"} if args is None else args,
        effect=effect,
        scopes=scopes,
        source="python",
        wake_reason="start",
        task_input=AgentTaskInput.from_json(task_input or {}),
    )
