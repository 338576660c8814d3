"""A real CalDAV server for tests: Radicale, run as its own process on a free loopback port.

Users sign in with plain htpasswd passwords: ``dana`` (someone else) from the start, and one
person per test (:meth:`CalDAVServer.add_user`: Radicale reads the file at each login), so that
no test sees another's calendars. Rights are ``authenticated``: any signed-in user may write any
collection, which stands in for a calendar shared with a colleague, so ``dana`` can put and
change events in the person's calendars the way another attendee's server or a shared calendar
would.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from steward.connectors.base import ConnectorEnv
from steward.connectors.calendar.tools import SCOPES
from steward.domain.authority import Connection, ConnectionBounds
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.sentinel.vault import Vault
from steward.service import Service
from steward.store import Store
from support.startup import scaled

PASSWORDS = {"dana": "dana-secret"}


@dataclass(kw_only=True, frozen=True)
class CalDAVServer:
    """A running Radicale."""

    url: str
    """Its base URL (``http://127.0.0.1:<port>/``)."""
    passwords: dict[str, str]
    """Password of each user."""
    users_file: Path
    """Its htpasswd file."""
    log: Path
    """Its log file (read it when a test fails)."""

    def add_user(self, user: str) -> str:
        """Let ``user`` sign in; return their password."""
        password = f"{user}-secret"
        with self.users_file.open("a") as users:
            users.write(f"{user}:{password}\n")
        self.passwords[user] = password
        return password

    def home(self, user: str) -> str:
        """The user's calendar home (``<url><user>/``)."""
        return f"{self.url}{user}/"

    def client(self, user: str) -> httpx.AsyncClient:
        """An HTTP client signed in as ``user`` (raw WebDAV, to act as someone else would)."""
        return httpx.AsyncClient(auth=(user, self.passwords[user]), timeout=scaled(10))

    async def make_calendar(self, owner: str, slug: str, name: str) -> str:
        """Create the calendar ``name`` in ``owner``'s home; return its URL."""
        url = f"{self.home(owner)}{slug}/"
        body = (
            '<?xml version="1.0" encoding="utf-8"?>'
            '<C:mkcalendar xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">'
            f"<D:set><D:prop><D:displayname>{name}</D:displayname>"
            '<C:supported-calendar-component-set><C:comp name="VEVENT"/>'
            "</C:supported-calendar-component-set></D:prop></D:set></C:mkcalendar>"
        )
        async with self.client(owner) as http:
            response = await http.request("MKCALENDAR", url, content=body)
        assert response.status_code == 201, response.text
        return url

    async def put_event(self, *, as_user: str, calendar_url: str, ics: str) -> str:
        """Store ``ics`` (one VCALENDAR) in the calendar as ``as_user`` would; return its href."""
        href = f"{calendar_url}{uuid.uuid4().hex}.ics"
        async with self.client(as_user) as http:
            response = await http.put(
                href, content=ics.encode(), headers={"Content-Type": "text/calendar"}
            )
        assert response.status_code in (201, 204), response.text
        return href

    async def replace_event(self, *, as_user: str, href: str, ics: str) -> None:
        """Overwrite the event at ``href`` as ``as_user``."""
        async with self.client(as_user) as http:
            response = await http.put(
                href, content=ics.encode(), headers={"Content-Type": "text/calendar"}
            )
        assert response.status_code in (201, 204), response.text

    async def delete(self, *, as_user: str, href: str) -> None:
        """Delete the resource at ``href`` as ``as_user``."""
        async with self.client(as_user) as http:
            response = await http.delete(href)
        assert response.status_code in (200, 204), response.text


@dataclass(kw_only=True, frozen=True)
class PersonCalendars:
    """The person's two calendars, fresh for one test, and the server they are on."""

    server: CalDAVServer
    """The Radicale they live on."""
    user: str
    """The person's user name: a fresh one per test, so calendars never leak between tests."""
    work: str
    """URL of the calendar named Work."""
    home: str
    """URL of the calendar named Home."""


@dataclass(kw_only=True)
class Connected:
    """A person whose calendars (:class:`PersonCalendars`) are connected to Steward."""

    calendars: PersonCalendars
    """Their calendars on Radicale."""
    store: Store
    """Their Steward state."""
    clock: SimulatedClock
    """Steward's clock."""
    env: ConnectorEnv
    """What the connector works with."""
    svc: Service
    """The facade (tasks, approvals)."""
    person_id: str
    """Their id."""
    vault: Vault
    """The vault their credential is sealed with."""

    async def connect(
        self,
        *,
        name: str = "Calendar",
        scopes: tuple[str, ...] = SCOPES,
        password: str | None = None,
        **bounds: Any,
    ) -> Connection:
        """A calendar connection in Europe/Paris time, its password in the vault."""
        secret = f"caldav-{uuid.uuid4().hex[:6]}"
        user = self.calendars.user
        await self.store.secrets.put_secret(
            person_id=self.person_id,
            name=secret,
            ciphertext=self.vault.encrypt(password or self.calendars.server.passwords[user]),
            hosts=["127.0.0.1"],
            now=self.clock.now(),
        )
        return await self.store.authority.add_connection(
            Connection(
                id=new_id("con"),
                person_id=self.person_id,
                kind="calendar",
                name=name,
                scopes=scopes,
                hosts=("127.0.0.1",),
                created_at=self.clock.now(),
                settings={
                    "url": self.calendars.server.url,
                    "username": user,
                    "email": f"{user}@example.test",
                    "time_zone": "Europe/Paris",
                },
                bounds=ConnectionBounds.from_json(bounds),
                secret=secret,
            )
        )


def vcalendar(*lines: str) -> str:
    """A VCALENDAR around ``lines`` (its components), as another person's client writes it."""
    body = "\r\n".join(lines)
    return (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Dana's client//EN\r\n"
        f"{body}\r\nEND:VCALENDAR\r\n"
    )


def radicale_missing() -> str | None:
    """Why Radicale cannot run here, or None."""
    if importlib.util.find_spec("radicale") is None:
        return "radicale is not installed (pip install -e '.[dev]')"
    return None


def skip_or_fail(reason: str) -> None:
    """Skip locally; in CI a missing server is a failure, not a skip."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CalDAV tests cannot run in CI: {reason}")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _write_config(root: Path, port: int, users: Path) -> Path:
    users.write_text("".join(f"{user}:{password}\n" for user, password in PASSWORDS.items()))
    config = root / "radicale.conf"
    config.write_text(
        f"[server]\nhosts = 127.0.0.1:{port}\n\n"
        f"[auth]\ntype = htpasswd\nhtpasswd_filename = {users}\nhtpasswd_encryption = plain\n"
        # the default delay after a failed login would slow the tests that sign in wrongly
        "delay = 0\n\n"
        "[rights]\ntype = authenticated\n\n"
        f"[storage]\nfilesystem_folder = {root / 'collections'}\n\n"
        "[web]\ntype = none\n\n"
        "[logging]\nlevel = warning\n"
    )
    return config


def _answers(url: str) -> bool:
    try:
        httpx.request("OPTIONS", url, timeout=1.0)
    except httpx.TransportError:
        return False
    return True


@contextlib.contextmanager
def running_radicale(root: Path) -> Iterator[CalDAVServer]:
    """Start Radicale with its config and storage under ``root``; stop it on exit."""
    port = _free_port()
    users = root / "users"
    config = _write_config(root, port, users)
    log = root / "radicale.log"
    url = f"http://127.0.0.1:{port}/"
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "radicale", "--config", str(config)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = scaled(30)
        waited = 0.0
        # a blocking poll: this runs once per session, before any event loop exists
        while not _answers(url):
            if proc.poll() is not None:
                raise RuntimeError(f"radicale exited ({proc.returncode}): {log.read_text()}")
            if waited > deadline:
                raise RuntimeError(f"radicale did not answer in {deadline:.0f}s")
            waited += 0.1
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.1)
        yield CalDAVServer(url=url, passwords=dict(PASSWORDS), users_file=users, log=log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
