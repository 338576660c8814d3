"""The outbound guard over real sockets: a service that redirects to another port on this
machine, a name that resolves to this machine, and raw connects in and out of a guard.

The first hop of a redirect stands in for a public service through the guard's one test seam
(:func:`~steward.connectors.notify.guard.exempt`, exactly that address and port); every other
local address stays refused, as it would in production."""

from __future__ import annotations

import asyncio
import socket
from ipaddress import IPv4Address, IPv6Address
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from steward.connectors.notify.apprise import AppriseSender
from steward.connectors.notify.guard import Guard, GuardRefused, exempt, guarded
from steward.connectors.notify.webpush import VapidKey, WebPushSender
from steward.domain.clock import SimulatedClock
from steward.errors import ChannelRefused
from steward.sentinel.urls import is_public
from support.notifyservers import receiving
from support.pushservice import push_service

from .test_apprise import Secrets, channel, message
from .test_webpush import START, device
from .test_webpush import message as push_message


def connect(port: int, host: str = "127.0.0.1") -> None:
    with socket.create_connection((host, port), timeout=10):
        pass


async def test_an_apprise_redirect_to_this_machine_is_refused_at_the_socket() -> None:
    secrets = Secrets()
    sender = AppriseSender(secrets)
    with receiving() as service, receiving() as database:
        service.status = 307
        service.location = f"{database.url}/steal"
        url = f"json://127.0.0.1:{service.port}/hook-s3cr3t"
        with (
            exempt([("127.0.0.1", service.port)]),
            pytest.raises(ChannelRefused, match="private network") as refused,
        ):
            await sender.send(channel(secrets, url, private=False), message())
        assert len(service.hits) == 1  # the "public" service was reached…
        assert database.hits == []  # …and where it redirected to, never
        assert "s3cr3t" not in str(refused.value)
        assert str(database.port) not in str(refused.value)
        # the person confirmed the service is on their own network: the redirect is followed
        await sender.send(channel(secrets, url, private=True), message())
        assert [hit.path for hit in database.hits] == ["/steal"]


async def test_a_name_that_resolves_to_this_machine_is_refused_when_connecting() -> None:
    """What a DNS answer changed after the channel was added (rebinding) would give: the
    address is only known when connecting, and checked there."""
    secrets = Secrets()
    with receiving() as rx:
        url = f"json://localhost:{rx.port}/hook"
        with pytest.raises(ChannelRefused, match="private network"):
            await AppriseSender(secrets).send(channel(secrets, url, private=False), message())
        assert rx.hits == []


async def test_a_push_service_that_redirects_is_not_followed(tmp_path: Path) -> None:
    clock = SimulatedClock(START)
    key = VapidKey.load(tmp_path)
    secrets = Secrets()
    sender = WebPushSender(secrets, key, clock=clock)
    with push_service(expected_key=key.public_key, now=clock.now) as push, receiving() as inner:
        chan = device(secrets, push.subscribe())
        push.receiver.check = lambda hit: 307
        push.receiver.location = f"{inner.url}/steal"
        with (
            exempt([("127.0.0.1", push.receiver.port)]),
            pytest.raises(ChannelRefused, match="redirect"),
        ):
            await sender.send(chan, push_message())
        assert len(push.receiver.hits) == 1
        assert inner.hits == []


async def test_connects_are_checked_only_inside_a_guard_and_in_the_threads_it_reaches() -> None:
    with receiving() as rx:
        connect(rx.port)  # no guard: the hook lets it through
        with guarded(private_network=False) as guard:
            with pytest.raises(GuardRefused):
                connect(rx.port)
            # asyncio.to_thread copies the context: the thread is guarded too
            with pytest.raises(GuardRefused):
                await asyncio.to_thread(connect, rx.port)
            with pytest.raises(GuardRefused):
                connect(rx.port, host="localhost")
            with exempt([("127.0.0.1", rx.port)]), pytest.raises(GuardRefused):
                connect(rx.port)  # a guard made before the seam keeps its own policy
        assert guard.refused
        with exempt([("127.0.0.1", rx.port)]), guarded(private_network=False) as seam:
            connect(rx.port)
            with pytest.raises(GuardRefused):
                connect(rx.port + 1 if rx.port < 65535 else rx.port - 1)
        assert len(seam.refused) == 1
        with guarded(private_network=True) as confirmed:
            connect(rx.port)
        assert confirmed.refused == []
        connect(rx.port)  # the guard ended with its block


async def test_a_datagram_to_this_machine_is_refused_inside_a_guard() -> None:
    """Apprise's syslog plugin sends UDP with sendto, which no connect precedes."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sink:
        sink.bind(("127.0.0.1", 0))
        sink.settimeout(5)
        target = sink.getsockname()
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as out:
            with guarded(private_network=False) as guard, pytest.raises(GuardRefused):
                out.sendto(b"refused", target)
            assert guard.refused
            out.sendto(b"after", target)  # outside a guard it goes
        assert sink.recvfrom(64)[0] == b"after"  # the refused one never arrived


@settings(max_examples=300)
@given(
    address=st.ip_addresses(),
    port=st.integers(min_value=1, max_value=65535),
    confirmed=st.booleans(),
)
def test_the_guard_lets_through_exactly_public_addresses_unless_confirmed(
    address: IPv4Address | IPv6Address, port: int, confirmed: bool
) -> None:
    guard = Guard(private_network=confirmed, exempt=frozenset({("127.0.0.1", 8470)}))
    allowed = guard.allows((str(address), port))
    assert allowed == (
        confirmed or is_public(address) or (str(address), port) == ("127.0.0.1", 8470)
    )
    assert bool(guard.refused) == (not allowed)
    # a name is never let through unconfirmed: its address could not be checked
    assert Guard(private_network=confirmed).allows(("example.org", port)) == confirmed
