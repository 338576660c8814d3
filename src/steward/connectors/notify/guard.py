"""The outbound guard: what an Apprise or Web Push send may connect to, checked at the socket.

Apprise and pywebpush open their own connections (requests, aiohttp, smtplib), past the
egress broker. Looking at a service's address before the send is not enough: the service may
answer with a redirect to ``169.254.169.254`` or ``127.0.0.1:5432``, and a name may resolve to
another address by the time the library connects (DNS rebinding). So every send runs under
:func:`guarded`, and one audit hook per process (:func:`sys.addaudithook`, events
``socket.connect``, and ``socket.sendto``/``socket.sendmsg`` for a datagram sent to an
address) refuses, while a guard is set in the current context, a connect or a datagram to an
address that is not public (:func:`~steward.sentinel.urls.is_public`: loopback, private,
link-local, shared, reserved…) unless the person confirmed the service is on their own
network. A connect by name rather than by address is refused too: its address cannot be
checked. Unix sockets are not network connections and pass. Name lookups
(``socket.getaddrinfo``) are not checked: a lookup sends nothing to the address it finds, and
the connect that follows is what is checked, with the address it really uses.

**Context.** The guard is a :mod:`contextvars` variable: asyncio tasks and
:func:`asyncio.to_thread` inherit it, and Apprise (2.x) runs each service's send in a thread
under a copy of the caller's context, so those connects see it (the redirect tests fail if
they do not). A thread started without the caller's context would not be guarded.

**Refusing.** Raising in the hook aborts the connect with :class:`GuardRefused`, an
``OSError``, so the library fails the connection as it fails any refused one and cleans up;
the guard records it, and the sender turns it into a
:class:`~steward.errors.ChannelRefused` in words (never the URL: it may carry tokens).

**Cost.** Outside a guard, the hook returns after comparing the event's name (every audited
event of the process goes through it): about 0.3 µs per audited event, a local TCP connect
unchanged within noise (``bench/bench_outbound_guard.py``, ``docs/channels.md``).
"""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from steward.sentinel.urls import ip_of, is_public

_EVENTS = frozenset({"socket.connect", "socket.sendto", "socket.sendmsg"})
"""A connection, and a datagram sent to an address (Apprise's syslog plugin, say)."""
_NETWORK = frozenset({socket.AF_INET, socket.AF_INET6})


class GuardRefused(PermissionError):
    """A connect the outbound guard refused (an ``OSError``: libraries treat it as a failed
    connection)."""


@dataclass(kw_only=True)
class Guard:
    """What the connects of one send may reach, and whether one was refused."""

    private_network: bool
    """The person confirmed the service is on their own network: any address may be reached."""
    exempt: frozenset[tuple[str, int]] = frozenset()
    """Addresses and ports reached even though not public (:func:`exempt`, tests only)."""
    refused: list[str] = field(default_factory=list)
    """Why connects were refused (in words, no address), in order; empty: none was."""

    def allows(self, address: Any) -> bool:
        """Whether a connect to ``address`` (a socket address tuple) may go ahead."""
        if self.private_network:
            return True
        host, port = str(address[0]), int(address[1])
        ip = ip_of(host.partition("%")[0])  # a scoped IPv6 address is link-local anyway
        if ip is None:
            self.refused.append("a server given by name, whose address could not be checked")
            return False
        if is_public(ip) or (str(ip), port) in self.exempt:
            return True
        self.refused.append("an address on this machine or a private network")
        return False


_ACTIVE: ContextVar[Guard | None] = ContextVar("steward_outbound_guard", default=None)
_EXEMPT: ContextVar[frozenset[tuple[str, int]]] = ContextVar(
    "steward_outbound_guard_exempt", default=frozenset()
)
_installed = False
_install_lock = threading.Lock()


def _hook(event: str, args: tuple[Any, ...]) -> None:
    # called for every audited event of the process: the common case must return at once
    if event not in _EVENTS:
        return
    guard = _ACTIVE.get()
    if guard is None:
        return
    sock, address = args
    # a sendmsg/sendto on a connected socket names no address (None): its connect was checked
    if address is not None and sock.family in _NETWORK and not guard.allows(address):
        raise GuardRefused("the outbound guard refused this connection")


def install() -> None:
    """Install the audit hook (once per process; an audit hook cannot be removed)."""
    global _installed
    if _installed:
        return
    with _install_lock:
        if not _installed:
            sys.addaudithook(_hook)
            _installed = True


@contextmanager
def guarded(*, private_network: bool) -> Iterator[Guard]:
    """Guard the connects made in this context (and the tasks and threads that inherit it)
    until the block ends; the :class:`Guard` says afterwards whether one was refused."""
    install()
    guard = Guard(private_network=private_network, exempt=_EXEMPT.get())
    token = _ACTIVE.set(guard)
    try:
        yield guard
    finally:
        _ACTIVE.reset(token)


@contextmanager
def exempt(addresses: Iterable[tuple[str, int]]) -> Iterator[None]:
    """Test seam: guards made in this block let connects to exactly these (address, port)
    pairs through, so a local server stands in for a public service (the first hop of a
    redirect) while every other local address stays refused. Production code never calls
    it."""
    token = _EXEMPT.set(_EXEMPT.get() | {(str(ip_of(h) or h), p) for h, p in addresses})
    try:
        yield
    finally:
        _EXEMPT.reset(token)
