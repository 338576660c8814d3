"""Opening the person's mailbox through one of their mail connections: the settings stored with
the connection, and the credential from the vault (opened by the egress broker for the IMAP or
the SMTP host only, at the moment it is used)."""

from __future__ import annotations

from collections.abc import Sequence
from email.message import EmailMessage
from typing import TYPE_CHECKING

from pydantic import ValidationError

from steward.connectors.base import ConnectionFailed, ConnectorEnv
from steward.connectors.mail.settings import MailSettings
from steward.domain.authority import Connection
from steward.harness.tools import ToolError
from steward.sentinel.egress import EgressRefused

if TYPE_CHECKING:
    from steward.connectors.mail.imap import IMAPAccount

KIND = "mail"


def settings_of(connection: Connection) -> MailSettings:
    """The connection's typed settings (checked when it was made; a stored value that no
    longer fits is a plain failure)."""
    try:
        return MailSettings.model_validate(connection.settings)
    except ValidationError as exc:
        # the fields, not pydantic's report
        fields = ", ".join(sorted({str(e["loc"][0]) for e in exc.errors() if e["loc"]}))
        raise ConnectionFailed(
            f"the settings of {connection.name} no longer fit ({fields or 'all of them'}): "
            "connect it again"
        ) from None


async def _secret(env: ConnectorEnv, connection: Connection, host: str, secure: bool) -> str:
    try:
        return (await env.login(connection, host, secure=secure)).value
    except EgressRefused as exc:
        raise ConnectionFailed(str(exc)) from None


async def open_mailbox(env: ConnectorEnv, connection: Connection) -> IMAPAccount:
    """The IMAP mailbox behind ``connection``, signed in on first use with its vault
    credential (use it in ``async with``, which logs out)."""
    # imported here: imapclient costs every command (the facade imports this module) ~20 ms
    from steward.connectors.mail.imap import IMAPAccount

    settings = settings_of(connection)
    secure = settings.imap_security != "plain"
    return IMAPAccount(settings, await _secret(env, connection, settings.imap_host, secure))


async def mailbox_for(
    env: ConnectorEnv, person_id: str, account: str | None
) -> tuple[Connection, IMAPAccount]:
    """For a tool: the person's mail connection named ``account`` (the only one, when None)
    and its mailbox; :class:`ToolError` in plain words when it cannot be opened."""
    connection = await env.connection(person_id, KIND, account)
    try:
        return connection, await open_mailbox(env, connection)
    except ConnectionFailed as exc:
        raise ToolError(str(exc)) from None


async def check_smtp(env: ConnectorEnv, connection: Connection) -> None:
    """Sign in to the connection's SMTP server and leave."""
    from steward.connectors.mail import smtp  # imported here as the IMAP client is

    settings = settings_of(connection)
    secure = settings.smtp_security != "plain"
    await smtp.check(settings, await _secret(env, connection, settings.smtp_host, secure))


async def send(
    env: ConnectorEnv, connection: Connection, message: EmailMessage, recipients: Sequence[str]
) -> tuple[str, ...]:
    """Send ``message`` through the connection's SMTP server; the recipients it refused."""
    from steward.connectors.mail import smtp

    settings = settings_of(connection)
    secure = settings.smtp_security != "plain"
    secret = await _secret(env, connection, settings.smtp_host, secure)
    return await smtp.send(settings, secret, message, recipients)
