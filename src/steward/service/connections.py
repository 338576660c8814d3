"""The facade's accounts part: connecting the person's mail and calendar accounts, checking
them, and disconnecting them.

Everything goes through the connector registry (:mod:`steward.connectors.registry`): a kind's
typed settings, the hosts its credential may go to, its scopes and its login check come from
the connector, so a new connector is connectable the moment it registers. Connecting is all or
nothing: the settings are checked first, then the credential is sealed in the vault (bound to
the connector's hosts) and the connection recorded, then the connector signs in; when that
fails, both are removed again and the person reads why, in the connector's words.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from types import UnionType
from typing import TYPE_CHECKING, Any, Literal, Union, get_args, get_origin
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic.fields import FieldInfo

from steward.domain import Connection, Grant
from steward.domain.authority import ConnectionBounds
from steward.domain.ids import new_id
from steward.domain.limits import check_json, check_text
from steward.domain.tokens import CONTROL, READ
from steward.domain.watch import WatchState
from steward.errors import NotFound, UsageError
from steward.service.memory import MemoryService
from steward.service.security import SecurityService

if TYPE_CHECKING:
    from steward.connectors.base import Connector, ConnectorEnv
    from steward.connectors.providers import Provider

MAX_NAME = 80
"""The longest name of a connected account."""

SCOPE_WORDS = {
    "mail.read": "read mail",
    "mail.organize": "sort mail (mark, move, archive, label)",
    "mail.draft": "write drafts",
    "mail.send": "send mail",
    "calendar.read": "read calendars",
    "calendar.write": "add and change events",
    "calendar.respond": "answer invitations",
    "folder.read": "read files in your folders",
    "folder.write": "write files in your folders",
    "web.read": "read pages on your network",
    "feed.read": "read news feeds",
    "browser.read": "open and read pages in your browser",
    "browser.act": "fill in fields and sign in with your saved logins",
    "browser.submit": "send forms, each once you approve it",
    "events.receive": "receive pull request, comment and failed check events",
}
"""What each scope lets Steward do, as the person reads it; any other scope ``a.b`` reads
"b a"."""


@dataclass(kw_only=True, frozen=True)
class Connected:
    """An account just connected, and what its login check found."""

    connection: Connection
    """The new connection."""
    check: str
    """The connector's sentence (``Signed in to … as …: 2 calendars (Home, Work)``)."""


@dataclass(kw_only=True, frozen=True)
class Setting:
    """One setting an account of some kind takes."""

    name: str
    """Its key (``imap_host``)."""
    description: str
    """What it is, in the connector's words."""
    required: bool
    """It must be given (the others have defaults)."""
    shape: Literal["text", "integer", "choice", "list"]
    """How it is typed in: a text, a whole number, one of :attr:`choices`, a list of texts."""
    choices: tuple[str, ...] = ()
    """For a choice: the values it may take."""


@dataclass(kw_only=True, frozen=True)
class AccountKind:
    """A kind of account that can be connected."""

    kind: str
    """Its connector's kind (``mail``)."""
    title: str
    """What it is called (``Mail (IMAP and SMTP)``)."""
    settings: list[Setting]
    """The settings it takes, in the connector's order."""
    credential: bool
    """It is connected with a password or through OAuth; the others take neither."""


@dataclass(kw_only=True, frozen=True)
class OAuthStart:
    """Where to send the person to allow access, and what to keep until they come back."""

    url: str
    """The provider's authorization page, for this request."""
    state: str
    """Must come back unchanged with the code (it ties the redirect to this request)."""
    code_verifier: str
    """The PKCE verifier: keep it, and give it to :meth:`ConnectionService.connect_oauth`."""
    provider: str
    """What the provider is called (``Google (Gmail, Google Calendar)``)."""


@dataclass(kw_only=True, frozen=True)
class Checked:
    """What testing a connection found."""

    connection: Connection
    """The connection tested."""
    ok: bool
    """It signed in."""
    said: str
    """The connector's sentence, or what is wrong, in plain words."""


@dataclass(kw_only=True, frozen=True)
class Disconnection:
    """What disconnecting an account changed."""

    connection: Connection
    """The connection, now inactive."""
    revoked: tuple[Grant, ...]
    """Grants revoked because no active connection allows their scopes any more."""
    secret_deleted: bool
    """Its credential was deleted from the vault."""
    forgotten: int | None = None
    """With ``forget``: memories purged because they came through it."""


