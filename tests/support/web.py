"""What the dashboard tests share: the app (API and dashboard) served on a loopback socket, two
tenants, and a logged-in browser-like client."""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, async_playwright

from steward.api import create_app
from steward.domain import Approval, TaskSpec
from steward.domain.clock import Clock
from steward.service import Service
from steward.store import Fence, Store
from support.approvals import record_approval
from support.tenancy import Tenant

_CSRF = re.compile(r'name="csrf" value="([0-9a-f]*)"')

CHROMIUM = Path("/usr/bin/chromium")
"""Debian's chromium, which Playwright drives (nothing downloads a browser build)."""


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    """Headless Debian chromium through Playwright (closed on the way out: close it before
    the dashboard stops, or its pages' open event streams keep the server waiting)."""
    require_chromium()
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            yield launched
        finally:
            await launched.close()


def require_chromium() -> None:
    """Skip without chromium, with a message; under ``CI=true``, fail instead."""
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} is missing: install Debian's chromium to run the browser tests"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message)
        pytest.skip(message)


def dashboard(owner: Service) -> object:
    app = create_app(owner)
    return app


def csrf_of(html: str) -> str:
    found = _CSRF.search(html)
    assert found is not None, "the page has no form with a CSRF token"
    return found.group(1)


@dataclass
class Site:
    url: str
    owner: Service
    store: Store
    clock: Clock
    a: Tenant
    b: Tenant
    opened: list[httpx.AsyncClient] = field(default_factory=list)
    """Clients to close when the test ends."""

    def client(self) -> httpx.AsyncClient:
        client = httpx.AsyncClient(base_url=self.url, timeout=30, follow_redirects=False)
        self.opened.append(client)
        return client

    async def close(self) -> None:
        for client in self.opened:
            await client.aclose()

    async def session(self, token: str) -> Session:
        """A client logged in with ``token``, as a browser is after the login form."""
        client = self.client()
        form = await client.get("/login")
        answer = await client.post("/login", data={"csrf": csrf_of(form.text), "token": token})
        assert answer.status_code == 303, answer.text
        inbox = await client.get("/inbox")  # not "/": that would mark everything seen
        assert inbox.status_code == 200, inbox.text
        return Session(client=client, csrf=csrf_of(inbox.text))


@dataclass
class Session:
    client: httpx.AsyncClient
    csrf: str
    """The token every form of this session posts back."""

    async def get(self, path: str) -> httpx.Response:
        return await self.client.get(path)

    async def post(self, path: str, **fields: str) -> httpx.Response:
        return await self.client.post(path, data={"csrf": self.csrf, **fields})


async def ask_approval(store: Store, clock: Clock, t: Tenant, *, to: str) -> Approval:
    """A new pending approval, recorded the way a running task records one (fenced by its
    lease), under the tenant's goal."""
    task = await store.tasks.create_task(
        TaskSpec(kind="noop", title=f"write to {to}"),
        person_id=t.person.id,
        goal_id=t.goal.id,
        now=clock.now(),
    )
    [claim] = await store.tasks.claim_tasks(
        worker="w-web", limit=1, lease_seconds=3600, now=clock.now()
    )
    assert claim.task.id == task.id
    return await record_approval(
        store,
        clock,
        Fence.of(claim),
        person_id=t.person.id,
        goal_id=t.goal.id,
        args={"to": to, "body": "hello"},
        title=f"may I email {to}?",
        reason="sending email asks first",
    )
