"""Authorization state: connected accounts and their scopes, grants with lifetimes, action rules,
API tokens, vault secrets and the audit log. Never inferred by the model; only the person (or
their explicit decisions) changes it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any


class Lifetime(StrEnum):
    ONCE = "once"
    """One action, then spent."""
    TASK = "task"
    """Any matching action of one task."""
    SESSION = "session"
    """Any matching action in one conversation/session."""
    UNTIL = "until"
    """Until a time."""
    STANDING = "standing"
    """Until revoked."""


class RuleMode(StrEnum):
    DO = "do"
    """Run it (within the connection's scopes)."""
    DO_IF_PREAPPROVED = "do_if_preapproved"
    """Run it if a live grant covers it; otherwise ask."""
    ASK = "ask"
    """Ask the person first, every time."""
    HANDOFF = "handoff"
    """The person does it themselves."""
    DENY = "deny"
    """Never."""


@dataclass(kw_only=True, frozen=True)
class ConnectionBounds:
    """The most a connection may reach, whatever grants or rules say (empty: no bound)."""

    recipients: tuple[str, ...] = ()
    """Addresses it may send to (with :attr:`domains`: either admits a recipient)."""
    domains: tuple[str, ...] = ()
    """Domains it may send to (a recipient at the domain or a subdomain of it)."""
    calendars: tuple[str, ...] = ()
    """Calendars it may read or write (case-insensitive names)."""

    def to_json(self) -> dict[str, list[str]]:
        return {k: list(v) for k, v in self.__dict__.items() if v}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ConnectionBounds:
        """Read stored or given bounds; unknown keys or values that are not lists of text are
        an error, so a typo never silently lifts a bound."""
        unknown = sorted(set(data) - {"recipients", "domains", "calendars"})
        if unknown:
            raise ValueError(f"unknown connection bounds {unknown}")
        out: dict[str, tuple[str, ...]] = {}
        for key, values in data.items():
            if not isinstance(values, list | tuple) or not all(
                isinstance(v, str) and v.strip() for v in values
            ):
                raise ValueError(f"connection bound {key} must be a list of names")
            out[key] = tuple(v.strip().lower() for v in values)
        return cls(**out)

    @property
    def empty(self) -> bool:
        return not any(self.__dict__.values())


@dataclass(kw_only=True, frozen=True)
class Connection:
    """A connected account or service, and the most it allows."""

    id: str
    """Stable id, ``con_…``."""
    person_id: str
    """Owner."""
    kind: str
    """``mail``, ``calendar``, ``http``, ``mcp``..."""
    name: str
    """Human label (``work mail``)."""
    scopes: tuple[str, ...]
    """What it can do at all (``mail.read``, ``mail.send``); reading is not sending."""
    hosts: tuple[str, ...] = ()
    """Hosts its credentials may be sent to."""
    active: bool = True
    """False once disconnected: nothing through it is allowed any more."""
    created_at: datetime
    """When it was connected."""
    settings: dict[str, Any] = field(default_factory=dict)
    """How to reach it (servers, ports, user name, folders): the connector's own typed
    settings as JSON, never a secret."""
    bounds: ConnectionBounds = field(default_factory=ConnectionBounds)
    """The most it may reach (recipients, domains, calendars)."""
    secret: str | None = None
    """The vault secret holding its password or OAuth token set (None: it needs none)."""


def choose_connection(
    connections: Sequence[Connection], kind: str, account: str | None
) -> Connection | str:
    """The one active connection of ``kind`` a call goes through: the one named ``account``
    (its name, case-insensitively, or its id), or the only one when none is named; otherwise
    why not, in plain words. The policy and the connector both choose with this, so the
    connection judged is the connection used."""
    of_kind = [c for c in connections if c.active and c.kind == kind]
    if account:
        wanted = account.strip().casefold()
        of_kind = [c for c in of_kind if c.name.strip().casefold() == wanted or c.id == account]
    if len(of_kind) == 1:
        return of_kind[0]
    if of_kind:
        names = ", ".join(sorted(c.name for c in of_kind))
        return f"several {kind} accounts are connected ({names}); name one as the account"
    if account:
        return f"no {kind} account named {account} is connected"
    return f"no {kind} account is connected"


@dataclass(kw_only=True, frozen=True)
class Grant:
    """Authority the person gave: scopes, constraints and a lifetime."""

    id: str
    """Stable id, ``grt_…``."""
    person_id: str
    """Whose authority."""
    scopes: tuple[str, ...]
    """What it allows (never more than a connection allows)."""
    lifetime: Lifetime
    """How long it lives."""
    constraints: dict[str, Any] = field(default_factory=dict)
    """``recipients``/``domains``/``hosts`` allowlists, ``path_prefix``, ``max_amount`` per
    action, ``period_amount`` over ``period_seconds``, ``tool`` (only this tool)."""
    task_id: str | None = None
    """For ``once``/``task``: the task it is for (None: any task, once)."""
    session_id: str | None = None
    """For ``session``: the conversation."""
    expires_at: datetime | None = None
    """For ``until``."""
    used_at: datetime | None = None
    """For ``once``: when it was spent."""
    issued_by: str
    """Who issued it (the person, a token name)."""
    reason: str = ""
    """Why, for the audit log."""
    created_at: datetime
    """When it was issued."""
    revoked_at: datetime | None = None
    """When it was revoked; takes effect at the very next action."""


@dataclass(kw_only=True, frozen=True)
class Rule:
    """Per action pattern, what to do."""

    id: str
    """Stable id, ``rul_…``."""
    person_id: str
    """Whose rule."""
    pattern: str
    """A tool name or scope, with ``*`` wildcards (``mail.send``, ``mcp__github__*``)."""
    mode: RuleMode
    """What to do when it matches."""
    priority: int = 0
    """Higher wins; at equal priority the stricter mode wins."""
    reason: str = ""
    """Why, shown when it decides."""
    created_at: datetime
    """When it was made."""


@dataclass(kw_only=True, frozen=True)
class ApiToken:
    """A bearer token an API client authenticates with (only its hash is stored)."""

    id: str
    """Stable id, ``tok_…``."""
    person_id: str
    """Whose data it opens."""
    name: str
    """Label (``phone``, ``dashboard``)."""
    scopes: tuple[str, ...]
    """``read`` (dashboard) or ``control`` (full)."""
    created_at: datetime
    """When it was issued."""
    revoked_at: datetime | None = None
    """When it was revoked."""
    last_used_at: datetime | None = None
    """Last authenticated use."""


@dataclass(kw_only=True, frozen=True)
class AuditFilter:
    """Which audit entries a listing shows (each field that is set must hold)."""

    kind: str | None = None
    """Entries of this kind (``decision``, ``approval``, ``grant``…)."""
    tool: str | None = None
    """Entries about this tool (a decision's ``tool``)."""
    goal_id: str | None = None
    """Entries by the agents of this goal's tasks."""
    since: datetime | None = None
    """At or after this time."""
    until: datetime | None = None
    """Before this time."""


@dataclass(kw_only=True, frozen=True)
class AuditEntry:
    """One entry of the append-only, hash-chained audit log."""

    seq: int
    """Position in the chain (global, gap-free)."""
    person_id: str | None
    """Whose log (None: system)."""
    at: datetime
    """When."""
    kind: str
    """``decision``, ``credential_use``, ``effect``, ``approval``, ``grant``, ``revocation``..."""
    actor: str
    """Who did it: ``agent:<task>``, ``person``, ``token:<name>``, ``system``."""
    data: dict[str, Any]
    """What happened (never a secret value)."""
    prev_hash: str
    """Hash of the previous entry."""
    hash: str
    """SHA-256 over this entry's fields and :attr:`prev_hash`."""


@dataclass(kw_only=True, frozen=True)
class Disconnected:
    """What disconnecting an account changed."""

    connection: Connection
    """The connection, now inactive."""
    revoked: tuple[Grant, ...]
    """Grants revoked because no active connection allows their scopes any more."""
