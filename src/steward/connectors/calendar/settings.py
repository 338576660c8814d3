"""How a calendar connection is set up: where the CalDAV server is, who signs in, whose time.

The credential itself (a password, an app password or an OAuth 2.0 access token) is not here:
it lives in the vault, and the connection names it.
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from steward.connectors.hosts import is_loopback


class CalendarSettings(BaseModel):
    """One CalDAV account of the person."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str = Field(description="CalDAV URL: the server, the principal or the calendar home")
    username: str = Field(min_length=1, description="the name the person signs in with")
    auth: Literal["password", "oauth2"] = Field(
        default="password",
        description="password (or app password) sent with Basic auth, or an OAuth 2.0 "
        "access token sent as a Bearer token (Google Calendar's CalDAV endpoint)",
    )
    email: str | None = Field(
        default=None,
        description="the person's address as organizer and attendee; the user name when it "
        "is an address",
    )
    default_calendar: str | None = Field(
        default=None, description="name of the calendar new events go to when none is named"
    )
    time_zone: str = Field(
        default="UTC", description="IANA time zone the person reads times in (Europe/Paris)"
    )
    starting_soon_minutes: int = Field(
        default=15, ge=1, le=24 * 60, description="how long before an event it is announced"
    )

    @field_validator("url")
    @classmethod
    def _secure_url(cls, url: str) -> str:
        parts = urlsplit(url)
        if parts.scheme not in ("https", "http") or not parts.hostname:
            raise ValueError("the CalDAV URL must be an https:// URL")
        if parts.scheme == "http" and not is_loopback(parts.hostname):
            # a password or token in Basic/Bearer auth would cross the network in clear text
            raise ValueError("plain http is allowed only to this machine; use https")
        if parts.username or parts.password:
            raise ValueError("put the credential in the vault, not in the URL")
        return url if url.endswith("/") else url + "/"

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, name: str) -> str:
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {name!r} (use an IANA name)") from None
        return name

    @model_validator(mode="after")
    def _address(self) -> CalendarSettings:
        if self.email is None and "@" in self.username:
            object.__setattr__(self, "email", self.username)
        return self

    @property
    def zone(self) -> ZoneInfo:
        """The person's time zone."""
        return ZoneInfo(self.time_zone)

    @property
    def host(self) -> str:
        """The server's host name, for plain sentences."""
        return urlsplit(self.url).hostname or self.url
