"""The API served over a real loopback socket, on both backends, for two tenants."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from steward.api import create_app
from steward.api.app import API_PREFIX
from steward.domain.clock import SimulatedClock
from steward.service import Service
from steward.store import Store
from steward.testing.http_server import serving
from support.api import Api
from support.tenancy import make_tenant


@pytest.fixture
async def api(store: Store, clock: SimulatedClock, tmp_path: Path) -> AsyncIterator[Api]:
    a = await make_tenant(store, clock, "ann", tmp_path)
    b = await make_tenant(store, clock, "bob", tmp_path)
    owner = Service(store, clock, data_dir=tmp_path)
    async with serving(create_app(owner)) as url:
        yield Api(base=url + API_PREFIX, owner=owner, a=a, b=b)
