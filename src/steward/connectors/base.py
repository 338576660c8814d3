"""The connector layer: what a connector contributes, and what it is given to work with.

A connector (``connectors/<kind>/``) reaches one sort of the person's accounts — mail over
IMAP and SMTP, calendars over CalDAV — and contributes, through :mod:`steward.connectors.registry`:

- **typed tools** (:class:`~steward.harness.tools.Tool` with ``connector=<kind>``): each with its
  effect class, its scopes (reading is never sending), argument roles (the ACCOUNT argument
  names the connection, so the policy holds the call to that connection's scopes and bounds),
  idempotency or a reconcile hook, and a one-line summary of a proposed call;
- **trigger sources** (:class:`TriggerSource`): deterministic watchers that turn changes into
  inbox events with stable dedupe keys from a cursor the store keeps — no model involved;
- **connection setup**: typed settings (:attr:`Connector.settings`) and a login check
  (:meth:`Connector.check`) run when the person connects, before anything is stored.

Credentials never reach a connector's caller: :meth:`ConnectorEnv.login` opens the connection's
vault secret through the egress broker for exactly the host it is bound to, and the connector
uses it at once. Text others wrote (a mail body, an invitation's description) is untrusted:
read tools declare ``untrusted_output`` and trigger payloads say ``untrusted``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pydantic import BaseModel, ValidationError

from steward.domain.authority import Connection, choose_connection
from steward.domain.clock import Clock
from steward.domain.watch import Found
from steward.errors import UsageError
from steward.harness.tools import Tool, ToolError
from steward.harness.workspace import Workspace
from steward.store import Store

if TYPE_CHECKING:
    from steward.connectors.mail.authenticity import DnsTxt
    from steward.connectors.mail.person import PersonMail
    from steward.sentinel.egress import EgressBroker, Login


class ConnectionFailed(UsageError):
    """Connecting or reaching an account failed; the message says why in plain words (wrong
    password, server unreachable, certificate refused) and what to do."""


class SettingsInvalid(UsageError):
    """Connection settings that do not fit the connector's; nothing was stored."""


@dataclass(kw_only=True, frozen=True)
class Poll:
    """What one poll of a trigger source found, and where the next one starts."""

    found: Sequence[Found]
    """New changes, as events (each with a stable dedupe key)."""
    cursor: dict[str, Any]
    """The position after them, stored with them in one transaction."""


class TriggerSource(Protocol):
    """A watcher of one kind of change in a connection (new mail, a calendar change)."""

    name: str
    """Its name and the type of the events it emits (``mail.received``)."""

    async def poll(self, connection: Connection, cursor: dict[str, Any] | None) -> Poll:
        """Read changes after ``cursor`` (None: first run — start from now, emitting nothing
        old). Raise :class:`ConnectionFailed` (or any error) when the service cannot be
        reached: the watcher backs off and the cursor stays."""
        ...

    async def wait(self, connection: Connection, seconds: float) -> None:
        """Return when a change may have happened or after ``seconds`` (IMAP IDLE, or a sleep
        on the clock)."""
        ...


@dataclass(kw_only=True)
class ConnectorEnv:
    """What a connector's tools and trigger sources work with."""

    store: Store
    """The person's state: connections, watch cursors."""
    broker: EgressBroker
    """Opens credentials at the boundary (:meth:`login`)."""
    clock: Clock
    """Every time read."""
    workspace: Workspace
    """Where fetched files (attachments) are kept, per person."""
    person_mail: PersonMail | None = None
    """Takes the person's own mail to the agent's mailbox of a mail channel (approval replies,
    conversation); None: such mail is an ordinary ``mail.received`` event."""
    dkim_keys: DnsTxt | None = None
    """Where the DKIM keys that prove the person's mail are looked up (dkimpy's ``dnsfunc``);
    None: DNS. Tests serve their own signing key here."""

    async def connection(self, person_id: str, kind: str, account: str | None) -> Connection:
        """The person's active connection of ``kind`` named ``account`` (the only one, when
        None). :class:`~steward.harness.tools.ToolError` in plain words otherwise."""
        chosen = choose_connection(
            await self.store.authority.list_connections(person_id), kind, account
        )
        if isinstance(chosen, str):
            raise ToolError(chosen)
        return chosen

    async def login(self, connection: Connection, host: str, *, secure: bool) -> Login:
        """The connection's credential for logging in at ``host`` (its vault secret must be
        bound to that host; plain text only to this machine). The connection is read again
        first: a watch or tool holding an old copy cannot use an account since disconnected."""
        current = {
            c.id: c for c in await self.store.authority.list_connections(connection.person_id)
        }.get(connection.id)
        if current is None or not current.active:
            raise ConnectionFailed(f"{connection.name} is no longer connected")
        if current.secret is None or current.secret != connection.secret:
            raise ConnectionFailed(f"{connection.name} has no credential in the vault")
        return await self.broker.login(
            person_id=connection.person_id,
            name=connection.secret,
            host=host,
            secure=secure,
            actor=f"connection:{connection.id}",
        )


class Connector(Protocol):
    """One kind of account Steward can connect to."""

    kind: ClassVar[str]
    """Connection kind (``mail``, ``calendar``)."""
    title: ClassVar[str]
    """What it is called to the person (``Mail (IMAP and SMTP)``)."""
    scopes: ClassVar[tuple[str, ...]]
    """Every scope its tools may need; a connection offers a chosen subset."""
    read_scopes: ClassVar[tuple[str, ...]]
    """The scopes a read-only connection offers."""
    settings: ClassVar[type[BaseModel]]
    """Its connection settings (servers, user name, folders): never a secret."""
    credential: ClassVar[bool]
    """The person connects it with a password or through OAuth (mail, calendar); False when it
    takes none (folders, web hosts, feeds; a code host, whose secret Steward makes)."""

    def hosts(self, settings: BaseModel) -> tuple[str, ...]:
        """The hosts its credential is sent to (the vault secret is bound to exactly these)."""
        ...

    async def check(self, connection: Connection, env: ConnectorEnv) -> str:
        """Log in and look around; a plain sentence saying what was found ("Signed in to
        imap.example.com as ana@example.com: 6 folders, 3 unread in Inbox"). Raises
        :class:`ConnectionFailed` saying what is wrong."""
        ...

    def tools(self, env: ConnectorEnv) -> list[Tool]:
        """Its tools, bound to ``env``."""
        ...

    def sources(self, env: ConnectorEnv) -> list[TriggerSource]:
        """Its trigger sources, bound to ``env``."""
        ...


def parse_settings(connector: Connector, raw: dict[str, Any]) -> BaseModel:
    """The connector's typed settings from what the person gave; :class:`SettingsInvalid`
    naming each field that does not fit."""
    try:
        return connector.settings.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'settings'}: {err['msg']}"
            for err in exc.errors()
        )
        raise SettingsInvalid(f"{connector.title} settings: {problems}") from None
