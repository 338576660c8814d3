"""The ``browser`` connector: the sites the person's own browser may be driven on.

A ``browser`` connection is a list of hosts and the scopes the agent has there: ``browser.read``
(open, read, click, scroll, wait, screenshot, download), ``browser.act`` (type into fields,
choose options, type a saved login) and ``browser.submit`` (send a form: a purchase, a post, an
account change — each asked of the person with a screenshot and the values). The browser may
open pages only on these hosts; the logins it keeps there live in the person's browser profile
(``steward.environment.browser``), the passwords it types in the vault, bound to their hosts.
The tools themselves belong to the environment, which drives the browser.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, Field

from steward.connectors.base import ConnectorEnv, TriggerSource
from steward.connectors.web.connector import WebSettings
from steward.domain.authority import Connection
from steward.harness.tools import Tool

KIND = "browser"
READ = "browser.read"
ACT = "browser.act"
SUBMIT = "browser.submit"
SCOPES = (READ, ACT, SUBMIT)


class BrowserSettings(WebSettings):
    """A ``browser`` connection's settings: its hosts (checked as a ``web`` connection's)."""

    hosts: tuple[str, ...] = Field(
        min_length=1,
        max_length=50,
        description="the sites the browser may open, comma-separated (shop.example, "
        "www.shop.example): a link or a redirect to any other site is not followed",
    )


class BrowserConnector:
    """The person's browser, on the sites they chose."""

    kind: ClassVar[str] = KIND
    title: ClassVar[str] = "Your browser, on the sites you choose"
    scopes: ClassVar[tuple[str, ...]] = SCOPES
    read_scopes: ClassVar[tuple[str, ...]] = (READ,)
    settings: ClassVar[type[BaseModel]] = BrowserSettings
    credential: ClassVar[bool] = False

    def hosts(self, settings: BaseModel) -> tuple[str, ...]:
        assert isinstance(settings, BrowserSettings)
        return settings.hosts

    async def check(self, connection: Connection, env: ConnectorEnv) -> str:
        """Nothing to log in to: says what the browser may do, and where."""
        can = ["open and read pages"]
        if ACT in connection.scopes:
            can.append("fill in fields")
        if SUBMIT in connection.scopes:
            can.append("send forms once you approve each one")
        return f"The browser may {', '.join(can)} on {', '.join(connection.hosts)}"

    def tools(self, env: ConnectorEnv) -> list[Tool]:
        return []  # the environment drives the browser (steward.environment.browser.tools)

    def sources(self, env: ConnectorEnv) -> list[TriggerSource]:
        return []


CONNECTOR = BrowserConnector()
