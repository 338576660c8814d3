"""The egress broker against a real HTTP service on 127.0.0.1: a secret goes out only to its
hosts, comes back only as a placeholder, and lands nowhere — not in the database, not in a log.
OAuth refresh and the authorization-code flow run against a local token endpoint."""

from __future__ import annotations

import base64
import hashlib
import logging
import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from sqlalchemy import select  # noqa: TID251 - the leak scan reads every table directly
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from steward.domain import Connection
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.errors import NotFound
from steward.sentinel.egress import EgressBroker, EgressFailed, EgressRefused
from steward.sentinel.oauth import exchange_code, oauth_authorization_url
from steward.sentinel.oauthtokens import OAuthTokens
from steward.sentinel.vault import Vault, VaultKeys
from steward.store import Store
from steward.store.schema import metadata
from steward.testing.model_server import serve_in_thread

SECRET = "sk-live-7Qz9+Kp/w2Lx&r=42"
"""Has characters that URL-encoding, base64 and JSON each change."""
CLIENT_ID, CLIENT_SECRET = "steward-client", "client-secret-Zk31pQ"


@dataclass
class Service:
    """An HTTP service that echoes what it was sent, plus an OAuth token endpoint."""

    received: list[dict[str, Any]] = field(default_factory=list)
    access_token: str = "at-0-initial-token"
    refresh_token: str = "rt-0-initial-token"
    token_requests: list[dict[str, list[str]]] = field(default_factory=list)
    codes: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Authorization code → (code challenge, redirect URI)."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/echo", self.echo, methods=["GET", "POST"]),
                Route("/redirect", self.redirect),
                Route("/api", self.api),
                Route("/token", self.token, methods=["POST"]),
            ]
        )

    async def echo(self, request: Request) -> Response:
        body = (await request.body()).decode()
        auth = request.headers.get("authorization", "")
        with self.lock:
            self.received.append({"auth": auth, "body": body, "query": request.url.query})
        echoed = {
            "authorization": auth,
            "authorization_b64": base64.b64encode(auth.encode()).decode(),
            "body": body,
            "query": request.url.query,
            "body_urlencoded": quote(body, safe=""),
        }
        return JSONResponse(echoed, headers={"x-echo-auth": auth})

    async def redirect(self, request: Request) -> Response:
        with self.lock:
            self.received.append({"auth": request.headers.get("authorization", "")})
        port = request.url.port
        return RedirectResponse(f"http://localhost:{port}/echo", status_code=307)

    async def api(self, request: Request) -> Response:
        auth = request.headers.get("authorization", "")
        with self.lock:
            self.received.append({"auth": auth})
            valid = auth == f"Bearer {self.access_token}"
        if not valid:
            return JSONResponse({"error": "invalid_token"}, status_code=401)
        return JSONResponse({"ok": True, "you_sent": auth})

    async def token(self, request: Request) -> Response:
        form = parse_qs((await request.body()).decode())
        with self.lock:
            self.token_requests.append(form)
        expected = base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
        if request.headers.get("authorization") != f"Basic {expected}":
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        grant = form.get("grant_type", [""])[0]
        with self.lock:
            if grant == "refresh_token":
                if form.get("refresh_token") != [self.refresh_token]:
                    return JSONResponse({"error": "invalid_grant"}, status_code=400)
            elif grant == "authorization_code":
                challenge, redirect_uri = self.codes.pop(form["code"][0], ("", ""))
                verifier = form.get("code_verifier", [""])[0].encode()
                digest = hashlib.sha256(verifier).digest()
                computed = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
                if computed != challenge or form.get("redirect_uri") != [redirect_uri]:
                    return JSONResponse({"error": "invalid_grant"}, status_code=400)
            else:
                return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
            # a fresh pair each time: the old refresh token is spent
            self.access_token = f"at-{secrets.token_hex(12)}"
            self.refresh_token = f"rt-{secrets.token_hex(12)}"
            answer = {
                "access_token": self.access_token,
                "refresh_token": self.refresh_token,
                "token_type": "Bearer",
                "expires_in": 3600,
                "scope": "api.read",
            }
        return JSONResponse(answer)


@pytest.fixture
def service() -> Iterator[Service]:
    svc = Service()
    with serve_in_thread(svc.app()) as url:
        svc.url = url
        yield svc