@dataclass(kw_only=True, frozen=True)
class AccountStatus:
    """One connected account, as the person's security page shows it."""

    connection: Connection
    """The connection."""
    title: str
    """What its kind is called (``Calendar (CalDAV)``)."""
    may: str
    """What Steward may do through it (``read mail, send mail``)."""
    bounds: str
    """How far that reaches (``only to ana@example.com and @example.org``), or ``""``."""
    watch: str
    """How watching it goes, in the person's time zone."""
    failing: bool
    """Its last poll failed."""


class ConnectionService(SecurityService, MemoryService):
    # --- accounts: connecting ------------------------------------------------------------

    async def connect(
        self,
        *,
        person_id: str,
        kind: str,
        name: str,
        settings: dict[str, Any],
        credential: str | None = None,
        read_only: bool = False,
        scopes: list[str] | None = None,
        bounds: dict[str, list[str]] | None = None,
    ) -> Connected:
        """Connect an account of ``kind`` and sign in to it. ``credential``: its password or
        app password. ``scopes``: a subset of the connector's (default: all, or the read
        scopes with ``read_only``). ``bounds``: ``recipients``, ``domains``, ``calendars``.
        Nothing is stored when the settings do not fit or the sign-in fails; the error says
        why."""
        person_id = self._for(person_id, CONTROL)
        plan = await self._plan(person_id, kind, name, settings, read_only, scopes, bounds)
        if credential is not None and not plan.connector.credential:
            raise UsageError(
                f"{plan.connector.title} takes no password: connect it without one (nothing "
                "was stored)"
            )
        return await self._establish(plan, credential)

    async def start_oauth(
        self,
        *,
        person_id: str,
        kind: str,
        provider: str,
        client_id: str,
        redirect_uri: str,
        authorization_endpoint: str | None = None,
        token_endpoint: str | None = None,
        scope: str | None = None,
    ) -> OAuthStart:
        """Begin connecting an account of ``kind`` at an OAuth 2.0 ``provider`` (``gmail``,
        ``microsoft365``, or ``custom`` with its endpoints and ``scope``): where to send the
        person (authorization code with PKCE), and what :meth:`connect_oauth` needs back."""
        from steward.sentinel.oauth import oauth_authorization_url

        self._for(person_id, CONTROL)
        chosen = _provider(kind, provider, authorization_endpoint, token_endpoint, scope)
        if not chosen.authorization_endpoint:
            raise UsageError("a custom OAuth provider needs its authorization endpoint")
        request = oauth_authorization_url(
            authorization_endpoint=chosen.authorization_endpoint,
            client_id=client_id,
            redirect_uri=redirect_uri,
            scope=chosen.scope_for(kind),
            **chosen.parameters,
        )
        return OAuthStart(
            url=request.url,
            state=request.state,
            code_verifier=request.code_verifier,
            provider=chosen.title,
        )

    async def connect_oauth(
        self,
        *,
        person_id: str,
        kind: str,
        name: str,
        provider: str,
        username: str,
        client_id: str,
        redirect_uri: str,
        code: str,
        code_verifier: str,
        client_secret: str | None = None,
        settings: dict[str, Any] | None = None,
        read_only: bool = False,
        scopes: list[str] | None = None,
        bounds: dict[str, list[str]] | None = None,
        token_endpoint: str | None = None,
    ) -> Connected:
        """Finish connecting an OAuth account: exchange the ``code`` the provider redirected
        with (and the PKCE verifier of :meth:`start_oauth`) for tokens, keep them in the vault
        as the connection's credential (refreshed there when they expire), and sign in as
        :meth:`connect` does. ``settings`` are laid over the provider's."""
        from steward.connectors.base import ConnectionFailed
        from steward.sentinel.egress import EgressFailed
        from steward.sentinel.oauth import exchange_code

        person_id = self._for(person_id, CONTROL)
        chosen = _provider(kind, provider, None, token_endpoint, None)
        given = {**chosen.settings_for(kind, username), **(settings or {})}
        given.setdefault("username", username)
        given.setdefault("auth", "oauth2")
        # everything that can be refused is, before the one-time code is spent
        plan = await self._plan(person_id, kind, name, given, read_only, scopes, bounds)
        try:
            tokens = await exchange_code(
                token_endpoint=chosen.token_endpoint,
                client_id=client_id,
                client_secret=client_secret,
                redirect_uri=redirect_uri,
                code=code,
                code_verifier=code_verifier,
                now=self.clock.now(),
            )
        except EgressFailed as exc:  # already in plain words, and redacted
            raise ConnectionFailed(
                f"{chosen.title} did not accept the authorization: {exc}"
            ) from None
        return await self._establish(plan, tokens.to_secret())

    async def test_connection(self, name: str, *, person_id: str) -> Checked:
        """Sign in to the connected account ``name`` (or id) again and look around."""
        from steward.connectors.base import ConnectionFailed
        from steward.connectors.registry import known
        from steward.sentinel.egress import EgressFailed

        person_id = self._for(person_id, CONTROL)
        connection = await self._named(person_id, name)
        try:
            connector = known(connection.kind)
        except UsageError as exc:  # a connection made before its kind had a connector
            return Checked(connection=connection, ok=False, said=str(exc))
        try:
            said = await connector.check(connection, await self._connector_env())
        except (ConnectionFailed, EgressFailed) as exc:
            return Checked(connection=connection, ok=False, said=str(exc))
        return Checked(connection=connection, ok=True, said=said)

    async def disconnect_account(
        self, name: str, *, person_id: str, forget: bool = False
    ) -> Disconnection:
        """Disconnect the account ``name`` (or id): nothing goes through it any more, grants it
        alone covered are revoked and its credential leaves the vault. ``forget``: also purge
        every memory derived from what came through it."""
        person_id = self._for(person_id, CONTROL)
        connection = await self._named(person_id, name)
        done = await self.disconnect(connection.id, person_id=person_id)
        still_used = {
            c.secret
            for c in await self.store.authority.list_connections(person_id)
            if c.active and c.secret
        }
        deleted = connection.secret not in still_used and await self._drop_secret(
            person_id, connection.secret
        )
        forgotten = (
            (await self.forget_source(f"connector:{connection.id}", person_id=person_id)).purged
            if forget
            else None
        )
        return Disconnection(
            connection=done.connection,
            revoked=done.revoked,
            secret_deleted=deleted,
            forgotten=forgotten,
        )

    # --- accounts: how they are ----------------------------------------------------------

    async def connection_status(self, *, person_id: str) -> list[AccountStatus]:
        """The person's connected accounts: what each may do and reach, and how watching it
        goes (last successful poll, failures in a row, next try), in their time zone."""
        from steward.connectors.codehost.connector import CodeHostConnector
        from steward.connectors.registry import known

        person_id = self._for(person_id, READ)
        zone = _zone((await self.store.persons.get_person(person_id)).timezone)
        watches: dict[str, list[WatchState]] = {}
        for state in await self.store.watches.list_for(person_id):
            watches.setdefault(state.connection_id, []).append(state)
        out = []
        for connection in await self.store.authority.list_connections(person_id):
            if not connection.active:
                continue
            try:
                connector: Connector | None = known(connection.kind)
            except (UsageError, ImportError):
                connector = None
            states = watches.get(connection.id, [])
            out.append(
                AccountStatus(
                    connection=connection,
                    title=connector.title if connector else connection.kind,
                    may=scopes_in_words(connection.scopes),
                    bounds=bounds_in_words(connection.bounds),
                    # a code host is not watched: it calls, and its deliveries are what to say
                    watch=(
                        deliveries_in_words(states, zone)
                        if isinstance(connector, CodeHostConnector)
                        else watch_in_words(states, zone)
                    ),
                    failing=any(s.failures for s in states),
                )
            )
        return out

    async def account_kinds(self) -> list[AccountKind]:
        """The kinds of account that can be connected here: what each is called, and the
        settings it takes (for a form or a command line to ask for)."""
        from steward.connectors.registry import kinds, known

        out = []
        for kind in kinds():
            try:
                connector = known(kind)
            except ImportError:  # a connector whose libraries are not installed
                continue
            fields = [
                _setting(name, spec)
                for name, spec in connector.settings.model_fields.items()
                if name != "auth"  # password or OAuth: how the account is connected says it
            ]
            out.append(
                AccountKind(
                    kind=kind,
                    title=connector.title,
                    settings=fields,
                    credential=connector.credential,
                )
            )
        return out

    # --- accounts: helpers -----------------------------------------------------------------

    async def _plan(
        self,
        person_id: str,
        kind: str,
        name: str,
        settings: dict[str, Any],
        read_only: bool,
        scopes: list[str] | None,
        bounds: dict[str, list[str]] | None,
    ) -> _Plan:
        """A new connection, checked in every way that needs no sign-in."""
        from steward.connectors.base import parse_settings
        from steward.connectors.registry import known

        connector = known(kind)
        check_json([name, settings, scopes, bounds], "a connection")
        name = name.strip()
        if not name:
            raise UsageError("give the account a name, like work or home")
        check_text(name, "an account's name", most=MAX_NAME)
        parsed = parse_settings(connector, settings)
        chosen = _chosen_scopes(connector.scopes, connector.read_scopes, scopes, read_only)
        try:
            limits = ConnectionBounds.from_json(bounds or {})
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        mine = await self.store.authority.list_connections(person_id)
        if any(c.active and c.name.casefold() == name.casefold() for c in mine):
            raise UsageError(
                f"an account named {name} is already connected: choose another name, or "
                "disconnect it first"
            )
        connection_id = new_id("con")
        return _Plan(
            connector=connector,
            connection=Connection(
                id=connection_id,
                person_id=person_id,
                kind=kind,
                name=name,
                scopes=chosen,
                hosts=connector.hosts(parsed),
                created_at=self.clock.now(),
                settings=parsed.model_dump(mode="json"),
                bounds=limits,
            ),
        )

    async def _establish(self, plan: _Plan, credential: str | None) -> Connected:
        """Seal the credential, record the connection and sign in; undo both when that
        fails."""
        planned = plan.connection
        person_id = planned.person_id
        secret = f"{planned.kind}-{planned.id}" if credential else None
        if secret is not None and credential is not None:
            await self.store.secrets.put_secret(
                person_id=person_id,
                name=secret,
                ciphertext=(await self._vault()).encrypt(credential),
                hosts=planned.hosts,
                now=self.clock.now(),
                actor=self._decider("person"),
            )
        try:
            connection = await self.store.authority.add_connection(
                replace(planned, secret=secret, created_at=self.clock.now())
            )
        except BaseException:
            await self._drop_secret(person_id, secret)
            raise
        try:
            said = await plan.connector.check(connection, await self._connector_env())
        except BaseException:
            # an account that does not work is not kept, nor its credential
            await self.store.authority.remove_connection(
                connection.id, person_id=person_id, now=self.clock.now()
            )
            await self._drop_secret(person_id, secret)
            raise
        return Connected(connection=connection, check=said)

    async def _named(self, person_id: str, name: str) -> Connection:
        wanted = name.strip().casefold()
        for connection in await self.store.authority.list_connections(person_id):
            if connection.active and wanted in (connection.name.casefold(), connection.id):
                return connection
        raise NotFound("connected account", name)

    async def _connector_env(self) -> ConnectorEnv:
        from steward.connectors.base import ConnectorEnv
        from steward.harness.workspace import Workspace
        from steward.sentinel.egress import EgressBroker

        if self.data_dir is None:
            raise UsageError("no data directory is configured, so there is no vault")
        return ConnectorEnv(
            store=self.store,
            broker=EgressBroker(
                self.store,
                await self._vault(),
                audit=self.store.audit.append_audit,
                now=self.clock.now,
            ),
            clock=self.clock,
            workspace=Workspace(self.data_dir / "workspace"),
        )

    async def _drop_secret(self, person_id: str, secret: str | None) -> bool:
        if secret is None:
            return False
        try:
            await self.store.secrets.delete_secret(
                person_id, secret, now=self.clock.now(), actor=self._decider("person")
            )
        except NotFound:
            return False
        return True


