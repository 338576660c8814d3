"""A code-hosting connection: which repositories' deliveries it accepts, and the secret they
prove (kept in the vault, sent nowhere).

A code host calls Steward, not the other way round: the connection's credential is the webhook
secret Steward made (see :mod:`steward.service.codehost`), used only to check deliveries. It
offers no tools and watches nothing; its deliveries arrive over HTTP and become events.
"""

from __future__ import annotations

import re
from typing import ClassVar

from pydantic import BaseModel, Field, field_validator

from steward.connectors.base import ConnectionFailed, ConnectorEnv, TriggerSource
from steward.connectors.codehost.events import Provider
from steward.domain.authority import Connection
from steward.domain.secrets import NOWHERE
from steward.harness.tools import Tool

DELIVERIES = "deliveries"
"""The watch state a code-hosting connection keeps (its recent delivery ids), by source name:
when it was last written is when the last delivery came."""
SCOPE = "events.receive"
"""What a code-hosting connection offers: it takes events; no tool needs it."""
_REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*/([A-Za-z0-9_.-]+|\*)$")


class CodeHostSettings(BaseModel):
    """Which repositories a code-hosting connection takes deliveries from."""

    repositories: list[str] = Field(
        min_length=1,
        max_length=100,
        description="Repositories whose deliveries are accepted: owner/name (GitLab: "
        "group/project), or owner/* for all of an owner's",
    )

    @field_validator("repositories")
    @classmethod
    def _named(cls, given: list[str]) -> list[str]:
        names = [name.strip() for name in given]
        wrong = [
            name
            for name in names
            if not _REPOSITORY.match(name) or {".", ".."} & set(name.split("/"))
        ]
        if wrong:
            raise ValueError(f"{', '.join(repr(w) for w in wrong)} is not owner/name or owner/*")
        return list(dict.fromkeys(names))

    def accepts(self, repo: str) -> bool:
        """Deliveries about ``repo`` are taken (names compare case-insensitively, as the
        providers treat them)."""
        wanted = repo.casefold()
        for name in self.repositories:
            chosen = name.casefold()
            if chosen == wanted or (
                chosen.endswith("/*") and wanted.startswith(chosen.removesuffix("*"))
            ):
                return True
        return False


class CodeHostConnector:
    """GitHub or GitLab, as a source of typed events."""

    kind: ClassVar[str]
    title: ClassVar[str]
    provider: ClassVar[Provider]
    """How this host signs, names and shapes its deliveries."""
    scopes: ClassVar[tuple[str, ...]] = (SCOPE,)
    read_scopes: ClassVar[tuple[str, ...]] = (SCOPE,)
    settings: ClassVar[type[BaseModel]] = CodeHostSettings
    credential: ClassVar[bool] = False  # its secret is Steward's to make, not the person's

    def hosts(self, settings: BaseModel) -> tuple[str, ...]:
        return (NOWHERE,)

    async def check(self, connection: Connection, env: ConnectorEnv) -> str:
        """Nothing to sign in to: says which repositories it takes, once it has its secret."""
        if connection.secret is None:
            raise ConnectionFailed(
                f"a {self.title} connection is made with `steward codehost connect "
                f"{self.kind}` (or POST /api/v1/codehost/{self.kind}), which makes the secret "
                "its deliveries prove"
            )
        named = CodeHostSettings.model_validate(connection.settings).repositories
        listed = named[0] if len(named) == 1 else f"{', '.join(named[:-1])} and {named[-1]}"
        return f"Takes {self.title} deliveries about {listed}"

    def tools(self, env: ConnectorEnv) -> list[Tool]:
        return []

    def sources(self, env: ConnectorEnv) -> list[TriggerSource]:
        return []  # deliveries arrive over HTTP: there is nothing to poll
