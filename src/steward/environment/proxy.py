"""The workspace shell's one way out: an HTTP proxy, outside the sandbox, to the hosts a
command was given, through the egress broker's address check.

An online command's sandbox still has no network of its own (:mod:`steward.environment.sandbox`):
its forwarder relays each connection made to ``127.0.0.1:3128`` inside to the unix socket of an
:class:`EgressProxy`, in a private directory (0700) mounted into that sandbox alone. The proxy
reads one request head per connection and lets through exactly two kinds:

- ``CONNECT host:port`` (a tunnel, for https): the bytes inside are the client's and the
  server's, end to end (TLS is verified by the client against the host's name);
- a plain HTTP request in absolute form (``GET http://host:port/path``): sent on in origin form,
  ``Proxy-*`` headers dropped and ``Connection: close`` set, so one connection is one request to
  one host.

Either only when the host is one of the command's ``hosts`` (compared as the sentinel compares
hosts) and the broker's :meth:`~steward.sentinel.egress.EgressBroker.checked_addresses` admits
it: a public address, or a private one a connection of the person names (offering
``web.read`` or ``api.call``). That check is audited, one entry per connection (host, port,
method), never what is sent. The connection then goes to an address that was checked, never to
the name again (a DNS answer that changes in between cannot move it). Everything else is
answered ``403`` with the reason in plain words, and nothing is sent. The vault is never
involved: a ``{{secret:…}}`` placeholder a command writes goes out as written.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from steward.environment.sandbox import EGRESS_SOCKET
from steward.sentinel.egress import API_CALL, EgressBroker, EgressFailed, EgressRefused
from steward.sentinel.urls import IPAddress, UrlRefused, normalise_host

WEB_READ = "web.read"
"""The ``web`` connector's scope: a connection naming a host on the person's own network for
reading opens it to the shell too (so does one offering :data:`API_CALL`)."""
MAX_HEAD_BYTES = 32 << 10
"""The longest request head read."""
HEAD_SECONDS = 30.0
"""How long a client may take to send its request head."""
CONNECT_SECONDS = 15.0
"""How long opening a connection to one checked address may take."""
MAX_LOGGED = 20
"""The most connections (and refusals) a run's result lists."""
DROPPED_HEADERS = frozenset(
    {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "host"}
)


@dataclass
class Traffic:
    """What went through a proxy, for the command's result."""

    reached: list[str] = field(default_factory=list)
    """``GET example.com``, ``CONNECT pypi.org:443``, in order (at most :data:`MAX_LOGGED`)."""
    refused: list[str] = field(default_factory=list)
    """Why requests were turned away, in words."""