@dataclass(kw_only=True, frozen=True)
class _Plan:
    connector: Connector
    connection: Connection


def _provider(
    kind: str,
    name: str,
    authorization_endpoint: str | None,
    token_endpoint: str | None,
    scope: str | None,
) -> Provider:
    from steward.connectors.providers import provider
    from steward.connectors.registry import known

    connector = known(kind)
    if not connector.credential:
        raise UsageError(f"{connector.title} is not signed in to, so it takes no OAuth provider")
    return provider(
        name,
        authorization_endpoint=authorization_endpoint,
        token_endpoint=token_endpoint,
        scope=scope,
        kind=kind,
    )


def _setting(name: str, spec: FieldInfo) -> Setting:
    """How the settings field ``name`` is typed in."""
    shape: Literal["text", "integer", "choice", "list"] = "text"
    choices: tuple[str, ...] = ()
    found = spec.annotation
    if get_origin(found) in (Union, UnionType):  # an optional setting: what it is when given
        given = [t for t in get_args(found) if t is not type(None)]
        found = given[0] if len(given) == 1 else str
    if get_origin(found) is Literal:
        shape, choices = "choice", tuple(str(v) for v in get_args(found))
    elif get_origin(found) in (tuple, list):
        shape = "list"
    elif found is int:
        shape = "integer"
    return Setting(
        name=name,
        description=spec.description or name.replace("_", " "),
        required=spec.is_required(),
        shape=shape,
        choices=choices,
    )


