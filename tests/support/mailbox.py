"""A person and their mailbox on the test mail servers (:mod:`support.mailserver`): connected
to Steward with a fresh user, their password in the vault, and ways to put mail in their
folders and look at what is there."""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from steward.connectors.base import ConnectorEnv
from steward.connectors.mail.connector import CONNECTOR
from steward.connectors.mail.tools import SCOPES
from steward.domain.authority import Connection, ConnectionBounds
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.harness.tools import Tool, ToolContext
from steward.harness.workspace import Workspace
from steward.sentinel.egress import EgressBroker
from steward.sentinel.vault import Vault, VaultKeys, generate_key
from steward.service import Service
from steward.store import Store
from support.mailserver import DOMAIN, MailServer


@dataclass(kw_only=True)
class Mailbox:
    """A person whose mailbox on :class:`MailServer` is connected to Steward (or about to be)."""

    server: MailServer
    """The servers their mail is on."""
    user: str
    """Their user name there: a fresh one per test, so mailboxes never leak between tests."""
    store: Store
    """Their Steward state."""
    clock: SimulatedClock
    """Steward's clock."""
    env: ConnectorEnv
    """What the connector works with."""
    svc: Service
    """The facade (tasks, approvals)."""
    person_id: str
    """Their id."""
    vault: Vault
    """The vault their credential is sealed with."""

    @property
    def address(self) -> str:
        return f"{self.user}@{DOMAIN}"

    def settings(self, **changes: Any) -> dict[str, Any]:
        """Their connection settings: both servers on 127.0.0.1, plain text, Paris time."""
        return {
            "imap_host": "127.0.0.1",
            "imap_port": self.server.imap_port,
            "imap_security": "plain",
            "smtp_host": "127.0.0.1",
            "smtp_port": self.server.smtp_port,
            "smtp_security": "plain",
            "username": self.user,
            "address": self.address,
            "display_name": "Ana Example",
            "time_zone": "Europe/Paris",
        } | changes

    async def connect(
        self,
        *,
        name: str = "Mail",
        scopes: tuple[str, ...] = SCOPES,
        password: str | None = None,
        settings: dict[str, Any] | None = None,
        **bounds: Any,
    ) -> Connection:
        """A mail connection, its password (or ``password``) in the vault."""
        secret = f"mail-{uuid.uuid4().hex[:6]}"
        await self.store.secrets.put_secret(
            person_id=self.person_id,
            name=secret,
            ciphertext=self.vault.encrypt(password or self.server.passwords[self.user]),
            hosts=["127.0.0.1"],
            now=self.clock.now(),
        )
        return await self.store.authority.add_connection(
            Connection(
                id=new_id("con"),
                person_id=self.person_id,
                kind="mail",
                name=name,
                scopes=scopes,
                hosts=("127.0.0.1",),
                created_at=self.clock.now(),
                settings=settings or self.settings(),
                bounds=ConnectionBounds.from_json(bounds),
                secret=secret,
            )
        )

    async def receive(self, raw: bytes, *, folder: str = "INBOX") -> None:
        """``raw`` arrives in their folder."""
        await asyncio.to_thread(self.server.deliver, self.user, raw, folder=folder)

    async def folder(self, name: str, user: str | None = None) -> list[tuple[bytes, bytes]]:
        """``(flags, message)`` of each message in their (or ``user``'s) folder ``name``."""
        return await asyncio.to_thread(self.server.messages, user or self.user, name)

    def tools(self) -> dict[str, Tool]:
        """The mail tools, by name."""
        return {t.name: t for t in CONNECTOR.tools(self.env)}

    def context(self, workspace: Path, key: str | None = None) -> ToolContext:
        """A tool call of theirs in task ``task-1`` (``key``: the effect's idempotency key)."""
        return ToolContext(
            person_id=self.person_id,
            task_id="task-1",
            goal_id=None,
            idempotency_key=key,
            workspace=workspace,
            now=self.clock.now(),
        )

    async def call(self, ctx: ToolContext, name: str, **args: Any) -> Any:
        """Call the tool ``name`` as the model would (its arguments as JSON)."""
        tool = self.tools()[name]
        return await tool.invoke(tool.parse_arguments(json.dumps(args)), ctx)


async def mailbox_of(
    server: MailServer,
    store: Store,
    clock: SimulatedClock,
    workspace: Path,
    vault: Vault | None = None,
) -> Mailbox:
    """The person with a fresh mailbox on ``server`` (not yet connected); ``vault``: the one
    their credentials are sealed with (a new one when not given)."""
    vault = vault or Vault(VaultKeys(keys=(generate_key(),), source="test"))
    env = ConnectorEnv(
        store=store,
        broker=EgressBroker(store, vault, now=clock.now),
        clock=clock,
        workspace=Workspace(workspace),
    )
    svc = Service(store, clock)
    person = await svc.ensure_person()
    return Mailbox(
        server=server,
        user=server.add_user(),
        store=store,
        clock=clock,
        env=env,
        svc=svc,
        person_id=person.id,
        vault=vault,
    )
