"""Fixtures for memory tests: a person (by id) and their memory book."""

from __future__ import annotations

import pytest

from steward.domain.clock import SimulatedClock
from steward.memory.book import MemoryBook
from steward.store import Store


@pytest.fixture
async def person(store: Store, clock: SimulatedClock) -> str:
    return (await store.persons.create_person(name="ada", now=clock.now())).id


@pytest.fixture
def book(store: Store, clock: SimulatedClock) -> MemoryBook:
    return MemoryBook(store, clock)
