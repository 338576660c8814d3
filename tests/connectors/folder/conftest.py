"""Per test: a person's folders on disk, on a fresh store (each backend), ready to connect."""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors.folder.world import Folders, folders_of
from steward.domain.clock import SimulatedClock
from steward.store import Store


@pytest.fixture
async def folders(store: Store, clock: SimulatedClock, tmp_path: Path) -> Folders:
    return await folders_of(store, clock, tmp_path)
