"""The egress broker refuses local and private addresses — by literal, by a name that resolves
there, by a name whose answers are mixed — unless a connection of the person names the host;
then it connects to the address it checked. Against a real HTTP service on 127.0.0.1 that
counts what it received."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from steward.domain import Connection
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.sentinel.egress import EgressBroker, EgressRefused
from steward.sentinel.vault import Vault, VaultKeys, generate_key
from steward.store import Store
from steward.testing.model_server import serve_in_thread


@dataclass
class Internal:
    """An internal service that must not be reachable by default (an admin endpoint)."""

    url: str = ""
    port: int = 0
    received: list[dict[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def reset(self, request: Request) -> Response:
        with self.lock:
            self.received.append(
                {"host": request.headers.get("host", ""), "path": request.url.path}
            )
        return JSONResponse({"reset": True})


@pytest.fixture
def internal() -> Iterator[Internal]:
    svc = Internal()
    app = Starlette(routes=[Route("/admin/reset", svc.reset, methods=["GET", "POST"])])
    with serve_in_thread(app) as url:
        svc.url, svc.port = url, int(url.rsplit(":", 1)[1])
        yield svc


@dataclass
class Resolver:
    """Answers for names the test makes up; the system resolver for the rest is not used."""

    answers: dict[str, list[str]]
    asked: list[str] = field(default_factory=list)

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        self.asked.append(host)
        if host in self.answers:
            return self.answers[host]
        if host.rstrip(".") == "localhost":
            return ["127.0.0.1"]
        raise OSError(f"unknown host {host}")


RESOLVER = {
    "internal.example": ["127.0.0.1"],
    "mixed.example": ["93.184.216.34", "10.0.0.5"],
    "metadata.example": ["169.254.169.254"],
    "cgnat.example": ["100.64.1.1"],
}


async def broker_for(
    store: Store, clock: SimulatedClock, resolver: Resolver
) -> tuple[EgressBroker, str, list[dict[str, Any]]]:
    person = await store.persons.create_person(name="p", now=clock.now())
    audits: list[dict[str, Any]] = []

    async def audit(**entry: Any) -> None:
        audits.append(entry)

    vault = Vault(VaultKeys(keys=(generate_key(),), source="test"))
    broker = EgressBroker(store, vault, audit=audit, now=clock.now, resolve=resolver)
    return broker, person.id, audits


async def connect(store: Store, clock: SimulatedClock, person_id: str, *hosts: str) -> None:
    await store.authority.add_connection(
        Connection(
            id=new_id("con"),
            person_id=person_id,
            kind="http",
            name="internal",
            scopes=("api.call",),
            hosts=hosts,
            created_at=clock.now(),
        )
    )


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "localhost",
        "localhost.",
        "LOCALHOST",
        "[::ffff:127.0.0.1]",
        "internal.example",
        "mixed.example",
        "metadata.example",
        "cgnat.example",
    ],
)
async def test_local_and_private_addresses_are_refused_unless_a_connection_names_them(
    store: Store, clock: SimulatedClock, internal: Internal, host: str
) -> None:
    """Regression (H3): nothing stopped a request to an internal address."""
    resolver = Resolver(RESOLVER)
    broker, person, audits = await broker_for(store, clock, resolver)
    url = f"http://{host}:{internal.port}/admin/reset"
    # another host bound does not open this one
    await connect(store, clock, person, "api.example.com")
    with pytest.raises(EgressRefused, match="local or private network address") as refused:
        await broker.request(person_id=person, method="POST", url=url, actor="task:t")
    assert "nothing was sent" in str(refused.value)
    assert internal.received == []
    assert [a["kind"] for a in audits] == ["egress_refused"]


async def test_a_connection_naming_the_host_lets_it_through_to_the_address_checked(
    store: Store, clock: SimulatedClock, internal: Internal
) -> None:
    """With the name bound, the request goes to the address the check resolved (a name the
    system cannot resolve reaches the service only that way), and names the host in Host."""
    resolver = Resolver(RESOLVER)
    broker, person, _ = await broker_for(store, clock, resolver)
    await connect(store, clock, person, "Internal.Example.")
    answer = await broker.request(
        person_id=person,
        method="POST",
        url=f"http://internal.example:{internal.port}/admin/reset",
        actor="task:t",
        headers={"Host": "evil.example"},  # a Host header cannot steer it elsewhere
    )
    assert answer.status == 200
    assert resolver.asked == ["internal.example"]  # resolved once, and that answer was used
    assert internal.received == [
        {"host": f"internal.example:{internal.port}", "path": "/admin/reset"}
    ]


async def test_binding_one_name_does_not_bind_another_for_the_same_address(
    store: Store, clock: SimulatedClock, internal: Internal
) -> None:
    broker, person, _ = await broker_for(store, clock, Resolver(RESOLVER))
    await connect(store, clock, person, "127.0.0.1")
    ok = await broker.request(
        person_id=person, method="GET", url=f"{internal.url}/admin/reset", actor="task:t"
    )
    assert ok.status == 200
    with pytest.raises(EgressRefused):
        await broker.request(
            person_id=person,
            method="GET",
            url=f"http://internal.example:{internal.port}/admin/reset",
            actor="task:t",
        )
    assert len(internal.received) == 1


@pytest.mark.parametrize(
    "url",
    [
        "http://127.1:{port}/admin/reset",
        "http://2130706433:{port}/admin/reset",
        "http://0x7f.0.0.1:{port}/admin/reset",
        "http://x@127.0.0.1:{port}/admin/reset",
    ],
)
async def test_ambiguous_urls_are_refused_before_anything_is_resolved(
    store: Store, clock: SimulatedClock, internal: Internal, url: str
) -> None:
    resolver = Resolver(RESOLVER)
    broker, person, _ = await broker_for(store, clock, resolver)
    await connect(store, clock, person, "127.0.0.1")
    with pytest.raises(EgressRefused):
        await broker.request(
            person_id=person, method="GET", url=url.format(port=internal.port), actor="task:t"
        )
    assert resolver.asked == []
    assert internal.received == []


async def test_when_a_checked_address_refuses_the_connection_the_next_one_is_tried(
    store: Store, clock: SimulatedClock, internal: Internal
) -> None:
    """Only addresses that passed the check are tried, in the resolver's order; a refused
    connection sent nothing, so trying the next is safe."""
    resolver = Resolver({"two.example": ["127.0.0.2", "127.0.0.1"]})  # nothing on 127.0.0.2
    broker, person, _ = await broker_for(store, clock, resolver)
    await connect(store, clock, person, "two.example")
    answer = await broker.request(
        person_id=person,
        method="POST",
        url=f"http://two.example:{internal.port}/admin/reset",
        actor="task:t",
    )
    assert answer.status == 200
    assert resolver.asked == ["two.example"]
    assert internal.received == [{"host": f"two.example:{internal.port}", "path": "/admin/reset"}]
