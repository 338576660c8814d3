"""Each person's authorization state, held in memory and indexed for the sentinel.

A decision must see every revocation made before it (in this process or another), and must not
cost more than a fraction of a millisecond with a thousand grants. :class:`PolicyCache` keeps
one :class:`PersonPolicy` per person and, before every decision, asks the store whether the
person's policy version moved (one primary-key read); if it did, it applies the rows that
changed. :meth:`PersonPolicy.snapshot_for` then picks out the grants and rules that *could*
decide one action, through indexes that only ever keep more than the exact evaluation needs,
never less: a grant is left out only when a condition :func:`~steward.sentinel.grants.covers`
checks anyway cannot hold (it lacks the action's first scope; it is bound to another task or
session; its recipient, host or domain allowlist does not admit the action's first recipient,
host or domain), and a rule only when its pattern's literal prefix is not a prefix of the tool
name or a scope.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from steward.domain.authority import Connection, Grant, Lifetime, Rule
from steward.sentinel.urls import host_key, recipient_key
from steward.store.authority import PolicyRead

_ANY = ""
"""Index key of grants that do not restrict a dimension (no allowlist, not bound)."""


@dataclass(kw_only=True, frozen=True)
class PolicySnapshot:
    """What the evaluator decides on: one person's state at one instant, whole or narrowed
    to the grants and rules that could decide one action."""

    person_id: str
    """Whose state."""
    taken_at: datetime
    """The time grants are judged live at."""
    connections: tuple[Connection, ...]
    """Active connections."""
    grants: tuple[Grant, ...]
    """Grants not revoked or spent: all of them, or every one that could cover the action."""
    rules: tuple[Rule, ...]
    """Rules: all of them, or every one that could match the action."""


@dataclass(kw_only=True, frozen=True)
class ActionKeys:
    """What the indexes look an action up by."""

    scope: str
    """The first scope it needs, or ``pin:<tool>`` for a tool without scopes."""
    binds: tuple[str, ...]
    """Its task and session."""
    recipient: str | None
    """Its first recipient (lower-cased)."""
    host: str | None
    """The host of its first URL."""
    domains: tuple[str, ...]
    """Its first domain and each parent of it (``a.b.c``, ``b.c``, ``c``)."""


def _grant_keys(grant: Grant) -> Iterator[tuple[str, str]]:
    """Every (dimension, key) a grant is filed under."""
    constraints = grant.constraints
    yield from (("scope", s) for s in grant.scopes)
    if "tool" in constraints:  # covers the tool by name, even when it is called without scopes
        yield ("scope", f"pin:{constraints['tool']}")
    match grant.lifetime:
        case Lifetime.TASK:
            yield ("bind", f"task:{grant.task_id}")
        case Lifetime.SESSION:
            yield ("bind", f"session:{grant.session_id}")
        case Lifetime.ONCE if grant.task_id is not None:
            yield ("bind", f"task:{grant.task_id}")
        case _:
            yield ("bind", _ANY)
    # filed under the form the policy compares in, so a host written as a U-label, with a
    # trailing dot or in brackets is found by the action that names it
    for dimension, key, normal in (
        ("recipient", "recipients", recipient_key),
        ("host", "hosts", host_key),
        ("domain", "domains", host_key),
    ):
        if key in constraints:
            yield from ((dimension, normal(str(v)) or str(v)) for v in constraints[key])
        else:
            yield (dimension, _ANY)


def _literal_prefix(pattern: str) -> tuple[bool, str]:
    """(has a wildcard, the text before the first ``*``)."""
    head, star, _ = pattern.partition("*")
    return bool(star), head


class PersonPolicy:
    """One person's active connections, live grants and rules, with indexes kept up to date
    as changes are applied."""

    def __init__(self, person_id: str) -> None:
        self.person_id = person_id
        self.version: int | None = None
        """The policy version held (None: nothing read yet)."""
        self._connections: dict[str, Connection] = {}
        self._grants: dict[str, Grant] = {}
        self._rules: dict[str, Rule] = {}
        self._grant_index: dict[tuple[str, str], set[str]] = {}
        self._exact_rules: dict[str, set[str]] = {}
        self._wild_rules: dict[str, set[str]] = {}
        self.lock = asyncio.Lock()
        """Held while reading and applying changes, so they apply in version order."""

    # --- changes ----------------------------------------------------------------------------

    def apply(self, read: PolicyRead) -> None:
        """Take in a store read: the whole state, or the rows changed since :attr:`version`."""
        if read.person_id != self.person_id:
            raise ValueError(f"policy of {read.person_id} applied to {self.person_id}")
        if read.complete:
            self._connections.clear()
            self._grants.clear()
            self._rules.clear()
            self._grant_index.clear()
            self._exact_rules.clear()
            self._wild_rules.clear()
        for connection in read.connections:
            self._connections.pop(connection.id, None)
            if connection.active:
                self._connections[connection.id] = connection
        for grant in read.grants:
            self._drop_grant(grant.id)
            if grant.revoked_at is None and grant.used_at is None:
                self._grants[grant.id] = grant
                for key in _grant_keys(grant):
                    self._grant_index.setdefault(key, set()).add(grant.id)
        for rule in read.rules:
            self._drop_rule(rule.id)
            self._rules[rule.id] = rule
            wild, head = _literal_prefix(rule.pattern)
            (self._wild_rules if wild else self._exact_rules).setdefault(
                head if wild else rule.pattern, set()
            ).add(rule.id)
        self.version = read.version

    def spent(self, grant_id: str, version: int) -> None:
        """This process spent a one-time grant, writing ``version``: when that is the only
        change since the version held, apply it here instead of reading it back."""
        if self.version == version - 1:
            self._drop_grant(grant_id)
            self.version = version

    def _drop_grant(self, grant_id: str) -> None:
        old = self._grants.pop(grant_id, None)
        if old is None:
            return
        for key in _grant_keys(old):
            ids = self._grant_index.get(key)
            if ids is not None:
                ids.discard(grant_id)
                if not ids:
                    del self._grant_index[key]

    def _drop_rule(self, rule_id: str) -> None:
        old = self._rules.pop(rule_id, None)
        if old is None:
            return
        wild, head = _literal_prefix(old.pattern)
        index = self._wild_rules if wild else self._exact_rules
        key = head if wild else old.pattern
        index[key].discard(rule_id)
        if not index[key]:
            del index[key]

    # --- reading ----------------------------------------------------------------------------

    def whole(self, now: datetime) -> PolicySnapshot:
        """Everything held, unnarrowed."""
        return PolicySnapshot(
            person_id=self.person_id,
            taken_at=now,
            connections=tuple(self._connections.values()),
            grants=tuple(self._grants.values()),
            rules=tuple(self._rules.values()),
        )

    def snapshot_for(self, keys: ActionKeys, names: Iterable[str], now: datetime) -> PolicySnapshot:
        """The active connections, and the grants and rules that could decide an action with
        these keys, whose tool name and scopes are ``names``."""
        return PolicySnapshot(
            person_id=self.person_id,
            taken_at=now,
            connections=tuple(self._connections.values()),
            grants=tuple(self._grants[i] for i in self._candidate_grants(keys)),
            rules=tuple(self._rules[i] for i in self._candidate_rules(names)),
        )

    def _candidate_grants(self, keys: ActionKeys) -> set[str]:
        index = self._grant_index
        empty: set[str] = set()

        def admitted(dimension: str, wanted: Iterable[str | None]) -> set[str]:
            found = set(index.get((dimension, _ANY), empty))
            for key in wanted:
                if key:
                    found |= index.get((dimension, key), empty)
            return found

        by_scope = index.get(("scope", keys.scope), empty)
        if not by_scope:
            return set()
        dimensions = [
            by_scope,
            admitted("bind", keys.binds),
            admitted("recipient", [keys.recipient]),
            admitted("host", [keys.host]),
            admitted("domain", keys.domains),
        ]
        dimensions.sort(key=len)
        return set(dimensions[0]).intersection(*dimensions[1:])

    def _candidate_rules(self, names: Iterable[str]) -> set[str]:
        found: set[str] = set()
        for name in names:
            found |= self._exact_rules.get(name, set())
            for end in range(len(name) + 1):
                hit = self._wild_rules.get(name[:end])
                if hit:
                    found |= hit
        return found


class PolicyReader(Protocol):
    """What the cache needs of the store's authority repository."""

    async def policy_read(self, person_id: str, *, known: int | None, now: datetime) -> Any: ...


class PolicySource(Protocol):
    """What the cache needs of the store."""

    @property
    def authority(self) -> PolicyReader: ...


class PolicyCache:
    """Each person's :class:`PersonPolicy`, brought up to date before it is used."""

    def __init__(self, store: PolicySource) -> None:
        self.store = store
        self._people: dict[str, PersonPolicy] = {}

    async def current(self, person_id: str, *, now: datetime) -> PersonPolicy:
        """The person's policy as of now: every change committed before this call applied."""
        policy = self._people.get(person_id)
        if policy is None:
            policy = self._people.setdefault(person_id, PersonPolicy(person_id))
        async with policy.lock:
            policy.apply(
                await self.store.authority.policy_read(person_id, known=policy.version, now=now)
            )
        return policy

    def forget(self, person_id: str) -> None:
        """Drop what is held for a person (read afresh next time)."""
        self._people.pop(person_id, None)
