"""``/healthz`` and ``/readyz`` over a real socket, without a token: ready at the schema this
code needs, 503 with a plain reason when the database is behind it."""

from __future__ import annotations

import asyncio

import httpx

from steward.api import create_app
from steward.domain.clock import SimulatedClock
from steward.service import Service
from steward.store import Store, migrate
from steward.testing.http_server import serving


async def test_ready_at_head_and_not_ready_behind_with_the_fix(
    store: Store, clock: SimulatedClock
) -> None:
    async with serving(create_app(Service(store, clock))) as url, httpx.AsyncClient() as client:
        alive = await client.get(f"{url}/healthz")
        assert (alive.status_code, alive.text) == (200, "ok\n")
        ready = await client.get(f"{url}/readyz")
        assert (ready.status_code, ready.text) == (200, "ready\n")

        await asyncio.to_thread(migrate.downgrade, store.backend.engine, "0016")
        behind = await client.get(f"{url}/readyz")
        assert behind.status_code == 503
        assert behind.text == (
            "not ready: the database schema is at revision 0016, behind this version's "
            f"{migrate.head_revision()}: run 'steward db upgrade'\n"
        )
        # still alive: a supervisor must not restart it for that
        assert (await client.get(f"{url}/healthz")).status_code == 200

        await asyncio.to_thread(migrate.upgrade, store.backend.engine)
        assert (await client.get(f"{url}/readyz")).status_code == 200
