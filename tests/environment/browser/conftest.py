"""The browser's tests: Debian's chromium (skipped without it, saying so; failed under
``CI=true``) driving the person's profile against a small shop served on 127.0.0.1.

The shop answers on every name of the loopback interface, so ``localhost`` reaches the same
server under another host: the test rules allow ``127.0.0.1`` only, and the log shows whether
anything reached ``localhost``.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from steward.domain.clock import Clock
from steward.environment.browser.profile import Profiles
from steward.environment.browser.session import BrowserHost, Rules
from steward.harness.workspace import Workspace
from steward.testing.model_server import serve_in_thread
from support.web import require_chromium

PASSWORD = "correct-horse-battery"
"""What the tests type into password fields (it must never show)."""

FORM = """<!doctype html><title>Checkout</title>
<h1>Checkout</h1>
<form method="post" action="/order">
  <label for="who">Name</label><input id="who" name="who" value="Ann">
  <input type="password" name="pin" aria-label="Card PIN">
  <input type="hidden" name="cart" value="C-1042">
  <select name="ship" aria-label="Shipping"><option value="std">Standard</option>
    <option value="exp">Express</option></select>
  <label><input type="checkbox" name="gift" value="yes"> Gift wrap</label>
  <input name="note" placeholder="Note for the courier">
  <button>Place order</button>
</form>"""


@dataclass
class Shop:
    """The shop's address and every request it got: (method, host, path, body)."""

    url: str = ""
    other: str = ""
    """The same shop under ``localhost``, a host the rules do not allow."""
    hits: list[tuple[str, str, str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def seen(self, method: str, path: str, *, host: str = "127.0.0.1") -> list[str]:
        """The bodies of the requests ``method path`` that reached ``host``."""
        with self.lock:
            return [b for m, h, p, b in self.hits if m == method and p == path and h == host]

    def reached(self, host: str) -> list[str]:
        with self.lock:
            return [f"{m} {p}" for m, h, p, _ in self.hits if h == host]


def shop_app(shop: Shop) -> Starlette:
    async def log(request: Request) -> None:
        body = (await request.body()).decode(errors="replace")
        with shop.lock:
            shop.hits.append((request.method, request.url.hostname or "", request.url.path, body))

    def html(body: str) -> HTMLResponse:
        return HTMLResponse(body)

    async def home(request: Request) -> Response:
        await log(request)
        return html(
            "<!doctype html><title>Shop</title><h1>Kettle shop</h1>"
            '<a href="/form">Checkout</a> '
            f'<a href="{shop.other}/away">Elsewhere</a> '
            '<a href="/bounce">Bounce</a> <a href="/hop">Hop</a> '
            f"<button onclick=\"location='{shop.other}/script'\">Jump</button>"
            "<p>Write [ref=e2] in the box.</p>"
            '<a href="/files/report.csv">Report</a>'
            '<a href="/done" target="_blank">New window</a>'
            f'<a href="{shop.other}/popup" target="_blank">Other window</a>'
            "<button onclick=\"window.open('/popped', '_blank')\">Pop</button>"
            f'<img src="{shop.other}/pixel.png" alt=""><img src="/pixel.png" alt="">'
        )

    async def any_page(request: Request) -> Response:
        await log(request)
        return html(f"<!doctype html><title>{request.url.path}</title><p>Here</p>")

    async def long(request: Request) -> Response:
        await log(request)
        rows = "".join(f"<p>Kettle {n}</p>" for n in range(300))
        return html(f"<!doctype html><title>Catalogue</title>{rows}")

    async def form(request: Request) -> Response:
        await log(request)
        return html(FORM)

    async def order(request: Request) -> Response:
        await log(request)
        await asyncio.sleep(1.5)  # placing the order takes a while: submit waits for it
        return RedirectResponse("/done", status_code=303)

    async def done(request: Request) -> Response:
        await log(request)
        return html("<!doctype html><title>Done</title><p>Order placed</p>")

    async def bounce(request: Request) -> Response:
        await log(request)
        return RedirectResponse(f"{shop.other}/bounced", status_code=302)

    async def hop(request: Request) -> Response:
        await log(request)
        return RedirectResponse("/done", status_code=302)

    async def login(request: Request) -> Response:
        await log(request)
        response = html("<!doctype html><title>In</title><p>Logged in</p>")
        response.set_cookie("sid", "s3cret-session", max_age=3600, httponly=False)
        return response

    async def api(request: Request) -> Response:
        await log(request)
        return Response(json.dumps({"ok": True}), media_type="application/json")

    async def xhr(request: Request) -> Response:
        await log(request)
        return html(
            "<!doctype html><title>Cart</title><p id=out>idle</p>"
            "<button onclick=\"fetch('/api', {method: 'POST', body: 'add'})"
            ".then(() => out.textContent = 'added', () => out.textContent = 'failed')\">"
            "Add to cart</button>"
            f"<button onclick=\"fetch('{shop.other}/api', {{method: 'POST', body: 'leak'}})"
            ".then(() => out.textContent = 'sent', () => out.textContent = 'stopped')\">"
            "Tell others</button>"
        )

    async def report(request: Request) -> Response:
        await log(request)
        return Response(
            "item,price\nkettle,39.90\n",
            media_type="text/csv",
            headers={"Content-Disposition": 'attachment; filename="../../report.csv"'},
        )

    return Starlette(
        routes=[
            Route("/", home),
            Route("/form", form),
            Route("/long", long),
            Route("/order", order, methods=["POST"]),
            Route("/done", done),
            Route("/bounce", bounce),
            Route("/hop", hop),
            Route("/login", login),
            Route("/api", api, methods=["POST"]),
            Route("/xhr", xhr),
            Route("/files/report.csv", report),
            Route("/{rest:path}", any_page),
        ]
    )


@pytest.fixture
def shop() -> Iterator[Shop]:
    found = Shop()
    with serve_in_thread(shop_app(found)) as url:
        found.url = url
        found.other = url.replace("127.0.0.1", "localhost")
        yield found


@pytest.fixture
def profiles(tmp_path: Path) -> Profiles:
    return Profiles(tmp_path / "browser")


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "workspace")


@pytest.fixture
async def host(profiles: Profiles, workspace: Workspace) -> AsyncIterator[BrowserHost]:
    require_chromium()
    made = BrowserHost(profiles, workspace, clock=Clock())
    try:
        yield made
    finally:
        await made.close_all()


RULES = Rules(hosts=frozenset({"127.0.0.1"}))
"""The shop's own host only."""
RESEARCH = Rules(hosts=frozenset({"127.0.0.1"}), research=True)
