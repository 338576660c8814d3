"""An OAuth 2.0 token set as the vault keeps it: one secret whose plaintext is JSON.

The broker refreshes it at the boundary (:mod:`steward.sentinel.egress`); the authorization-code
flow that first obtains it is in :mod:`steward.sentinel.oauth`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(kw_only=True, frozen=True)
class OAuthTokens:
    """An OAuth 2.0 token set, stored as one vault secret (JSON)."""

    access_token: str
    """What ``{{secret:<name>}}`` stands for in a request."""
    token_endpoint: str
    """Where it is refreshed (https, or http on a local host)."""
    client_id: str
    """The OAuth client's id."""
    client_secret: str | None = None
    """The client's secret (None: a public client)."""
    refresh_token: str | None = None
    """Grants new access tokens (None: cannot be refreshed)."""
    expires_at: float | None = None
    """Epoch seconds at which the access token expires (None: unknown)."""
    token_type: str = "Bearer"
    """As the server said."""
    scope: str | None = None
    """Scopes granted, space-separated, as the server said."""

    def to_secret(self) -> str:
        """The plaintext to encrypt and store."""
        return json.dumps({k: v for k, v in self.__dict__.items() if v is not None})

    @classmethod
    def from_secret(cls, plaintext: str) -> OAuthTokens | None:
        """The token set a secret's plaintext holds, or None if it is a plain secret."""
        if not plaintext.startswith("{"):
            return None
        try:
            data = json.loads(plaintext)
        except ValueError:
            return None
        required = ("access_token", "token_endpoint", "client_id")
        if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in required):
            return None
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    @classmethod
    def from_response(
        cls,
        token: Mapping[str, Any],
        *,
        token_endpoint: str,
        client_id: str,
        client_secret: str | None,
        now: datetime,
        previous: OAuthTokens | None = None,
    ) -> OAuthTokens:
        """The token set a token endpoint answered; ``expires_in`` is counted from ``now``."""
        if "expires_in" in token:
            expires_at: float | None = now.timestamp() + float(token["expires_in"])
        elif token.get("expires_at") is not None:
            expires_at = float(token["expires_at"])
        else:
            expires_at = None
        return cls(
            access_token=str(token["access_token"]),
            token_endpoint=token_endpoint,
            client_id=client_id,
            client_secret=client_secret,
            refresh_token=token.get("refresh_token")
            or (previous.refresh_token if previous else None),
            expires_at=expires_at,
            token_type=str(token.get("token_type") or "Bearer"),
            scope=token.get("scope") or (previous.scope if previous else None),
        )

    def expired(self, now: datetime, *, leeway_seconds: float) -> bool:
        """Whether it expires within ``leeway_seconds`` of ``now``."""
        return self.expires_at is not None and self.expires_at - leeway_seconds <= now.timestamp()

    def secret_values(self) -> tuple[str, ...]:
        """Every secret value in it, for redaction."""
        found = (self.access_token, self.refresh_token, self.client_secret)
        return tuple(v for v in found if v)
