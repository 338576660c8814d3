"""Notify: reaching the person through their channels. :mod:`.dispatch` sends the planned
deliveries (reports, digests, approvals, questions) through the sender of each channel's kind;
the senders live beside it: :mod:`~steward.connectors.notify.apprise` (any service Apprise
reaches) and :mod:`~steward.connectors.notify.webpush` (the dashboard installed as an app),
both under :mod:`~steward.connectors.notify.guard` (what their sockets may connect to).

What a channel needs that is secret (an Apprise URL with its tokens, a push subscription's
keys) is kept in the vault, bound to the host :data:`SEALED_HOST`, which never resolves: the
egress broker can never send it anywhere, only the channel's sender opens it
(:class:`VaultSecrets`). The channel's ``config`` holds the secret's name, never its value.

**Private networks.** A sender refuses a service whose address is on this machine or a private
network unless the person confirmed, when adding the channel, that the service is on their own
network (``config["private_network"]``): a self-hosted ntfy on the home server is legitimate, a
URL that quietly points Steward at the router is not. :func:`private_addresses` asks when the
channel is added; the outbound guard (:mod:`.guard`) holds it at every connection a send
makes, redirects and late DNS answers included.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Iterable, Mapping
from typing import Protocol

from steward.errors import ChannelRefused, NotFound
from steward.sentinel.urls import ip_of, is_public
from steward.sentinel.vault import Vault
from steward.store.vault import SecretRepository

SEALED_HOST = "channel.invalid"
"""The one host a channel's secret is bound to: ``.invalid`` never resolves (RFC 6761)."""

PRIVATE_NETWORK = "private_network"
"""Key of ``Channel.config``: the person confirmed the service is on their own network."""

SECRET = "secret"
"""Key of ``Channel.config``: the name of the vault secret holding what is secret."""


class SecretOpener(Protocol):
    """Opens a person's vault secret by name (the plaintext exists only in the sender)."""

    async def open(self, person_id: str, name: str) -> str: ...


class VaultSecrets:
    """:class:`SecretOpener` over the store's secrets and the vault's keys."""

    def __init__(self, secrets: SecretRepository, vault: Vault) -> None:
        self._secrets = secrets
        self._vault = vault

    async def open(self, person_id: str, name: str) -> str:
        try:
            _, ciphertext = await self._secrets.secret_ciphertext(person_id, name)
        except NotFound:
            raise ChannelRefused(
                "what this channel needs to send is no longer in the vault; add it again"
            ) from None
        return self._vault.decrypt(ciphertext)


async def private_addresses(hosts: Iterable[str]) -> list[str]:
    """The addresses of ``hosts`` that are not public (loopback, private, link-local…). A name
    that does not resolve has none (the service will then fail to connect, visibly)."""
    loop = asyncio.get_running_loop()
    found: list[str] = []
    for host in hosts:
        literal = ip_of(host.strip("[]"))
        if literal is not None:
            candidates = [literal]
        else:
            try:
                infos = await loop.getaddrinfo(host, None, type=socket.SOCK_STREAM)
            except (OSError, UnicodeError):
                continue
            candidates = [a for a in (ip_of(str(i[4][0]).partition("%")[0]) for i in infos) if a]
        found.extend(str(a) for a in candidates if not is_public(a))
    return found


PRIVATE_PUSH_ENV = "STEWARD_PUSH_PRIVATE_ENDPOINTS"
"""Set to ``1`` to accept push endpoints on this machine or a private network (tests, a lab
push server): a browser's push service is always public."""


def private_push_endpoints(environ: Mapping[str, str] | None = None) -> bool:
    """Whether push endpoints on private networks are accepted (:data:`PRIVATE_PUSH_ENV`)."""
    return (os.environ if environ is None else environ).get(PRIVATE_PUSH_ENV, "") == "1"


PUSH_CONTACT_ENV = "STEWARD_PUSH_CONTACT"
"""A ``mailto:`` or ``https:`` address for the VAPID ``sub`` claim: push services contact it
about problems, and Apple's refuses a signature without a real one."""


def push_contact(environ: Mapping[str, str] | None = None) -> str:
    """The VAPID contact (:data:`PUSH_CONTACT_ENV`, else ``mailto:steward@localhost``)."""
    given = (os.environ if environ is None else environ).get(PUSH_CONTACT_ENV, "").strip()
    return given or "mailto:steward@localhost"
