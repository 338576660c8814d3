"""How a mail connection is set up: the IMAP and SMTP servers, who signs in, the address mail
is sent from, whose time zone, and which folders are Sent, Drafts, Archive and Trash.

The credential itself (a password, an app password or an OAuth 2.0 access token) is not here:
it lives in the vault, and the connection names it. Folders not given are found by their
SPECIAL-USE flags (RFC 6154) when the account is opened.
"""

from __future__ import annotations

from email.headerregistry import Address
from email.utils import parseaddr
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from steward.connectors.hosts import is_loopback

Security = Literal["ssl", "starttls", "plain"]
DEFAULT_PORTS = {
    "imap": {"ssl": 993, "starttls": 143, "plain": 143},
    "smtp": {"ssl": 465, "starttls": 587, "plain": 25},
}


def plain_address(text: str) -> str | None:
    """``text`` as one bare address (``ana@example.test``), or None when it is not one."""
    _, address = parseaddr(text)
    if not address or "@" not in address or address != text.strip():
        return None
    local, _, domain = address.rpartition("@")
    return f"{local}@{domain.lower()}" if local and "." in domain else None


class MailSettings(BaseModel):
    """One mailbox of the person, reached over IMAP (reading, organising, drafts) and SMTP
    (sending)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    imap_host: str = Field(min_length=1, description="the IMAP server (imap.example.com)")
    imap_port: int | None = Field(
        default=None, ge=1, le=65535, description="its port (993 for ssl, 143 for starttls)"
    )
    imap_security: Security = Field(
        default="ssl", description="ssl (TLS from the start), starttls, or plain (this machine)"
    )
    smtp_host: str = Field(min_length=1, description="the SMTP server (smtp.example.com)")
    smtp_port: int | None = Field(
        default=None, ge=1, le=65535, description="its port (465 for ssl, 587 for starttls)"
    )
    smtp_security: Security = Field(
        default="ssl", description="ssl (TLS from the start), starttls, or plain (this machine)"
    )
    username: str = Field(min_length=1, description="the name the person signs in with")
    auth: Literal["password", "oauth2"] = Field(
        default="password",
        description="password (or app password), or an OAuth 2.0 access token sent with "
        "XOAUTH2 (Gmail, Microsoft 365)",
    )
    address: str | None = Field(
        default=None, description="the address mail is sent from; the user name when it is one"
    )
    display_name: str = Field(default="", description="the name shown beside that address")
    time_zone: str = Field(
        default="UTC", description="IANA time zone the person reads times in (Europe/Paris)"
    )
    sent_folder: str | None = Field(default=None, description="Sent (found when not given)")
    drafts_folder: str | None = Field(default=None, description="Drafts (found when not given)")
    archive_folder: str | None = Field(default=None, description="Archive (found when not given)")
    trash_folder: str | None = Field(default=None, description="Trash (found when not given)")
    watch_folders: tuple[str, ...] = Field(
        default=("INBOX",), min_length=1, description="folders whose new mail is announced"
    )

    @model_validator(mode="after")
    def _checked(self) -> MailSettings:
        for host, security in (
            (self.imap_host, self.imap_security),
            (self.smtp_host, self.smtp_security),
        ):
            if security == "plain" and not is_loopback(host):
                # the password would cross the network in clear text
                raise ValueError(f"plain (unencrypted) is allowed only to this machine, not {host}")
        address = self.address if self.address is not None else self.username
        bare = plain_address(address)
        if bare is None:
            if self.address is not None:
                raise ValueError(f'"{self.address}" is not one plain address (ana@example.com)')
            raise ValueError("give the address mail is sent from (the user name is not one)")
        object.__setattr__(self, "address", bare)
        return self

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, name: str) -> str:
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f'unknown time zone "{name}" (use an IANA name)') from None
        return name

    @property
    def zone(self) -> ZoneInfo:
        """The person's time zone."""
        return ZoneInfo(self.time_zone)

    @property
    def sender(self) -> str:
        """The address mail is sent from (checked: always one plain address)."""
        assert self.address is not None
        return self.address

    @property
    def from_header(self) -> Address:
        """The From of mail the person sends."""
        local, _, domain = self.sender.rpartition("@")
        return Address(display_name=self.display_name, username=local, domain=domain)

    def port(self, protocol: Literal["imap", "smtp"]) -> int:
        """The port of the IMAP or SMTP server (the usual one for its security if not given)."""
        if protocol == "imap":
            return self.imap_port or DEFAULT_PORTS["imap"][self.imap_security]
        return self.smtp_port or DEFAULT_PORTS["smtp"][self.smtp_security]

    def hosts(self) -> tuple[str, ...]:
        """The hosts the credential is sent to: the IMAP server, then the SMTP server."""
        return tuple(dict.fromkeys((self.imap_host.lower(), self.smtp_host.lower())))
