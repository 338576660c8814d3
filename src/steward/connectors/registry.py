"""The connectors Steward knows, by kind: one place the composition roots and the service ask.

Connectors register here (:func:`known`); nothing else lists them. A connector module is
imported only when its kind is first asked for, so a process that never touches mail does not
load the IMAP stack.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from steward.connectors.base import Connector, ConnectorEnv, TriggerSource
from steward.errors import UsageError
from steward.harness.tools import Tool

_MODULES = {
    "mail": "steward.connectors.mail.connector",
    "calendar": "steward.connectors.calendar.connector",
    "github": "steward.connectors.codehost.github",
    "gitlab": "steward.connectors.codehost.gitlab",
    "folder": "steward.connectors.folder.connector",
    "web": "steward.connectors.web.connector",
    "feed": "steward.connectors.feed.connector",
    "browser": "steward.connectors.browser.connector",
}
"""Kind → the module whose ``CONNECTOR`` is that kind's :class:`Connector`."""


def kinds() -> tuple[str, ...]:
    """Every kind a connection can be made for."""
    return tuple(_MODULES)


def known(kind: str) -> Connector:
    """The connector for ``kind``; :class:`~steward.errors.UsageError` listing the kinds."""
    module = _MODULES.get(kind)
    if module is None:
        raise UsageError(f"no connector for {kind!r}; connectable: {', '.join(kinds())}")
    connector: Connector = importlib.import_module(module).CONNECTOR
    return connector


def tools(env: ConnectorEnv, only: Iterable[str] | None = None) -> list[Tool]:
    """The tools of every connector (or of the kinds in ``only``), bound to ``env``. A tool
    reaches an account only through a connection the person made; without one, the policy
    denies it and the tool says no account is connected."""
    return [t for kind in (kinds() if only is None else only) for t in known(kind).tools(env)]


def sources(kind: str, env: ConnectorEnv) -> list[TriggerSource]:
    """The trigger sources of the connector for ``kind``, bound to ``env``."""
    return known(kind).sources(env)
