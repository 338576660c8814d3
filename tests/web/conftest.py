"""The dashboard served over a real loopback socket, on both backends, for two tenants."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from steward.domain.clock import SimulatedClock
from steward.service import Service
from steward.store import Store
from steward.testing.http_server import serving
from support.tenancy import make_tenant
from support.web import Site, dashboard


@pytest.fixture
async def site(store: Store, clock: SimulatedClock, tmp_path: Path) -> AsyncIterator[Site]:
    a = await make_tenant(store, clock, "ann", tmp_path)
    b = await make_tenant(store, clock, "bob", tmp_path)
    owner = Service(store, clock, data_dir=tmp_path)
    async with serving(dashboard(owner)) as url:
        site = Site(url=url, owner=owner, store=store, clock=clock, a=a, b=b)
        try:
            yield site
        finally:
            await site.close()


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    """Where browser tests put screenshots: ``$STEWARD_SCREENSHOTS``, else a temporary
    directory."""
    into = Path(os.environ.get("STEWARD_SCREENSHOTS") or tmp_path)
    into.mkdir(parents=True, exist_ok=True)
    return into
