"""A real Matrix homeserver for tests: Synapse (PyPI's ``matrix-synapse``) with SQLite, run from
its own virtual environment (``.venv-matrix``, made by ``make matrix-venv``: its pins would fight
ours), on a free loopback port, with registration only through the shared secret and the rate
limits out of the way. Users are registered through the admin API; each gets an access token.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from support.startup import scaled

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv-matrix" / "bin" / "python"
SERVER_NAME = "localhost"
UNLIMITED = {"per_second": 10000, "burst_count": 10000}


def synapse_missing() -> str | None:
    """Why Synapse cannot run here, or None."""
    if not PYTHON.exists():
        return f"Synapse is not installed ({PYTHON}; run `make matrix-venv`)"
    return None


def skip_or_fail(reason: str) -> None:
    """Skip locally; in CI a missing homeserver is a failure, not a skip."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"Matrix tests cannot run in CI: {reason}")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(kw_only=True)
class MatrixUser:
    """A registered user."""

    user_id: str
    """``@name:localhost``."""
    token: str
    """An access token of theirs."""


@dataclass(kw_only=True)
class MatrixServer:
    """A running Synapse."""

    url: str
    """Its client API base URL (``http://127.0.0.1:<port>``)."""
    shared_secret: str
    """Its registration shared secret."""
    log: Path
    """Its output (read it when a test fails)."""
    started_seconds: float
    """How long it took to answer after it was started."""
    users: dict[str, MatrixUser] = field(default_factory=dict)

    def call(
        self, method: str, path: str, body: dict[str, Any] | None = None, *, token: str = ""
    ) -> dict[str, Any]:
        """One client-API request (blocking); its JSON answer."""
        request = urllib.request.Request(
            self.url + path,
            data=json.dumps(body).encode() if body is not None else None,
            method=method,
            headers={"Content-Type": "application/json"}
            | ({"Authorization": f"Bearer {token}"} if token else {}),
        )
        with urllib.request.urlopen(request, timeout=scaled(30)) as answer:
            result: dict[str, Any] = json.load(answer)
            return result

    def register(self, name: str | None = None) -> MatrixUser:
        """A new user (a fresh name when none is given) through the shared-secret admin API."""
        local = name or f"user{secrets.token_hex(4)}"
        password = secrets.token_urlsafe(12)
        nonce = self.call("GET", "/_synapse/admin/v1/register")["nonce"]
        mac = hmac.new(self.shared_secret.encode(), digestmod=hashlib.sha1)
        mac.update(b"\x00".join(p.encode() for p in (nonce, local, password, "notadmin")))
        made = self.call(
            "POST",
            "/_synapse/admin/v1/register",
            {
                "nonce": nonce,
                "username": local,
                "password": password,
                "admin": False,
                "mac": mac.hexdigest(),
            },
        )
        user = MatrixUser(user_id=made["user_id"], token=made["access_token"])
        self.users[user.user_id] = user
        return user

    def say(self, user: MatrixUser, room_id: str, body: str, *, reply_to: str = "") -> str:
        """``user`` writes ``body`` in a room (as a reply to ``reply_to``, with the quoted
        fallback a client adds); the event id."""
        content: dict[str, Any] = {"msgtype": "m.text", "body": body}
        if reply_to:
            content["body"] = f"> <@someone:{SERVER_NAME}> the message\n\n{body}"
            content["m.relates_to"] = {"m.in_reply_to": {"event_id": reply_to}}
        txn = secrets.token_hex(8)
        path = f"/_matrix/client/v3/rooms/{_q(room_id)}/send/m.room.message/{txn}"
        return str(self.call("PUT", path, content, token=user.token)["event_id"])

    def messages(self, user: MatrixUser, room_id: str) -> list[dict[str, Any]]:
        """The room's text messages as ``user`` reads them, oldest first."""
        path = f"/_matrix/client/v3/rooms/{_q(room_id)}/messages?dir=b&limit=100"
        chunk = self.call("GET", path, token=user.token)["chunk"]
        texts = [e for e in chunk if e.get("type") == "m.room.message"]
        return list(reversed(texts))

    def create_room(self, owner: MatrixUser, invite: list[str], *, direct: bool) -> str:
        body = {"invite": invite, "is_direct": direct, "preset": "private_chat"}
        return str(
            self.call("POST", "/_matrix/client/v3/createRoom", body, token=owner.token)["room_id"]
        )

    def join(self, user: MatrixUser, room_id: str) -> None:
        self.call("POST", f"/_matrix/client/v3/join/{_q(room_id)}", {}, token=user.token)


