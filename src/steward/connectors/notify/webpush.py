"""Web Push: the dashboard installed as an app on a phone or a desktop shows Steward's
messages as notifications (RFC 8030 push, RFC 8291 aes128gcm payload encryption, RFC 8292
VAPID), through ``pywebpush`` and ``py-vapid``.

**The installation's VAPID key.** One P-256 key pair per installation, created on first use in
``<data_dir>/vapid.pem`` with mode 0600 (like the vault's key file, and refused when group or
others can read it). Its public half is the ``applicationServerKey`` a browser subscribes with;
a push service then takes messages for that subscription only when signed with the private
half. Losing the file ends every subscription (the browsers must subscribe again); it is not a
secret of any one person, so it is not in the per-person vault.

**The subscription** (endpoint, ``p256dh`` and ``auth`` keys) is the channel's secret, kept in
the vault as JSON; ``Channel.config`` holds the secret's name and the push service's host.

**Outcome.** 404 or 410: the subscription is gone (the app was uninstalled, the permission
withdrawn) — :class:`~steward.errors.ChannelGone` (a ``ChannelRefused``): the channel is
turned off, and the person is told to enable push
again on that device; other 4xx (a key mismatch, a payload too large) are refused too. 408, 429,
5xx, a timeout or a connection failure — :class:`~steward.errors.ChannelUnavailable`.

**Addresses.** Browsers' push services are public (FCM, Mozilla autopush, Apple); each send
runs under the outbound guard (:mod:`~steward.connectors.notify.guard`), which refuses a
connection to this machine or a private network unless the sender was made with
``private_endpoints=True`` (tests, a lab push server). A push service never redirects, so a
redirect is not followed: it is refused.

**Links.** The payload's ``url`` stays a path: the service worker opens it on the origin the
subscription was made from, the one address that device is known to reach (it refuses any
other origin).

``aiohttp``, ``py-vapid``, ``pywebpush`` and ``cryptography``'s elliptic curves are imported
where a key is read or a message sent: every command imports this module through the facade,
and they cost ~150 ms.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import stat
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from steward.domain.channel import Channel, ChannelKind, DeliveryReceipt, OutboundMessage
from steward.domain.clock import Clock
from steward.errors import (
    ChannelGone,
    ChannelRefused,
    ChannelUnavailable,
    ConfigError,
    UsageError,
)

from . import SECRET, SecretOpener
from .guard import guarded

if TYPE_CHECKING:
    import aiohttp

KEY_FILE = "vapid.pem"
"""The installation's VAPID private key, in the data directory."""

_URGENCY = {"info": "low", "actionable": "normal", "urgent": "high"}
_GONE = frozenset({404, 410})
_PASSING = frozenset({408, 425, 429})


@dataclass(kw_only=True, frozen=True)
class Subscription:
    """A browser's push subscription (``PushSubscription.toJSON()``)."""

    endpoint: str
    """Where the push service takes messages for it (https, the push service's host)."""
    p256dh: str
    """The browser's public key (base64url, uncompressed P-256 point)."""
    auth: str
    """The shared authentication secret (base64url, 16 bytes)."""

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> Subscription:
        """From a browser's JSON; anything malformed is a :class:`UsageError`."""
        keys = raw.get("keys")
        endpoint = raw.get("endpoint")
        if not isinstance(endpoint, str) or not isinstance(keys, dict):
            raise UsageError("that is not a push subscription (it needs an endpoint and keys)")
        p256dh, auth = keys.get("p256dh"), keys.get("auth")
        if not isinstance(p256dh, str) or not isinstance(auth, str):
            raise UsageError("the push subscription lacks its p256dh or auth key")
        parts = urlsplit(endpoint)
        local = parts.hostname in {"localhost", "127.0.0.1", "::1"}
        plain = parts.scheme == "http" and local
        if not parts.hostname or not (parts.scheme == "https" or plain):
            raise UsageError("the push subscription's endpoint is not an https address")
        from cryptography.hazmat.primitives.asymmetric import ec

        try:
            point = _unb64(p256dh)
            secret = _unb64(auth)
            ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), point)
        except ValueError:
            raise UsageError("the push subscription's keys are not valid") from None
        if len(secret) != 16:
            raise UsageError("the push subscription's auth key is not 16 bytes")
        return cls(endpoint=endpoint, p256dh=p256dh, auth=auth)

    @property
    def host(self) -> str:
        """The push service's host (not secret: shown to the person)."""
        return urlsplit(self.endpoint).hostname or ""

    def to_json(self) -> str:
        return json.dumps({"endpoint": self.endpoint, "keys": self.keys()})

    def keys(self) -> dict[str, str]:
        return {"p256dh": self.p256dh, "auth": self.auth}


