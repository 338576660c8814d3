"""A Web Push service for tests, on 127.0.0.1 over real sockets, that does what a browser's
push service and the browser do together: it VERIFIES each request's VAPID JWT (RFC 8292:
ES256 signature against the key in ``k=``, that key being the installation's, the audience
being this service's origin, the expiry in the future by the sender's clock) and answers 403
when it does not hold, and it DECRYPTS the aes128gcm payload (RFC 8291) with the private key of
a subscription made the way a browser makes one.

    with push_service(expected_key=key.public_key, now=clock.now) as push:
        sub = push.subscribe()              # {"endpoint": ..., "keys": {...}}
        ...                                 # send to it
        [got] = push.delivered              # the decrypted JSON payload
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import http_ece
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from support.notifyservers import Hit, Receiver, receiving


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(kw_only=True)
class Browser:
    """One subscription, with the keys only the browser holds."""

    endpoint: str
    private_key: ec.EllipticCurvePrivateKey
    auth: bytes

    def subscription(self) -> dict[str, Any]:
        public = self.private_key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return {"endpoint": self.endpoint, "keys": {"p256dh": b64(public), "auth": b64(self.auth)}}


@dataclass(kw_only=True)
class PushService:
    receiver: Receiver
    expected_key: str
    now: Callable[[], datetime]
    browsers: dict[str, Browser] = field(default_factory=dict)
    delivered: list[dict[str, Any]] = field(default_factory=list)
    """Payloads verified and decrypted, in arrival order."""
    rejected: list[str] = field(default_factory=list)
    """Why requests were refused (403)."""
    headers: list[dict[str, str]] = field(default_factory=list)

    def subscribe(self, name: str = "phone") -> dict[str, Any]:
        browser = Browser(
            endpoint=f"{self.receiver.url}/push/{name}-{os.urandom(6).hex()}",
            private_key=ec.generate_private_key(ec.SECP256R1()),
            auth=os.urandom(16),
        )
        self.browsers[browser.endpoint.rsplit("/", 1)[1]] = browser
        return browser.subscription()

    def check(self, hit: Hit) -> int | None:
        problem = self._vapid_problem(hit.headers.get("authorization", ""))
        if problem:
            self.rejected.append(problem)
            return 403
        browser = self.browsers.get(hit.path.rsplit("/", 1)[1])
        if browser is None:
            return 410
        if hit.headers.get("content-encoding") != "aes128gcm":
            self.rejected.append("not aes128gcm")
            return 400
        plain = http_ece.decrypt(
            hit.body, private_key=browser.private_key, auth_secret=browser.auth, version="aes128gcm"
        )
        self.delivered.append(json.loads(plain))
        self.headers.append(hit.headers)
        return None

    def _vapid_problem(self, header: str) -> str | None:
        scheme, _, rest = header.partition(" ")
        if scheme.lower() != "vapid":
            return "no vapid authorization"
        parts = dict(p.split("=", 1) for p in rest.split(",") if "=" in p)
        token, key = parts.get("t", ""), parts.get("k", "")
        if key != self.expected_key:
            return "signed with another key"
        try:
            head, claims_b64, signature = token.split(".")
            public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64(key))
            raw = unb64(signature)
            der = encode_dss_signature(
                int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")
            )
            public.verify(der, f"{head}.{claims_b64}".encode(), ec.ECDSA(hashes.SHA256()))
        except (ValueError, InvalidSignature):
            return "bad signature"
        if json.loads(unb64(head)).get("alg") != "ES256":
            return "not ES256"
        claims = json.loads(unb64(claims_b64))
        if claims.get("aud") != self.receiver.url:
            return f"audience {claims.get('aud')}"
        if int(claims.get("exp", 0)) <= self.now().timestamp():
            return "expired"
        if not str(claims.get("sub", "")).startswith(("mailto:", "https:")):
            return "no contact"
        return None


@contextmanager
def push_service(*, expected_key: str, now: Callable[[], datetime]) -> Iterator[PushService]:
    with receiving() as receiver:
        service = PushService(receiver=receiver, expected_key=expected_key, now=now)
        receiver.status = 201
        receiver.check = service.check
        yield service
