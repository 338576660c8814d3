"""A worker for agent-harness tests, and a person whose agent may call web APIs."""

from __future__ import annotations

from typing import Any

from steward.domain.clock import SimulatedClock
from steward.harness.agent import AgentHarness
from steward.runtime.worker import Worker
from steward.service import Service
from steward.store import Store


def agent_worker(store: Store, harness: AgentHarness, clock: SimulatedClock, **kw: Any) -> Worker:
    """A worker that polls only when told to (``poll_seconds=None``), with a 30 s lease."""
    kw.setdefault("retry_base_seconds", 10.0)
    return Worker(store, harness, clock, lease_seconds=30.0, poll_seconds=None, **kw)


async def person_with_api(store: Store, clock: SimulatedClock) -> tuple[Service, str]:
    """A service and the id of its person, who has an ``http`` connection with the scope
    ``api.call`` that names no hosts: only a grant stands between the agent and any host."""
    svc = Service(store, clock)
    person = await svc.ensure_person()
    await svc.add_connection(person_id=person.id, kind="http", name="web", scopes=["api.call"])
    return svc, person.id