class EgressProxy:
    """One command's proxy (see the module docstring); an async context manager: the socket's
    directory exists, and the proxy serves, inside the ``async with``."""

    def __init__(
        self, broker: EgressBroker, *, person_id: str, actor: str, hosts: frozenset[str]
    ) -> None:
        self._broker = broker
        self._person_id = person_id
        self._actor = actor
        self.hosts = hosts
        """The hosts this command may reach (normalised)."""
        self.traffic = Traffic()
        self._server: asyncio.AbstractServer | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self.directory = Path()
        """The private directory holding the socket (mounted into the sandbox)."""

    async def __aenter__(self) -> EgressProxy:
        self.directory = Path(tempfile.mkdtemp(prefix="steward-egress-"))  # 0700
        self._server = await asyncio.start_unix_server(
            self._accepted, path=str(self.directory / EGRESS_SOCKET), limit=MAX_HEAD_BYTES
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
        for handler in list(self._handlers):
            handler.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        shutil.rmtree(self.directory, ignore_errors=True)

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            await self._serve(reader, writer)
        except (OSError, asyncio.IncompleteReadError):
            pass  # the client or the server went away: nothing to tell anyone
        finally:
            self._handlers.discard(task)
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_SECONDS)
        except (asyncio.LimitOverrunError, asyncio.IncompleteReadError, TimeoutError):
            return await _answer(writer, 400, "the proxy reads one plain HTTP request head")
        lines = head.decode("latin-1").split("\r\n")
        request = lines[0].split(" ")
        if len(request) != 3 or not request[2].startswith("HTTP/"):
            return await _answer(writer, 400, "the proxy reads one plain HTTP request head")
        method, target, version = request
        try:
            host, port, path = _destination(method, target)
        except ValueError as exc:
            return await self._refuse(writer, f"{method} {target[:200]}: {exc}")
        if host not in self.hosts:
            allowed = ", ".join(sorted(self.hosts))
            why = f"{host} is not one of the hosts this command was given ({allowed})"
            return await self._refuse(writer, why)
        try:
            addresses = await self._broker.checked_addresses(
                person_id=self._person_id,
                host=host,
                port=port,
                scheme="https" if method == "CONNECT" else "http",
                method=method,
                actor=self._actor,
                scopes=(WEB_READ, API_CALL),
            )
        except EgressRefused as exc:
            return await self._refuse(writer, str(exc))
        except EgressFailed as exc:
            return await _answer(writer, 502, str(exc))
        upstream = await _connect(addresses, port)
        if upstream is None:
            return await _answer(writer, 502, f"{host} did not accept a connection on port {port}")
        far_reader, far_writer = upstream
        try:
            shown = f"{host}:{port}" if method == "CONNECT" else host
            if len(self.traffic.reached) < MAX_LOGGED:
                self.traffic.reached.append(f"{method} {shown}")
            if method == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                bare = f"[{host}]" if ":" in host else host  # an IPv6 address
                named = bare if port == 80 else f"{bare}:{port}"
                far_writer.write(_origin_form(method, path, version, named, lines[1:]))
            await asyncio.gather(_pump(reader, far_writer), _pump(far_reader, writer))
        finally:
            far_writer.close()

    async def _refuse(self, writer: asyncio.StreamWriter, why: str) -> None:
        if len(self.traffic.refused) < MAX_LOGGED:
            self.traffic.refused.append(why)
        await _answer(writer, 403, why)


def _destination(method: str, target: str) -> tuple[str, int, str]:
    """Where a request goes: its host (normalised), port and, for plain HTTP, the path to
    send; :class:`ValueError` saying why it is not a request the proxy relays."""
    if method == "CONNECT":
        host, colon, port = target.rpartition(":")
        if not colon or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError("a tunnel names its host and port (CONNECT host:443)")
        return _host(host), int(port), ""
    parts = urlsplit(target)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(
            "the proxy relays plain http://… requests and CONNECT tunnels (https) only"
        )
    if parts.username is not None or parts.password is not None:
        raise ValueError("a request may carry no user information before its host")
    try:
        number = parts.port or 80
    except ValueError:
        raise ValueError("its port is not a number") from None
    path = parts.path or "/"
    return _host(parts.hostname), number, path + (f"?{parts.query}" if parts.query else "")


def _host(text: str) -> str:
    try:
        return normalise_host(text)
    except UrlRefused as exc:
        raise ValueError(str(exc)) from None


def _origin_form(method: str, path: str, version: str, host: str, headers: list[str]) -> bytes:
    """The request as the server expects it from a client: its path only, no proxy headers,
    one request per connection, and the Host the command was allowed to reach (its own Host
    header could name another site served from the same address)."""
    kept = [
        line
        for line in headers
        if line and line.split(":", 1)[0].strip().lower() not in DROPPED_HEADERS
    ]
    head = [f"{method} {path} {version}", f"Host: {host}", *kept, "Connection: close", "", ""]
    return "\r\n".join(head).encode("latin-1")


async def _connect(
    addresses: list[IPAddress], port: int
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
    """A connection to the first checked address that accepts one."""
    for address in addresses:
        try:
            return await asyncio.wait_for(
                asyncio.open_connection(str(address), port), CONNECT_SECONDS
            )
        except (OSError, TimeoutError):
            continue
    return None


async def _pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    """Copy until the end, then say so to the other side (half-close)."""
    with contextlib.suppress(OSError):
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
        if sink.can_write_eof():
            sink.write_eof()


async def _answer(writer: asyncio.StreamWriter, status: int, reason: str) -> None:
    """A short plain-text answer from the proxy itself."""
    words = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[status]
    body = (reason + "\n").encode()
    writer.write(
        f"HTTP/1.1 {status} {words}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    await writer.drain()