def _chosen_scopes(
    offered: Sequence[str], readable: Sequence[str], asked: Sequence[str] | None, read_only: bool
) -> tuple[str, ...]:
    """The scopes a new connection offers: those asked for (each one the connector's, and a
    read one when ``read_only``), else all the connector's, or its read ones."""
    allowed = tuple(readable if read_only else offered)
    if not asked:
        return allowed
    beyond = [s for s in asked if s not in allowed]
    if beyond:
        what = "a read-only account" if read_only else "this kind of account"
        raise UsageError(
            f"{', '.join(beyond)} is not something {what} can offer; choose from "
            f"{', '.join(allowed)}"
        )
    return tuple(dict.fromkeys(asked))


def scopes_in_words(scopes: Sequence[str]) -> str:
    """``mail.read``, ``mail.send`` → ``read mail, send mail``."""
    words = []
    for scope in scopes:
        noun, _, verb = scope.partition(".")
        words.append(SCOPE_WORDS.get(scope) or f"{verb.replace('_', ' ')} {noun}".strip())
    return ", ".join(words)


def bounds_in_words(bounds: ConnectionBounds) -> str:
    """How far a connection reaches, as a clause, or ``""`` when it is not bounded."""
    parts = []
    to = [*bounds.recipients, *(f"anyone at {d}" for d in bounds.domains)]
    if to:
        parts.append(f"sends only to {_listed(to)}")
    if bounds.calendars:
        parts.append(
            f"only the calendar{'s' if len(bounds.calendars) > 1 else ''} "
            f"{_listed(bounds.calendars)}"
        )
    return "; ".join(parts)


def watch_in_words(states: Sequence[WatchState], zone: ZoneInfo) -> str:
    """How watching an account goes, from its trigger sources' states."""
    if not states:
        return "not watched yet"
    failing = [s for s in states if s.failures]
    if failing:
        worst = max(failing, key=lambda s: s.failures)
        times = "once" if worst.failures == 1 else f"{worst.failures} times in a row"
        said = f"could not reach it {times}"
        if worst.last_error:
            said += f" ({worst.last_error})"
        if worst.retry_at is not None:
            said += f"; trying again {_at(worst.retry_at, zone)}"
        return said
    latest = max(s.updated_at for s in states)
    return f"watched; last looked {_at(latest, zone)}"


def deliveries_in_words(states: Sequence[WatchState], zone: ZoneInfo) -> str:
    """When a code host's last delivery came."""
    if not states:
        return "no delivery yet"
    return f"last delivery {_at(max(s.updated_at for s in states), zone)}"


def _at(moment: datetime, zone: ZoneInfo) -> str:
    local = moment.astimezone(zone)
    return f"at {local:%H:%M} on {local:%a} {local.day} {local:%b}"


def _listed(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ValueError, ZoneInfoNotFoundError):  # a zone this machine does not know
        return ZoneInfo("UTC")
