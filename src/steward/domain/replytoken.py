"""Reply tokens: what lets a reply by mail decide an approval. A token is bound to one approval
as it was asked (its arguments' hash), to one person and one channel, and to an expiry; it is
signed (HMAC-SHA256, :mod:`steward.sentinel.replytoken`) and spent once, in the same
transaction as the decision it makes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal


@dataclass(kw_only=True, frozen=True)
class ReplyToken:
    """One issued token (the secret part of its text is its signature, never stored)."""

    id: str
    """Random, unguessable: names the token in its text (``[st:<id>.<signature>]``)."""
    person_id: str
    """Whose approval it decides: only their channel's address may use it."""
    channel_id: str
    """The channel the approval mail went through."""
    approval_id: str
    """The approval it decides."""
    args_hash: str
    """The approval's arguments' hash when the mail was sent: other arguments, no decision."""
    expires_at: datetime
    """Not usable after this."""
    created_at: datetime
    """When it was issued."""
    used_at: datetime | None = None
    """When it decided its approval (it never decides another thing)."""


Refusal = Literal["unknown", "forged", "expired", "used", "decided", "changed", "stranger"]
"""Why a token did not decide: not one Steward issued, a bad signature, past its expiry,
spent already, the approval no longer waits, its arguments changed, or the reply came from
an address that is not the person's."""