def _q(text: str) -> str:
    return urllib.parse.quote(text, safe="")


def _config(root: Path, port: int, shared_secret: str) -> str:
    limits = {
        "rc_message": UNLIMITED,
        "rc_registration": UNLIMITED,
        "rc_login": {"address": UNLIMITED, "account": UNLIMITED, "failed_attempts": UNLIMITED},
        "rc_joins": {"local": UNLIMITED, "remote": UNLIMITED},
        "rc_joins_per_room": UNLIMITED,
        "rc_invites": {"per_room": UNLIMITED, "per_user": UNLIMITED, "per_issuer": UNLIMITED},
        "rc_room_creation": UNLIMITED,
        "rc_admin_redaction": UNLIMITED,
    }
    config = {
        "server_name": SERVER_NAME,
        "pid_file": str(root / "homeserver.pid"),
        "listeners": [
            {
                "port": port,
                "bind_addresses": ["127.0.0.1"],
                "type": "http",
                "tls": False,
                "x_forwarded": False,
                "resources": [{"names": ["client"], "compress": False}],
            }
        ],
        "database": {"name": "sqlite3", "args": {"database": str(root / "homeserver.db")}},
        "media_store_path": str(root / "media"),
        "signing_key_path": str(root / "signing.key"),
        "registration_shared_secret": shared_secret,
        "enable_registration": False,
        "report_stats": False,
        "enable_metrics": False,
        "macaroon_secret_key": secrets.token_hex(16),
        "form_secret": secrets.token_hex(16),
        "trusted_key_servers": [],
        "suppress_key_server_warning": True,
        "presence": {"enabled": False},
        **limits,
    }
    return json.dumps(config, indent=2)  # JSON is YAML


def _signing_key() -> str:
    """An ed25519 signing key in Synapse's file format (its seed, unpadded base64): written
    here rather than by ``--generate-keys``, a second start of the server."""
    seed = base64.b64encode(os.urandom(32)).decode().rstrip("=")
    return f"ed25519 a_{secrets.token_hex(2)} {seed}\n"


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/_matrix/client/versions", timeout=2) as answer:
            return bool(answer.status == 200)
    except (OSError, urllib.error.URLError):
        return False


@contextmanager
def running_synapse(root: Path) -> Iterator[MatrixServer]:
    """Start Synapse in ``root``; wait until it answers; stop it on exit."""
    port = _free_port()
    shared_secret = secrets.token_hex(16)
    (root / "media").mkdir()
    (root / "signing.key").write_text(_signing_key())
    config = root / "homeserver.yaml"
    config.write_text(_config(root, port, shared_secret))
    log = root / "synapse.out"
    began = time.monotonic()
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [str(PYTHON), "-m", "synapse.app.homeserver", "-c", str(config)],
            stdout=out,
            stderr=out,
            stdin=subprocess.DEVNULL,
            cwd=root,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = scaled(90)
        # a blocking poll: this runs once per session, before any event loop exists
        while not _answers(url):
            if proc.poll() is not None:
                pytest.fail(f"Synapse stopped at start:\n{log.read_text()[-3000:]}")
            if time.monotonic() - began > deadline:
                pytest.fail(
                    f"Synapse did not answer in {deadline:.0f} s:\n{log.read_text()[-3000:]}"
                )
            time.sleep(0.2)
        yield MatrixServer(
            url=url,
            shared_secret=shared_secret,
            log=log,
            started_seconds=time.monotonic() - began,
        )
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=scaled(20))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
