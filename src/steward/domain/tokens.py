"""API tokens: the bearer credentials API clients authenticate with.

A token is ``stw_`` and 32 random bytes (URL-safe base64). Only its SHA-256 is stored, and it
is shown to the person once, when created. The prefix lets secret scanners and people
recognise a leaked Steward token.
"""

from __future__ import annotations

import hashlib
import secrets

from steward.domain import ApiToken
from steward.errors import Forbidden, UsageError

PREFIX = "stw_"

READ = "read"
"""Read the person's data (the dashboard)."""
CONTROL = "control"
"""Everything a read token can, plus change things: goals, tasks, approvals, grants."""
SCOPES = frozenset({READ, CONTROL})


def new_token() -> str:
    """A fresh token in plain text (256 bits from the OS's CSPRNG)."""
    return PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """SHA-256 hex of a token, the only form that is stored.

    A slow password hash (bcrypt, Argon2) protects low-entropy secrets from guessing; a
    256-bit random token cannot be guessed from its hash at any speed. A fast, unsalted hash
    keeps lookup a single indexed equality and adds no latency to every request.
    """
    return hashlib.sha256(token.encode()).hexdigest()


def require_scope(token: ApiToken, scope: str) -> None:
    """Raise :class:`Forbidden` unless ``token`` may act with ``scope`` (control covers read)."""
    if scope not in SCOPES:
        raise UsageError(f"unknown token scope {scope!r}; use one of {sorted(SCOPES)}")
    if scope in token.scopes or CONTROL in token.scopes:
        return
    raise Forbidden(f"this token does not have the {scope!r} scope")
