"""The mail connector: mailboxes over IMAP and SMTP, their tools and trigger source, and the
login check run when the person connects one."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel

from steward.connectors.base import ConnectionFailed, ConnectorEnv, TriggerSource
from steward.connectors.mail.access import KIND, check_smtp, open_mailbox
from steward.connectors.mail.failures import MailError, MailUnreachable
from steward.connectors.mail.model import FolderRole
from steward.connectors.mail.received import ReceivedSource
from steward.connectors.mail.sending import sending_tools
from steward.connectors.mail.settings import MailSettings
from steward.connectors.mail.tools import READ, SCOPES, SEND, mail_tools
from steward.domain.authority import Connection
from steward.harness.tools import Tool


class MailConnector:
    """Mail over IMAP (reading, organising, drafts) and SMTP (sending)."""

    kind: ClassVar[str] = KIND
    title: ClassVar[str] = "Mail (IMAP and SMTP)"
    scopes: ClassVar[tuple[str, ...]] = SCOPES
    read_scopes: ClassVar[tuple[str, ...]] = (READ,)
    settings: ClassVar[type[BaseModel]] = MailSettings
    credential: ClassVar[bool] = True

    def hosts(self, settings: BaseModel) -> tuple[str, ...]:
        assert isinstance(settings, MailSettings)
        return settings.hosts()

    async def check(self, connection: Connection, env: ConnectorEnv) -> str:
        """Signs in to IMAP and looks around, then (when the connection may send
        mail) signs in to SMTP too."""
        async with await open_mailbox(env, connection) as acct:
            try:
                folders = await acct.folders()
                inbox = next((f.name for f in folders if f.role is FolderRole.INBOX), "INBOX")
                unseen = (await acct.status(inbox))["unseen"]
            except (MailError, MailUnreachable) as exc:
                raise ConnectionFailed(str(exc)) from None
        settings = acct.settings
        if SEND in connection.scopes:
            try:
                await check_smtp(env, connection)
            except MailError as exc:
                raise ConnectionFailed(str(exc)) from None
        counted = f"{len(folders)} folder{'' if len(folders) == 1 else 's'}"
        return (
            f"Signed in to {settings.imap_host} as {settings.username}: {counted}, "
            f"{unseen} unread in {'Inbox' if inbox.upper() == 'INBOX' else inbox}"
        )

    def tools(self, env: ConnectorEnv) -> list[Tool]:
        return [*mail_tools(env), *sending_tools(env)]

    def sources(self, env: ConnectorEnv) -> list[TriggerSource]:
        return [ReceivedSource(env)]


CONNECTOR = MailConnector()
