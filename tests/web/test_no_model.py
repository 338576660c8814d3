"""The dashboard of a Steward running without a model says so on every page, and how to set
one; with a model it says nothing of it."""

from __future__ import annotations

from pathlib import Path

from steward.domain.clock import SimulatedClock
from steward.service import Service
from steward.store import Store
from steward.testing.http_server import serving
from support.tenancy import make_tenant
from support.web import Site, dashboard

NOTICE = "No model is set up yet"


async def test_every_page_says_no_model_is_set_and_how_to_set_one(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    a = await make_tenant(store, clock, "ann", tmp_path)
    b = await make_tenant(store, clock, "bob", tmp_path)
    owner = Service(store, clock, data_dir=tmp_path, no_model=True)
    async with serving(dashboard(owner)) as url:
        site = Site(url=url, owner=owner, store=store, clock=clock, a=a, b=b)
        try:
            login = await site.client().get("/login")
            assert NOTICE in login.text
            session = await site.session(a.read)  # a read token is told too
            for path in ("/", "/inbox", "/goals", "/chat"):
                page = (await session.get(path)).text
                assert NOTICE in page, path
                assert "<code>steward init</code>" in page
                assert "<code>STEWARD_MODEL_BASE_URL</code>" in page
                assert "Then restart" in page
                # in full on the first page; a line elsewhere (the rest a tap away), so that
                # a phone's screen still shows the page under it
                opened = '<details class="no-model" open>' in page
                assert opened is (path == "/"), path
        finally:
            await site.close()


async def test_with_a_model_nothing_is_said(site: Site) -> None:
    session = await site.session(site.a.control)
    assert NOTICE not in (await session.get("/")).text
    assert NOTICE not in (await site.client().get("/login")).text
