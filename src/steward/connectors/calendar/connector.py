"""The calendar connector: CalDAV accounts, their tools and trigger sources, and the login
check run when the person connects one."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel

from steward.connectors.base import ConnectionFailed, ConnectorEnv, TriggerSource
from steward.connectors.calendar.access import KIND, open_account
from steward.connectors.calendar.caldav_client import CalendarError, CalendarUnreachable
from steward.connectors.calendar.settings import CalendarSettings
from steward.connectors.calendar.sources import ChangedSource, StartingSource
from steward.connectors.calendar.tools import READ, SCOPES, calendar_tools
from steward.domain.authority import Connection
from steward.harness.tools import Tool


class CalendarConnector:
    """Calendars over CalDAV."""

    kind: ClassVar[str] = KIND
    title: ClassVar[str] = "Calendar (CalDAV)"
    scopes: ClassVar[tuple[str, ...]] = SCOPES
    read_scopes: ClassVar[tuple[str, ...]] = (READ,)
    settings: ClassVar[type[BaseModel]] = CalendarSettings
    credential: ClassVar[bool] = True

    def hosts(self, settings: BaseModel) -> tuple[str, ...]:
        assert isinstance(settings, CalendarSettings)
        return (settings.host,)

    async def check(self, connection: Connection, env: ConnectorEnv) -> str:
        async with await open_account(env, connection) as account:
            try:
                found = await account.calendars()
            except (CalendarError, CalendarUnreachable) as exc:
                raise ConnectionFailed(str(exc)) from None
            settings = account.settings
            names = sorted(info.name for info in found)
            counted = f"{len(names)} calendar{'' if len(names) == 1 else 's'}"
            listed = f" ({', '.join(names)})" if names else ""
            return f"Signed in to {settings.host} as {settings.username}: {counted}{listed}"

    def tools(self, env: ConnectorEnv) -> list[Tool]:
        return calendar_tools(env)

    def sources(self, env: ConnectorEnv) -> list[TriggerSource]:
        return [ChangedSource(env), StartingSource(env)]


CONNECTOR = CalendarConnector()
