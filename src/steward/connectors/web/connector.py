"""The ``web`` connector: the hosts on the person's own network Steward may read.

Public pages need no connection: the egress broker lets requests to public addresses through.
A local or private host (a NAS, a router, a home server, ``localhost``) is reached only when an
active connection offering ``web.read`` names it; a ``web`` connection is exactly that — a list
of hosts, no credential. Naming a host opens every port on it, for reading.

Its tool, ``web_read``, is the agent's for any page, with or without a connection.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from steward.connectors.base import ConnectorEnv, TriggerSource
from steward.connectors.web.fetch import FetchFailed, FetchRefused, shared_fetcher
from steward.connectors.web.read import READ_SCOPE, readable, web_read_tool
from steward.domain.authority import Connection
from steward.harness.tools import Tool
from steward.sentinel.urls import UrlRefused, normalise_host

KIND = "web"
MAX_HOSTS = 50
"""The most hosts one connection names."""


class WebSettings(BaseModel):
    """A ``web`` connection's settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    hosts: tuple[str, ...] = Field(
        min_length=1,
        max_length=MAX_HOSTS,
        description="the hosts on your network Steward may read, by name or address, "
        "comma-separated (nas.local, 192.168.1.20); no ports: every port of a host is open",
    )

    @field_validator("hosts", mode="before")
    @classmethod
    def _split(cls, given: Any) -> Any:
        """``--set hosts=a,b`` gives one text."""
        if isinstance(given, str):
            return tuple(part for part in re.split(r"[,\s]+", given) if part)
        return given

    @field_validator("hosts")
    @classmethod
    def _plain_hosts(cls, hosts: tuple[str, ...]) -> tuple[str, ...]:
        out = []
        for host in hosts:
            if "/" in host or host.count(":") == 1:
                raise ValueError(f'"{host}" is not a host: give the name alone, like nas.local')
            try:
                out.append(normalise_host(host))
            except UrlRefused as exc:
                raise ValueError(str(exc)) from None
        return tuple(dict.fromkeys(out))


class WebConnector:
    """Web pages on hosts of the person's own network."""

    kind: ClassVar[str] = KIND
    title: ClassVar[str] = "Web pages on your own network"
    scopes: ClassVar[tuple[str, ...]] = (READ_SCOPE,)
    read_scopes: ClassVar[tuple[str, ...]] = (READ_SCOPE,)
    settings: ClassVar[type[BaseModel]] = WebSettings
    credential: ClassVar[bool] = False

    def hosts(self, settings: BaseModel) -> tuple[str, ...]:
        assert isinstance(settings, WebSettings)
        return settings.hosts

    async def check(self, connection: Connection, env: ConnectorEnv) -> str:
        """Looks at each host's home page (https, else http) and says what answered; a host
        that does not answer there may still serve pages on other ports, so it is kept."""
        fetcher = shared_fetcher(env)
        said = []
        for host in connection.hosts:
            shown = f"[{host}]" if ":" in host else host
            problems = []
            for scheme in ("https", "http"):
                try:
                    page = await fetcher.get(
                        person_id=connection.person_id,
                        url=f"{scheme}://{shown}/",
                        actor=f"connection:{connection.id}",
                        scope=READ_SCOPE,
                    )
                except (FetchFailed, FetchRefused) as exc:
                    problems.append(str(exc))
                    continue
                html = "html" in page.content_type
                title = (
                    (await asyncio.to_thread(readable, page.text, page.url)).title if html else ""
                )
                said.append(f"{host} answers" + (f" ({title})" if title else ""))
                break
            else:
                said.append(f"{host} has no home page on the usual ports ({problems[-1]})")
        named = ", ".join(connection.hosts)
        return f"Steward may read pages on {named}, on any port: " + "; ".join(said)

    def tools(self, env: ConnectorEnv) -> list[Tool]:
        return [web_read_tool(shared_fetcher(env))]

    def sources(self, env: ConnectorEnv) -> list[TriggerSource]:
        return []


CONNECTOR = WebConnector()
