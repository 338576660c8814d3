"""Mail and calendar providers that sign in with OAuth 2.0 rather than a password: where their
servers are, where the person authorizes Steward, and which OAuth scopes each kind of account
needs. The person brings their own OAuth client (its id, and its secret when the provider
gives one): Steward has no client of its own to lend.

A provider not listed here is ``custom``: the person names its authorization and token
endpoints and scopes, and gives the account's settings themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from steward.errors import UsageError

CUSTOM = "custom"
"""The provider name for endpoints the person gives."""


@dataclass(kw_only=True, frozen=True)
class Provider:
    """An OAuth 2.0 provider of mail or calendar accounts."""

    name: str
    """How the person names it (``gmail``)."""
    title: str
    """What it is called to the person (``Google (Gmail, Google Calendar)``)."""
    authorization_endpoint: str
    """Where the person signs in and allows access."""
    token_endpoint: str
    """Where codes are exchanged and tokens refreshed."""
    scopes: Mapping[str, str] = field(default_factory=dict)
    """Per connector kind, the OAuth scopes it asks for (space-separated)."""
    settings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Per connector kind, the account settings it fills in; ``{username}`` in a text is the
    person's user name."""
    parameters: Mapping[str, str] = field(default_factory=dict)
    """Further authorization parameters (a refresh token needs ``access_type=offline`` at
    Google, and ``prompt=consent`` to get one again)."""

    def scope_for(self, kind: str) -> str:
        """The OAuth scopes to ask for an account of ``kind``."""
        scope = self.scopes.get(kind)
        if scope is None:
            offered = ", ".join(self.scopes) or "nothing"
            raise UsageError(f"{self.title} offers {offered} over OAuth, not {kind}")
        return scope

    def settings_for(self, kind: str, username: str) -> dict[str, Any]:
        """The settings of an account of ``kind`` at this provider, signed in as ``username``
        (the person's own settings are laid over them)."""
        preset = self.settings.get(kind, {})
        return {
            key: value.format(username=username) if isinstance(value, str) else value
            for key, value in preset.items()
        }


_GMAIL_MAIL = {
    "imap_host": "imap.gmail.com",
    "imap_port": 993,
    "imap_security": "ssl",
    "smtp_host": "smtp.gmail.com",
    "smtp_port": 465,
    "smtp_security": "ssl",
    "username": "{username}",
    "auth": "oauth2",
}

PROVIDERS: dict[str, Provider] = {
    "gmail": Provider(
        name="gmail",
        title="Google (Gmail, Google Calendar)",
        authorization_endpoint="https://accounts.google.com/o/oauth2/v2/auth",
        token_endpoint="https://oauth2.googleapis.com/token",
        scopes={
            "mail": "https://mail.google.com/",
            "calendar": "https://www.googleapis.com/auth/calendar",
        },
        settings={
            "mail": _GMAIL_MAIL,
            "calendar": {
                # Google's CalDAV endpoint: the person's principal, found from their address
                "url": "https://apidata.googleusercontent.com/caldav/v2/{username}/user",
                "username": "{username}",
                "auth": "oauth2",
            },
        },
        parameters={"access_type": "offline", "prompt": "consent"},
    ),
    "microsoft365": Provider(
        name="microsoft365",
        title="Microsoft 365 (Outlook)",
        authorization_endpoint="https://login.microsoftonline.com/common/oauth2/v2.0/authorize",
        token_endpoint="https://login.microsoftonline.com/common/oauth2/v2.0/token",
        # Microsoft 365 speaks IMAP and SMTP, but not CalDAV
        scopes={
            "mail": "https://outlook.office.com/IMAP.AccessAsUser.All "
            "https://outlook.office.com/SMTP.Send offline_access",
        },
        settings={
            "mail": {
                "imap_host": "outlook.office365.com",
                "imap_port": 993,
                "imap_security": "ssl",
                "smtp_host": "smtp.office365.com",
                "smtp_port": 587,
                "smtp_security": "starttls",
                "username": "{username}",
                "auth": "oauth2",
            }
        },
    ),
}
"""The providers Steward knows the servers and endpoints of, by name."""


def provider(
    name: str,
    *,
    authorization_endpoint: str | None = None,
    token_endpoint: str | None = None,
    scope: str | None = None,
    kind: str | None = None,
) -> Provider:
    """The provider ``name``, or with :data:`CUSTOM` one of the endpoints and ``scope`` given
    (for accounts of ``kind``; the token endpoint is enough to finish a connection)."""
    if name != CUSTOM:
        found = PROVIDERS.get(name)
        if found is None:
            names = ", ".join([*PROVIDERS, CUSTOM])
            raise UsageError(f"no OAuth provider named {name!r}; choose from {names}")
        return found
    if not token_endpoint:
        raise UsageError("a custom OAuth provider needs its token endpoint")
    return Provider(
        name=CUSTOM,
        title="your OAuth provider",
        authorization_endpoint=authorization_endpoint or "",
        token_endpoint=token_endpoint,
        scopes={kind: scope} if kind and scope else {},
    )
