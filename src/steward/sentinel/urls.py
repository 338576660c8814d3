"""One reading of a URL (and of an e-mail address), shared by everything that decides on it or
sends to it.

The policy's constraint extractors, the grant builder (approve → always) and the egress broker
all read hosts through :func:`parse_url` / :func:`normalise_host`, so they can never disagree on
which host a URL names. Parsing is httpx's (the library the broker sends with, IDNA-aware); on
top of it, anything that two parsers could read differently is refused rather than guessed:

* the host is lower-case, in IDNA A-label form (``bücher.example`` → ``xn--bcher-kva.example``),
  without a trailing dot; an IPv6 literal is given without brackets, compressed;
* user information (``user@host``), a backslash, whitespace or control characters, a
  percent-escape or zone id in the host, an empty label, and numeric hosts that are not a plain
  dotted quad (``127.1``, ``0x7f.0.0.1``, ``0177.0.0.1``: resolvers read them as addresses) are
  refused;
* only ``http`` and ``https`` URLs are read.

It lives in the sentinel package (not ``domain``, which imports only the standard library)
because it needs httpx; the service and the connectors already depend on the sentinel. httpx is
imported when a URL is first read: every command imports this module through the facade, and
httpx costs ~50 ms to import.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from functools import lru_cache

from steward.errors import UsageError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

SCHEMES = ("http", "https")
_LABEL = re.compile(r"^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$")
_NUMERIC_LABEL = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$")
_FORBIDDEN = re.compile(r"[\\\s\x00-\x1f\x7f]")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NEVER_PUBLIC = (
    ipaddress.ip_network("::/96"),  # IPv4-compatible (deprecated, RFC 4291): ::127.0.0.1
    ipaddress.ip_network("64:ff9b:1::/48"),  # local-use NAT64 (RFC 8215): a local translator
    ipaddress.ip_network("fec0::/10"),  # site-local (deprecated, RFC 3879): private
)
"""IPv6 ranges the ``ipaddress`` module counts as global that reach no public host."""
_ADDRESS = re.compile(r"^[^@\s,;<>()\[\]\"']+@[^@\s,;<>()\[\]\"']+$")
"""One plain address: a local part, ``@``, a domain; no display name, list or comment."""


class UrlRefused(UsageError):
    """A URL or host that cannot be read one way only; nothing was decided or sent on it."""


@dataclass(kw_only=True, frozen=True)
class Url:
    """A URL as the policy and the broker read it."""

    text: str
    """The URL as given (surrounding whitespace removed)."""
    scheme: str
    """``http`` or ``https``."""
    host: str
    """Normalised host: lower-case IDNA A-labels without a trailing dot, or an IP address."""
    port: int
    """The port connected to (the scheme's default when none is written)."""
    path: str
    """The path as sent (percent-encoded, dot segments removed)."""

    @property
    def address(self) -> IPAddress | None:
        """The host as an IP address, when it is one."""
        return ip_of(self.host)


def parse_url(text: str) -> Url:
    """Read ``text`` as an http(s) URL; :class:`UrlRefused` with the reason if it cannot be
    read unambiguously."""
    if not isinstance(text, str):
        raise UrlRefused(f"a URL must be text, not {type(text).__name__}")
    import httpx

    stripped = text.strip()
    if _FORBIDDEN.search(stripped):
        raise UrlRefused(f"{stripped!r} contains a backslash, space or control character")
    try:
        url = httpx.URL(stripped)
    except (httpx.InvalidURL, UnicodeError) as exc:
        raise UrlRefused(f"{stripped!r} is not a valid URL ({exc})") from None
    if url.scheme not in SCHEMES:
        raise UrlRefused(f"{stripped!r} is not an http or https URL")
    if url.userinfo or "@" in authority_of(stripped):
        raise UrlRefused(f"{stripped!r} carries user information before its host")
    raw = url.raw_host.decode("ascii")
    if not raw:
        raise UrlRefused(f"{stripped!r} names no host")
    host = normalise_host(raw)
    port = url.port if url.port is not None else (443 if url.scheme == "https" else 80)
    return Url(text=stripped, scheme=url.scheme, host=host, port=port, path=url.path)


def normalise_host(text: str) -> str:
    """A bare host (a name or an IP address, IPv6 with or without brackets) in the one form
    hosts are compared in; :class:`UrlRefused` if it is not one."""
    host = text.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    host = host.removesuffix(".")
    address = ip_of(host)
    if address is not None:
        return str(address)
    if ":" in host or "%" in host:
        raise UrlRefused(f"{text!r} is not a host name or an IP address")
    if not host.isascii():
        import httpx

        try:
            host = httpx.URL(f"http://{host}/").raw_host.decode("ascii")
        except (httpx.InvalidURL, UnicodeError) as exc:
            raise UrlRefused(f"{text!r} is not a valid international host name ({exc})") from None
    labels = host.split(".")
    if len(host) > 253 or not all(_LABEL.match(label) for label in labels):
        raise UrlRefused(f"{text!r} is not a valid host name")
    if _NUMERIC_LABEL.match(labels[-1]):
        # what resolvers would read as an address, but not written as a plain dotted quad
        raise UrlRefused(f"{text!r} is an IP address in an ambiguous form; write it plainly")
    return host


@lru_cache(maxsize=4096)
def host_key(text: str) -> str:
    """:func:`normalise_host` for hosts people stored (a connection's, a grant's allowlist):
    ``""``, which no URL's host equals, when it is not a host."""
    try:
        return normalise_host(text)
    except UrlRefused:
        return ""


@lru_cache(maxsize=4096)
def recipient_key(text: str) -> str:
    """One e-mail address as recipients are compared: stripped, lower-cased, its domain
    normalised like a host; ``""`` (matching nothing) if it is not one plain address."""
    address = text.strip().lower()
    if not _ADDRESS.match(address):
        return ""
    local, _, domain = address.rpartition("@")
    domain = host_key(domain)
    return f"{local}@{domain}" if domain else ""


def ip_of(host: str) -> IPAddress | None:
    """``host`` as an IP address (canonical forms only, no IPv6 zone), or None."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.scope_id:
        return None
    return address


def is_public(address: IPAddress) -> bool:
    """Whether ``address`` is a global unicast address, also when it embeds an IPv4 address
    (IPv4-mapped, 6to4, Teredo, NAT64): loopback, link-local, private (RFC 1918, ULA,
    site-local), shared (CGNAT), unspecified, reserved and multicast addresses are not, nor
    IPv4-compatible (``::a.b.c.d``, whatever it embeds) or local-use NAT64 addresses."""
    if isinstance(address, ipaddress.IPv6Address):
        if any(address in network for network in _NEVER_PUBLIC):
            return False
        embedded: list[IPAddress] = []
        if address.ipv4_mapped is not None:
            embedded.append(address.ipv4_mapped)
        if address.sixtofour is not None:
            embedded.append(address.sixtofour)
        if address.teredo is not None:
            embedded.extend(address.teredo)
        if address in _NAT64:
            embedded.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
        if any(not is_public(inner) for inner in embedded):
            return False
    return address.is_global and not address.is_multicast


def authority_of(text: str) -> str:
    """The part between ``//`` and the next ``/``, ``?`` or ``#``."""
    rest = text.partition("//")[2]
    return re.split(r"[/?#]", rest, maxsplit=1)[0]