@pytest.fixture
def secret_store(store: Store) -> Store:
    return store


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    return Vault(VaultKeys.load(tmp_path / "data", environ={}))


@dataclass
class Setup:
    store: Store
    vault: Vault
    broker: EgressBroker
    person: str
    audits: list[dict[str, Any]]
    service: Service


@pytest.fixture
async def setup(
    secret_store: Store, vault: Vault, service: Service, clock: SimulatedClock
) -> Setup:
    person = await secret_store.persons.create_person(name="p", now=clock.now())
    # the test service is on this machine: a connection must name it for the broker to go there
    await secret_store.authority.add_connection(
        Connection(
            id=new_id("con"),
            person_id=person.id,
            kind="http",
            name="local test service",
            scopes=("api.call",),
            hosts=("127.0.0.1", "localhost"),
            created_at=clock.now(),
        )
    )
    audits: list[dict[str, Any]] = []

    async def audit(**entry: Any) -> None:
        audits.append(entry)
        await secret_store.audit.append_audit(**entry)

    broker = EgressBroker(secret_store, vault, audit=audit, now=clock.now)
    return Setup(secret_store, vault, broker, person.id, audits, service)


async def _put(s: Setup, name: str, value: str, hosts: list[str], clock: SimulatedClock) -> None:
    await s.store.secrets.put_secret(
        person_id=s.person,
        name=name,
        ciphertext=s.vault.encrypt(value),
        hosts=hosts,
        now=clock.now(),
    )


async def _scan_database(store: Store, needle: str) -> tuple[list[str], int]:
    """Tables whose rows contain ``needle`` anywhere, and how many rows were read."""
    found: list[str] = []
    count = 0
    for table in metadata.sorted_tables:
        table_rows = await store.backend.read(lambda c, t=table: c.execute(select(t)).all())
        count += len(table_rows)
        if any(needle in str(tuple(row)) for row in table_rows):
            found.append(table.name)
    return found, count


# --- the secret on the wire, never in what comes back ---------------------------------------


