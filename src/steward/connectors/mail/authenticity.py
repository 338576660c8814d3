"""Whether a message to the agent's mailbox that names the person as its sender is theirs: its
From says so, and something a forger cannot make proves it.

A mail channel chooses the proof when it is added (its config's ``verify``; a channel stored
before the setting existed gets ``dkim``):

- ``dkim``: the message carries a valid DKIM signature (RFC 6376, checked by dkimpy, its key
  looked up in DNS) whose signing domain ``d=`` is the From's domain or a parent of it (relaxed
  alignment, as DMARC's). A signature that covers only the first ``l=`` bytes of the body
  counts for nothing: anyone could add text after them.
- ``authserv:<id>``: the receiving server checked the message and said so in the
  ``Authentication-Results`` header (RFC 8601) it added, under its authserv-id ``<id>``:
  ``dmarc=pass``, or ``dkim=pass`` with an aligned ``header.d``. Only the topmost header with
  that id counts (a server adds its own above those the message came with, and RFC 8601 has it
  remove those claiming its name): one the sender wrote lower down counts for nothing.
- ``none``: nothing is checked, for a private mailbox whose server takes mail only from its
  owner. Anyone who can put mail there with the person's address as From speaks as them.

In every mode the message has one From header naming one address, the channel's.

Not checked yet: that a signed message was written to the agent (its signed To/Cc) and
lately (its signed Date). A message the person signed for someone else — one they sent to a
stranger, a mailing-list post — resent to the agent's mailbox passes ``dkim`` as theirs. A
reply to an approval still needs that approval's token, which only the agent's mail carries.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import structlog

from steward.connectors.mail.message import addresses, headers_only
from steward.domain.channel import Channel
from steward.errors import UsageError

log = structlog.get_logger(__name__)

How = Literal["dkim", "authserv", "none"]
DnsTxt = Callable[..., bytes | None]
"""A DNS TXT lookup as dkimpy calls it: ``(name: bytes, timeout=…)``, the record or None."""
SIGNATURES = 5
"""The most DKIM signatures of one message checked (each may cost a DNS lookup)."""
AUTHSERV_CHARS = 255
"""An authserv-id is a domain name, at most this long."""


@dataclass(kw_only=True, frozen=True)
class SenderCheck:
    """How a mail channel tells the person's mail from a forgery."""

    how: How
    """A DKIM signature, the receiving server's word, or nothing."""
    authserv_id: str = ""
    """For ``authserv``: the receiving server's authserv-id (lower-case)."""

    @property
    def text(self) -> str:
        """As it is stored and typed: ``dkim``, ``authserv:<id>``, ``none``."""
        return f"authserv:{self.authserv_id}" if self.how == "authserv" else self.how


DKIM = SenderCheck(how="dkim")


@dataclass(kw_only=True, frozen=True)
class Verdict:
    """Whether a message proved to be the person's."""

    trusted: bool
    """It did."""
    why: str
    """How it did or why not, for the log."""


def sender_check(text: str) -> SenderCheck:
    """The check named by ``text`` (``dkim``, ``authserv:<id>``, ``none``); a
    :class:`UsageError` in words when it names none."""
    word, colon, rest = text.strip().partition(":")
    how = word.strip().casefold()
    if how in ("dkim", "none") and not colon:
        return SenderCheck(how="dkim") if how == "dkim" else SenderCheck(how="none")
    server = rest.strip().casefold()
    if how == "authserv" and _domain_like(server):
        return SenderCheck(how="authserv", authserv_id=server)
    raise UsageError(
        f'"{text}" is not a way to check your mail: say dkim, authserv:<your mail server\'s '
        "name in its Authentication-Results header> (authserv:mx.example.com), or none"
    )


def check_of(channel: Channel) -> SenderCheck:
    """The channel's check: ``dkim`` when it has none stored (or one not understood)."""
    stored = channel.config.get("verify")
    if not isinstance(stored, str):
        return DKIM
    try:
        return sender_check(stored)
    except UsageError:
        return DKIM


async def verdict(
    raw: bytes, *, address: str, check: SenderCheck, dns: DnsTxt | None = None
) -> Verdict:
    """Whether ``raw`` is from ``address`` by ``check``; ``dns`` looks DKIM keys up (None:
    DNS, through dnspython). DKIM's lookups and arithmetic run off the event loop."""
    message = headers_only(raw)
    named = addresses(message, "From")
    if len(message.get_all("From", [])) != 1 or len(named) != 1:
        return Verdict(trusted=False, why="not one From address")
    if named[0].casefold() != address.casefold():
        return Verdict(trusted=False, why="From is not the channel's address")
    domain = named[0].rpartition("@")[2].casefold()
    match check.how:
        case "none":
            return Verdict(trusted=True, why="not checked (the channel checks nothing)")
        case "authserv":
            return _server_said(message.get_all("Authentication-Results", []), domain, check)
        case "dkim":
            return await asyncio.to_thread(_signed, raw, domain, dns)


