"""Opening the person's CalDAV account through one of their calendar connections: the settings
stored with the connection, the credential from the vault (opened by the egress broker for the
connection's host only), and the connection's calendar bounds."""

from __future__ import annotations

from urllib.parse import urlsplit

from steward.connectors.base import ConnectionFailed, ConnectorEnv
from steward.connectors.calendar.caldav_client import CalDAVAccount
from steward.connectors.calendar.settings import CalendarSettings
from steward.domain.authority import Connection
from steward.harness.tools import ToolError
from steward.sentinel.egress import EgressFailed, EgressRefused

KIND = "calendar"


def settings_of(connection: Connection) -> CalendarSettings:
    """The connection's typed settings (checked when it was made; a stored value that no
    longer fits is a plain failure)."""
    try:
        return CalendarSettings.model_validate(connection.settings)
    except ValueError as exc:
        raise ConnectionFailed(f"the settings of {connection.name} no longer fit: {exc}") from None


async def open_account(env: ConnectorEnv, connection: Connection) -> CalDAVAccount:
    """The account behind ``connection``, signed in with its vault credential (use it in
    ``async with``, which closes its connections)."""
    settings = settings_of(connection)
    try:
        login = await env.login(
            connection, settings.host, secure=urlsplit(settings.url).scheme == "https"
        )
    except (EgressRefused, EgressFailed) as exc:  # EgressFailed: an OAuth token not refreshed
        raise ConnectionFailed(str(exc)) from None
    return CalDAVAccount(settings, login.value, only=connection.bounds.calendars)


async def account_for(env: ConnectorEnv, person_id: str, account: str | None) -> CalDAVAccount:
    """For a tool: the account of the person's calendar connection named ``account`` (the
    only one, when None); :class:`ToolError` in plain words when it cannot be opened. Use it
    in ``async with``, which closes its connections."""
    connection = await env.connection(person_id, KIND, account)
    try:
        return await open_account(env, connection)
    except ConnectionFailed as exc:
        raise ToolError(str(exc)) from None
