"""The folder connector: some of the person's folders on this machine, their tools and their
trigger source, and the check run when the person connects them.

There is no credential: the files are on the machine Steward runs on, reached with the rights
of the user it runs as. What the agent may do is the connection's scopes (``folder.read``,
and ``folder.write`` unless it is read-only) and its roots.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar

from pydantic import BaseModel

from steward.connectors.base import ConnectorEnv, TriggerSource
from steward.connectors.folder.scan import MAX_WATCHED, count
from steward.connectors.folder.settings import (
    FolderSettings,
    refuse_steward_places,
    settings_of,
    steward_places,
)
from steward.connectors.folder.sources import FilesSource
from steward.connectors.folder.tools import KIND, READ, SCOPES, WRITE, folder_tools
from steward.connectors.folder.wording import counted
from steward.domain.authority import Connection
from steward.harness.tools import Tool


class FolderConnector:
    """Folders on this machine."""

    kind: ClassVar[str] = KIND
    title: ClassVar[str] = "Folders on this machine"
    scopes: ClassVar[tuple[str, ...]] = SCOPES
    read_scopes: ClassVar[tuple[str, ...]] = (READ,)
    settings: ClassVar[type[BaseModel]] = FolderSettings
    credential: ClassVar[bool] = False

    def hosts(self, settings: BaseModel) -> tuple[str, ...]:
        return ()  # no credential goes anywhere

    async def check(self, connection: Connection, env: ConnectorEnv) -> str:
        settings = settings_of(connection)
        refuse_steward_places(settings, steward_places(env))
        folders = settings.folders
        many = f"more than {MAX_WATCHED:,} files"
        found = [await asyncio.to_thread(count, root) for root in folders]
        listed = ", ".join(
            f"{root.name} ({counted(n, 'file') if n is not None else many})"
            for root, n in zip(folders, found, strict=True)
        )
        access = "read and write" if WRITE in connection.scopes else "read-only"
        return f"{counted(len(folders), 'folder')}: {listed}; {access}"

    def tools(self, env: ConnectorEnv) -> list[Tool]:
        return folder_tools(env)

    def sources(self, env: ConnectorEnv) -> list[TriggerSource]:
        return [FilesSource(env)]


CONNECTOR = FolderConnector()