def aligned(sender_domain: str, signer: str) -> bool:
    """The sender's domain is the signer's or under it (relaxed alignment)."""
    signer = signer.casefold().rstrip(".")
    return bool(signer) and (sender_domain == signer or sender_domain.endswith("." + signer))


def _signed(raw: bytes, domain: str, dns: DnsTxt | None) -> Verdict:
    """A valid DKIM signature of the From's domain (or a parent)."""
    # dkimpy brings dnspython, half a second to import: only a mail that is checked pays it
    import dkim

    try:
        signer = dkim.DKIM(raw)
    except dkim.DKIMException as exc:
        return Verdict(trusted=False, why=f"DKIM: {type(exc).__name__}")
    count = sum(1 for name, _ in signer.headers if name.lower() == b"dkim-signature")
    if not count:
        return Verdict(trusted=False, why="no DKIM signature")
    lookup = {"dnsfunc": dns} if dns is not None else {}
    seen: list[str] = []
    for index in range(min(count, SIGNATURES)):
        try:
            valid = signer.verify(idx=index, **lookup)
        except Exception as exc:  # a malformed signature or key, a DNS failure: not proof
            seen.append(f"signature {index + 1}: {type(exc).__name__}")
            continue
        fields = signer.signature_fields
        d = bytes(fields.get(b"d", b"")).decode("ascii", "replace")
        if not valid:
            seen.append(f"{d}: invalid")
        elif b"l" in fields:
            seen.append(f"{d}: covers part of the body only")
        elif b"from" not in signer.include_headers:
            seen.append(f"{d}: does not cover From")
        elif not aligned(domain, d):
            seen.append(f"{d}: not the From's domain")
        else:
            return Verdict(trusted=True, why=f"DKIM signature of {d.casefold()}")
    return Verdict(trusted=False, why="DKIM: " + "; ".join(seen))


def _server_said(headers: Sequence[object], domain: str, check: SenderCheck) -> Verdict:
    """The topmost ``Authentication-Results`` of the configured server says DMARC passed, or
    an aligned DKIM signature did. The server's header is found by its authserv-id read from
    the raw text, not by parsing: a header of the server's that does not parse (a null sender,
    an address-literal HELO) must not let one the sender wrote below it count instead."""
    import authres  # here: every command imports this module through the facade

    for header in headers:  # top first, as the message has them
        text = " ".join(str(header).split())
        if _authserv_of(text) != check.authserv_id:
            continue
        try:
            parsed = authres.all_features().parse_value(text)
        except authres.core.AuthResError:
            return Verdict(trusted=False, why=f"{check.authserv_id}'s header does not parse")
        break  # the server's own: any below it came with the message
    else:
        return Verdict(trusted=False, why=f"no Authentication-Results of {check.authserv_id}")
    for result in parsed.results:
        if getattr(result, "result", "") != "pass":
            continue
        said = {(p.type, p.name): str(p.value or "").casefold() for p in result.properties}
        if result.method == "dmarc" and said.get(("header", "from"), domain) == domain:
            return Verdict(trusted=True, why=f"{check.authserv_id} says dmarc=pass")
        if result.method == "dkim" and aligned(domain, said.get(("header", "d"), "")):
            return Verdict(trusted=True, why=f"{check.authserv_id} says dkim=pass, aligned")
    return Verdict(trusted=False, why=f"{check.authserv_id} says neither dmarc nor dkim passed")


def _authserv_of(value: str) -> str:
    """The authserv-id of an ``Authentication-Results`` value: its first word before the first
    ``;``, comments dropped, lower-case (``mx.example.com 1; spf=…`` → ``mx.example.com``)."""
    head = re.sub(r"\([^()]*\)", " ", value.partition(";")[0])
    words = head.split()
    return words[0].casefold() if words else ""


def _domain_like(text: str) -> bool:
    """Could be a server's authserv-id (a host or domain name)."""
    labels = text.split(".")
    return (
        0 < len(text) <= AUTHSERV_CHARS
        and all(labels)
        and all(c.isalnum() or c in "-_" for label in labels for c in label)
    )
