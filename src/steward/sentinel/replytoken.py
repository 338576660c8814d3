"""Signing and checking reply tokens (:class:`~steward.domain.replytoken.ReplyToken`).

A token's text is ``<id>.<signature>``: the id is random (72 bits), the signature the first
96 bits of HMAC-SHA256, keyed with a per-person key kept in the vault, over everything the
token is bound to — its id, the person, the channel, the approval, the approval's arguments'
hash and the expiry. So a token cannot be made up (the key never leaves the vault), moved to
another approval or person, or stretched past its expiry, even by someone who can write the
table of issued tokens; and it is short enough for a mail's subject line.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from steward.domain import Approval
from steward.domain.clock import Clock
from steward.domain.replytoken import Refusal, ReplyToken
from steward.domain.secrets import NOWHERE
from steward.errors import NotFound
from steward.sentinel.vault import Vault
from steward.store import Store

KEY_SECRET = "steward-reply-token-key"
"""The vault secret holding a person's signing key (made on first use)."""
DEFAULT_LIFETIME = timedelta(days=3)
"""How long a token lasts when its approval has no deadline."""
TOKEN = re.compile(r"\[st:([a-z2-7]{15})\.([A-Za-z0-9_-]{16})\]")
"""A token as written in a subject or a body."""


def new_key() -> str:
    """A fresh signing key (256 random bits, URL-safe base64)."""
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()


def new_token_id() -> str:
    """A fresh token id: 75 random bits in lower-case base32 (15 characters)."""
    return base64.b32encode(secrets.token_bytes(10)).decode().lower()[:15]


def _message(token: ReplyToken) -> bytes:
    parts = [
        "st1",
        token.id,
        token.person_id,
        token.channel_id,
        token.approval_id,
        token.args_hash,
        str(round(token.expires_at.timestamp())),
    ]
    return "\x00".join(parts).encode()


def signature(key: str, token: ReplyToken) -> str:
    """The token's signature under ``key`` (16 URL-safe characters)."""
    digest = hmac.new(key.encode(), _message(token), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest[:12]).decode()


def text_of(key: str, token: ReplyToken) -> str:
    """The token as it is written in a mail: ``[st:<id>.<signature>]``."""
    return f"[st:{token.id}.{signature(key, token)}]"


def found_in(text: str) -> list[tuple[str, str]]:
    """The tokens written in ``text``: (id, signature) each."""
    return [(m.group(1), m.group(2)) for m in TOKEN.finditer(text)]


def refusal(
    key: str,
    token: ReplyToken,
    given_signature: str,
    *,
    now: datetime,
    approval_args_hash: str,
    approval_pending: bool,
) -> Refusal | None:
    """Why ``token`` (as issued) with ``given_signature`` (as written in the reply) may not
    decide its approval now, or None when it may. The signature is compared in constant time
    and checked first: a forged token learns nothing about the approval."""
    if not hmac.compare_digest(signature(key, token), given_signature):
        return "forged"
    if token.used_at is not None:
        return "used"
    if now >= token.expires_at:
        return "expired"
    if not approval_pending:
        return "decided"
    if not hmac.compare_digest(token.args_hash, approval_args_hash):
        return "changed"
    return None


@dataclass(kw_only=True)
class ReplyTokens:
    """Issues and reads reply tokens; the signing keys live in the vault, one per person,
    made on first use."""

    store: Store
    """Where issued tokens and the sealed keys are kept."""
    vault: Vault
    """Seals and opens the keys."""
    clock: Clock
    """Issue and expiry times."""
    lifetime: timedelta = DEFAULT_LIFETIME
    """How long a token lasts when its approval has no deadline of its own."""

    async def key(self, person_id: str) -> str:
        """The person's signing key (made and sealed in the vault the first time)."""
        try:
            _, sealed = await self.store.secrets.secret_ciphertext(person_id, KEY_SECRET)
        except NotFound:
            await self.store.secrets.put_secret(
                person_id=person_id,
                name=KEY_SECRET,
                ciphertext=self.vault.encrypt(new_key()),
                hosts=(NOWHERE,),  # never sent anywhere: it only signs
                now=self.clock.now(),
                actor="steward",
            )
            _, sealed = await self.store.secrets.secret_ciphertext(person_id, KEY_SECRET)
        return self.vault.decrypt(sealed)

    async def issue(self, *, channel_id: str, approval: Approval) -> str:
        """A new token deciding ``approval`` through channel ``channel_id``; its text. It
        lasts :attr:`lifetime`, or until the approval's own deadline when that comes first."""
        now = self.clock.now()
        expires = min(d for d in (approval.expires_at, now + self.lifetime) if d is not None)
        token = ReplyToken(
            id=new_token_id(),
            person_id=approval.person_id,
            channel_id=channel_id,
            approval_id=approval.id,
            args_hash=approval.args_hash,
            expires_at=expires,
            created_at=now,
        )
        await self.store.mailchannel.issue_token(token)
        return text_of(await self.key(approval.person_id), token)