class VapidKey:
    """The installation's VAPID key pair (see the module's notes)."""

    def __init__(self, pem: bytes) -> None:
        from py_vapid import Vapid02

        self.signer = Vapid02.from_pem(pem)

    @classmethod
    def load(cls, data_dir: Path) -> VapidKey:
        """The key in ``data_dir``, created on first use (mode 0600; a file group or others
        may read is refused)."""
        path = data_dir / KEY_FILE
        if not path.exists():
            _create(path)
        mode = path.stat().st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ConfigError(
                f"the Web Push key file {path} is accessible to group or others (mode "
                f"{stat.S_IMODE(mode):04o}); run `chmod 600 {path}`"
            )
        return cls(path.read_bytes())

    @property
    def public_key(self) -> str:
        """The ``applicationServerKey`` browsers subscribe with (base64url, no padding)."""
        from cryptography.hazmat.primitives import serialization

        raw = self.signer.public_key.public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")

    def headers(self, endpoint: str, *, contact: str, expires: int) -> dict[str, str]:
        """The ``Authorization: vapid t=…,k=…`` header for a request to ``endpoint``."""
        parts = urlsplit(endpoint)
        claims = {"aud": f"{parts.scheme}://{parts.netloc}", "sub": contact, "exp": expires}
        signed: dict[str, str] = self.signer.sign(claims)
        return signed


class WebPushSender:
    """:class:`~steward.domain.channel.ChannelSender` for :attr:`ChannelKind.WEBPUSH`."""

    kind = ChannelKind.WEBPUSH

    def __init__(
        self,
        secrets: SecretOpener,
        key: VapidKey,
        *,
        clock: Clock | None = None,
        contact: str = "mailto:steward@localhost",
        private_endpoints: bool = False,
        timeout: float = 30.0,
        ttl: timedelta = timedelta(days=1),
    ) -> None:
        self._secrets = secrets
        self._key = key
        self._clock = clock or Clock()
        self._contact = contact
        self._private = private_endpoints
        self._timeout = timeout
        self._ttl = ttl

    async def send(self, channel: Channel, message: OutboundMessage) -> DeliveryReceipt:
        secret = channel.config.get(SECRET)
        if not isinstance(secret, str):
            raise ChannelRefused("this device's push subscription is missing; enable push again")
        try:
            subscription = Subscription.parse(
                json.loads(await self._secrets.open(channel.person_id, secret))
            )
        except (ValueError, UsageError):
            raise ChannelRefused(
                "this device's push subscription is damaged; enable push again"
            ) from None
        expires = int((self._clock.now() + timedelta(hours=12)).timestamp())
        headers: dict[str, str | int | float] = {
            **self._key.headers(subscription.endpoint, contact=self._contact, expires=expires),
            "Urgency": _URGENCY.get(message.importance, "normal"),
        }
        payload = json.dumps(
            {
                "title": message.title,
                "body": message.body,
                "url": message.link or "/",
                "tag": message.key,
                "importance": message.importance,
            }
        )
        import aiohttp
        from pywebpush import WebPusher

        with guarded(private_network=self._private) as guard:
            try:
                async with aiohttp.ClientSession() as session:
                    pusher = WebPusher(
                        {"endpoint": subscription.endpoint, "keys": subscription.keys()},
                        aiohttp_session=_NoRedirects(session),
                    )
                    response = await pusher.send_async(
                        payload,
                        headers,
                        ttl=int(self._ttl.total_seconds()),
                        content_encoding="aes128gcm",
                        timeout=aiohttp.ClientTimeout(total=self._timeout),
                    )
            except (aiohttp.ClientError, TimeoutError, OSError):
                if guard.refused:
                    raise ChannelRefused(
                        f"Steward did not connect to the push service: it is {guard.refused[0]}"
                        ", and a browser's push service never is"
                    ) from None
                raise ChannelUnavailable(
                    f"the push service ({subscription.host}) could not be reached"
                ) from None
        assert isinstance(response, aiohttp.ClientResponse)
        status = response.status
        if status < 300:
            return DeliveryReceipt(accepted=True, detail=f"taken by {subscription.host}")
        if status < 400:
            raise ChannelRefused(
                f"the push service answered with a redirect ({status}); a push service never "
                "redirects, so it was not followed"
            )
        if status in _GONE:
            raise ChannelGone(
                "this device no longer takes notifications (the app was removed or "
                "notifications were turned off); enable push again on it"
            )
        if 400 <= status < 500 and status not in _PASSING:
            raise ChannelRefused(f"the push service refused the message (it answered {status})")
        raise ChannelUnavailable(f"the push service is busy or failing (it answered {status})")


class _NoRedirects:
    """What pywebpush posts through: the session, never following a redirect (pywebpush
    cannot be told not to)."""

    def __init__(self, session: aiohttp.ClientSession) -> None:
        self._session = session

    def post(self, url: str, **options: Any) -> Any:
        return self._session.post(url, allow_redirects=False, **options)


def _create(path: Path) -> None:
    """Write a new key with mode 0600, or keep one another process wrote meanwhile."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    pem = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(pem)
        # another process may have won the race: its key is then the key
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    finally:
        tmp.unlink()


def _unb64(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError):
        raise ValueError("not base64url") from None
