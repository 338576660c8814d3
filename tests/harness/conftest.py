"""Fixtures for agent-harness tests: a person and a workspace (the worker factory is
``support.agents.agent_worker``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from steward.domain import Person
from steward.domain.clock import SimulatedClock
from steward.harness.workspace import Workspace
from steward.store import Store


@pytest.fixture
async def person(store: Store, clock: SimulatedClock) -> Person:
    return await store.persons.create_person(name="p", now=clock.now(), max_concurrency=8)


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "workspace")
