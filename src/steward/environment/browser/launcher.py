"""The person's browser as the app builds it: Debian's Chromium, profiles under the data
directory, the tools bound to the person's ``browser`` connections and the vault."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator

from steward.config import Settings
from steward.connectors.base import ConnectorEnv
from steward.domain.task import Task
from steward.environment.browser.profile import Profiles
from steward.environment.browser.session import BrowserHost
from steward.environment.browser.tools import BrowserTools

CHROMIUM = "/usr/bin/chromium"
"""Debian's Chromium: Playwright drives it (no browser is ever downloaded)."""


def available() -> bool:
    return os.access(CHROMIUM, os.X_OK)


def profiles(settings: Settings) -> Profiles:
    return Profiles(settings.data_dir / "browser")


class Browser(BrowserTools):
    """The tools, and the scope each activation runs in (its browser closes with it)."""

    @contextlib.asynccontextmanager
    async def around(self, task: Task) -> AsyncIterator[None]:
        async with self.host.activation(task.person_id, task.id):
            yield


def browser(settings: Settings, env: ConnectorEnv) -> Browser:
    kept = profiles(settings)
    host = BrowserHost(kept, env.workspace, clock=env.clock, executable=CHROMIUM)
    return Browser(host, kept, connections=env.store.authority.list_connections, broker=env.broker)
