"""Fixtures for agent-harness tests: a person, a workspace and a worker factory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from steward.domain import Person
from steward.domain.clock import SimulatedClock
from steward.harness.agent import AgentHarness
from steward.harness.workspace import Workspace
from steward.runtime.worker import Worker
from steward.store import Store


@pytest.fixture
async def person(store: Store, clock: SimulatedClock) -> Person:
    return await store.persons.create_person(name="p", now=clock.now(), max_concurrency=8)


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "workspace")


def agent_worker(store: Store, harness: AgentHarness, clock: SimulatedClock, **kw: Any) -> Worker:
    kw.setdefault("retry_base_seconds", 10.0)
    return Worker(store, harness, clock, lease_seconds=30.0, poll_seconds=None, **kw)