async def test_secret_reaches_the_service_but_never_comes_back(
    setup: Setup, clock: SimulatedClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    await _put(setup, "api", SECRET, ["127.0.0.1"], clock)
    response = await setup.broker.request(
        person_id=setup.person,
        method="POST",
        url=f"{setup.service.url}/echo?key={{{{secret:api}}}}",
        headers={"Authorization": "Bearer {{secret:api}}"},
        json={"nested": ["token={{secret:api}}"], "n": 1},
        actor="agent:tsk_1",
    )
    # the service received the real value, in the header, the body and the (encoded) query
    [got] = setup.service.received
    assert got["auth"] == f"Bearer {SECRET}"
    assert f"token={SECRET}" in got["body"]
    assert parse_qs(got["query"])["key"] == [SECRET]

    # what the tool gets back holds only the placeholder, in every encoding the echo used
    assert response.status == 200
    assert response.secrets == ("api",)
    assert SECRET not in response.text
    assert quote(SECRET, safe="") not in response.text
    echoed = response.json()
    assert echoed["authorization"] == "Bearer {{secret:api}}"
    assert "{{secret:api}}" in echoed["authorization_b64"]
    assert "{{secret:api}}" in echoed["body_urlencoded"]
    assert "{{secret:api}}" in echoed["query"]
    assert response.headers["x-echo-auth"] == "Bearer {{secret:api}}"
    assert "{{secret:api}}" in response.url

    # the audit says which handle went where, never the value
    [entry] = setup.audits
    assert entry["kind"] == "credential_use"
    assert entry["actor"] == "agent:tsk_1"
    assert entry["person_id"] == setup.person
    assert entry["data"] == {"secret": "api", "host": "127.0.0.1", "method": "POST", "status": 200}

    # nothing anywhere: every row of every table, and every log record of this process
    leaks, scanned = await _scan_database(setup.store, SECRET)
    assert leaks == []
    assert scanned > 0
    [(ciphertext)] = [(await setup.store.secrets.secret_ciphertext(setup.person, "api"))[1]]
    assert setup.vault.decrypt(ciphertext) == SECRET
    ours = [r for r in caplog.records if not r.name.startswith("uvicorn")]
    assert not [r.getMessage() for r in ours if SECRET in r.getMessage()]
    # the HTTP client did log the request line — redacted — so the scan saw real records
    assert any("{{secret:api}}" in r.getMessage() for r in ours if r.name == "httpx")


async def test_host_outside_the_binding_is_refused_and_nothing_is_sent(
    setup: Setup, clock: SimulatedClock
) -> None:
    await _put(setup, "api", SECRET, ["127.0.0.1"], clock)
    await _put(setup, "other", "another-secret-value", ["localhost"], clock)
    port = urlsplit(setup.service.url).port
    with pytest.raises(EgressRefused) as err:
        await setup.broker.request(
            person_id=setup.person,
            method="POST",
            # same service, reached under another name than the one the secret is bound to
            url=f"http://localhost:{port}/echo",
            headers={"Authorization": "Bearer {{secret:api}}"},
            actor="agent:tsk_1",
        )
    message = str(err.value)
    assert "'api'" in message
    assert "127.0.0.1" in message
    assert "localhost" in message
    assert SECRET not in message
    assert setup.service.received == []
    [entry] = setup.audits
    assert entry["kind"] == "credential_refused"
    assert entry["data"]["host"] == "localhost"
    assert SECRET not in str(entry)

    # one secret of two out of binding refuses the whole request
    with pytest.raises(EgressRefused, match="'other'"):
        await setup.broker.request(
            person_id=setup.person,
            method="GET",
            url=f"{setup.service.url}/echo",
            headers={"A": "{{secret:api}}", "B": "{{secret:other}}"},
            actor="agent:tsk_1",
        )
    assert setup.service.received == []


async def test_plain_http_placeholder_hosts_and_other_persons_are_refused(
    setup: Setup, clock: SimulatedClock
) -> None:
    # all refused before any connection is made, so these hosts need no network
    await _put(setup, "remote", SECRET, ["api.example.com"], clock)
    for url, match in [
        ("http://api.example.com/v1", "only sent over https"),
        ("https://{{secret:remote}}.example.com/", "host literally"),
        ("https://api.example.com:{{secret:remote}}/", "host literally"),
        ("ftp://api.example.com/", "http or https"),
    ]:
        with pytest.raises(EgressRefused, match=match):
            await setup.broker.request(
                person_id=setup.person,
                method="GET",
                url=url,
                headers={"Authorization": "{{secret:remote}}"},
                actor="agent:tsk_1",
            )
    # another person's task cannot name this person's secret
    other = await setup.store.persons.create_person(name="b", now=clock.now())
    with pytest.raises(NotFound):
        await setup.broker.request(
            person_id=other.id,
            method="GET",
            url="https://api.example.com/v1",
            headers={"Authorization": "{{secret:remote}}"},
            actor="agent:tsk_2",
        )


async def test_redirects_are_not_followed(setup: Setup, clock: SimulatedClock) -> None:
    await _put(setup, "api", SECRET, ["127.0.0.1"], clock)
    response = await setup.broker.request(
        person_id=setup.person,
        method="GET",
        url=f"{setup.service.url}/redirect",
        headers={"Authorization": "Bearer {{secret:api}}"},
        actor="agent:tsk_1",
    )
    assert response.status == 307
    assert response.headers["location"].startswith("http://localhost:")
    assert len(setup.service.received) == 1  # the redirect itself, never its target


async def test_requests_without_secrets_pass_and_network_errors_are_redacted(
    setup: Setup, clock: SimulatedClock
) -> None:
    plain = await setup.broker.request(
        person_id=setup.person,
        method="POST",
        url=f"{setup.service.url}/echo",
        content=b"hello",
        actor="agent:tsk_1",
    )
    assert plain.json()["body"] == "hello"
    assert plain.secrets == ()
    assert setup.audits == []

    await _put(setup, "api", SECRET, ["127.0.0.1"], clock)
    with pytest.raises(EgressFailed) as err:
        await setup.broker.request(
            person_id=setup.person,
            method="GET",
            url="http://127.0.0.1:1/echo?k={{secret:api}}",  # nothing listens on port 1
            actor="agent:tsk_1",
        )
    assert SECRET not in str(err.value)
    assert quote(SECRET, safe="") not in str(err.value)
    [entry] = setup.audits
    assert entry["data"]["status"] is None


# --- OAuth ---------------------------------------------------------------------------------


def _token_set(service: Service, *, expires_at: float) -> OAuthTokens:
    return OAuthTokens(
        access_token=service.access_token,
        refresh_token=service.refresh_token,
        token_endpoint=f"{service.url}/token",
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        expires_at=expires_at,
    )


async def test_expired_oauth_token_is_refreshed_before_the_request(
    setup: Setup, clock: SimulatedClock
) -> None:
    old = _token_set(setup.service, expires_at=clock.now().timestamp() - 10)
    await _put(setup, "oauth", old.to_secret(), ["127.0.0.1"], clock)
    response = await setup.broker.request(
        person_id=setup.person,
        method="GET",
        url=f"{setup.service.url}/api",
        headers={"Authorization": "Bearer {{secret:oauth}}"},
        actor="agent:tsk_1",
    )
    assert response.status == 200
    assert response.json()["you_sent"] == "Bearer {{secret:oauth}}"
    [refresh] = setup.service.token_requests
    assert refresh["grant_type"] == ["refresh_token"]
    assert refresh["refresh_token"] == [old.refresh_token]
    assert setup.service.received == [{"auth": f"Bearer {setup.service.access_token}"}]

    info, ciphertext = await setup.store.secrets.secret_ciphertext(setup.person, "oauth")
    stored = OAuthTokens.from_secret(setup.vault.decrypt(ciphertext))
    assert stored is not None
    assert stored.access_token == setup.service.access_token
    assert stored.refresh_token == setup.service.refresh_token
    assert stored.expires_at == clock.now().timestamp() + 3600
    assert info.hosts == ("127.0.0.1",)
    assert [a["kind"] for a in setup.audits] == ["credential_refresh", "credential_use"]
    for value in (old.access_token, stored.access_token, stored.refresh_token, CLIENT_SECRET):
        assert (await _scan_database(setup.store, value))[0] == []


async def test_oauth_401_refreshes_once_and_retries(setup: Setup, clock: SimulatedClock) -> None:
    tokens = _token_set(setup.service, expires_at=clock.now().timestamp() + 3600)
    await _put(setup, "oauth", tokens.to_secret(), ["127.0.0.1"], clock)
    setup.service.access_token = "at-revoked-by-the-server"
    response = await setup.broker.request(
        person_id=setup.person,
        method="GET",
        url=f"{setup.service.url}/api",
        headers={"Authorization": "Bearer {{secret:oauth}}"},
        actor="agent:tsk_1",
    )
    assert response.status == 200
    assert [r["auth"] for r in setup.service.received] == [
        f"Bearer {tokens.access_token}",
        f"Bearer {setup.service.access_token}",
    ]
    assert len(setup.service.token_requests) == 1

    # a refresh token the server no longer accepts: a clear failure, no token in the message
    setup.service.access_token = "at-revoked-again"
    setup.service.refresh_token = "rt-server-side-only"
    with pytest.raises(EgressFailed, match="invalid_grant") as err:
        await setup.broker.request(
            person_id=setup.person,
            method="GET",
            url=f"{setup.service.url}/api",
            headers={"Authorization": "Bearer {{secret:oauth}}"},
            actor="agent:tsk_1",
        )
    stored = OAuthTokens.from_secret(
        setup.vault.decrypt((await setup.store.secrets.secret_ciphertext(setup.person, "oauth"))[1])
    )
    assert stored is not None
    assert stored.refresh_token is not None
    assert stored.refresh_token not in str(err.value)
    failed_refresh, use = setup.audits[-2:]
    assert (failed_refresh["kind"], failed_refresh["data"]["ok"]) == ("credential_refresh", False)
    assert (use["kind"], use["data"]["status"]) == ("credential_use", 401)


async def test_authorization_code_flow_with_pkce(setup: Setup, clock: SimulatedClock) -> None:
    redirect_uri = "http://127.0.0.1:9/callback"
    start = oauth_authorization_url(
        authorization_endpoint=f"{setup.service.url}/authorize",
        client_id=CLIENT_ID,
        redirect_uri=redirect_uri,
        scope="api.read",
    )
    query = parse_qs(urlsplit(start.url).query)
    assert query["code_challenge_method"] == ["S256"]
    assert query["state"] == [start.state]
    assert start.code_verifier not in start.url
    # the person approves: the authorization server remembers the challenge with the code
    setup.service.codes["code-1"] = (query["code_challenge"][0], redirect_uri)
    setup.service.codes["code-2"] = (query["code_challenge"][0], redirect_uri)

    with pytest.raises(EgressFailed, match="invalid_grant"):
        await exchange_code(
            token_endpoint=f"{setup.service.url}/token",
            client_id=CLIENT_ID,
            client_secret=CLIENT_SECRET,
            redirect_uri=redirect_uri,
            code="code-2",
            code_verifier="a-verifier-that-does-not-match-the-challenge-at-all-00000",
            now=clock.now(),
        )
    tokens = await exchange_code(
        token_endpoint=f"{setup.service.url}/token",
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        redirect_uri=redirect_uri,
        code="code-1",
        code_verifier=start.code_verifier,
        now=clock.now(),
    )
    assert tokens.access_token == setup.service.access_token
    assert tokens.expires_at == clock.now().timestamp() + 3600
    assert tokens.scope == "api.read"
    assert OAuthTokens.from_secret(tokens.to_secret()) == tokens

    await _put(setup, "oauth", tokens.to_secret(), ["127.0.0.1"], clock)
    response = await setup.broker.request(
        person_id=setup.person,
        method="GET",
        url=f"{setup.service.url}/api",
        headers={"Authorization": "Bearer {{secret:oauth}}"},
        actor="agent:tsk_1",
    )
    assert response.status == 200
    assert setup.service.token_requests[-1]["grant_type"] == ["authorization_code"]


def test_oauth_endpoints_must_be_https() -> None:
    with pytest.raises(Exception, match="https"):
        oauth_authorization_url(
            authorization_endpoint="http://auth.example.com/authorize",
            client_id=CLIENT_ID,
            redirect_uri="https://steward.example/callback",
            scope="x",
        )
    assert OAuthTokens.from_secret("plain-secret") is None
    assert OAuthTokens.from_secret('{"access_token": "x"}') is None


async def test_expired_token_with_http_token_endpoint_is_not_refreshed(
    setup: Setup, clock: SimulatedClock
) -> None:
    tokens = OAuthTokens(
        access_token="at",
        refresh_token="rt",
        token_endpoint="http://auth.example.com/token",
        client_id=CLIENT_ID,
        expires_at=clock.now().timestamp() - (timedelta(hours=1).total_seconds()),
    )
    await _put(setup, "oauth", tokens.to_secret(), ["127.0.0.1"], clock)
    with pytest.raises(EgressRefused, match="https"):
        await setup.broker.request(
            person_id=setup.person,
            method="GET",
            url=f"{setup.service.url}/api",
            headers={"Authorization": "Bearer {{secret:oauth}}"},
            actor="agent:tsk_1",
        )
    assert setup.service.received == []


async def test_a_request_that_may_carry_no_secret_refuses_a_placeholder_anywhere(
    setup: Setup, clock: SimulatedClock
) -> None:
    await _put(setup, "api", SECRET, ["127.0.0.1"], clock)
    for url, headers in [
        (f"{setup.service.url}/echo?k={{{{secret:api}}}}", {}),
        (f"{setup.service.url}/echo", {"If-None-Match": '"{{secret:api}}"'}),
    ]:
        with pytest.raises(EgressRefused, match="may carry no"):
            await setup.broker.request(
                person_id=setup.person,
                method="GET",
                url=url,
                headers=headers,
                actor="agent:tsk_1",
                secrets_allowed=False,
            )
    assert setup.service.received == []
    assert setup.audits == []


async def test_max_bytes_keeps_the_beginning_and_says_truncated(
    setup: Setup, clock: SimulatedClock
) -> None:
    answer = await setup.broker.request(
        person_id=setup.person,
        method="POST",
        url=f"{setup.service.url}/echo",
        content=b"y" * 10_000,
        actor="agent:tsk_1",
        max_bytes=100,
    )
    assert answer.truncated
    assert len(answer.text) == 100
    whole = await setup.broker.request(
        person_id=setup.person,
        method="POST",
        url=f"{setup.service.url}/echo",
        content=b"y",
        actor="agent:tsk_1",
        max_bytes=100_000,
    )
    assert not whole.truncated
    assert whole.json()["body"] == "y"
    assert not whole.public  # 127.0.0.1
