"""Authorization state: connected accounts, grants and action rules, and the policy snapshot the
sentinel decides on.

Every query names the person it acts for; an id of another person's object is
:class:`~steward.errors.NotFound`, never someone else's data. Scopes are exact strings
(``email.read`` never implies ``email.send``), and a grant can never give more than the person's
active connections allow: :meth:`AuthorityQueries.add_grant` refuses it, and disconnecting an
account revokes the grants it alone backed.

Every write of a person's connections, grants or rules bumps the person's policy version in
its own transaction and stamps the rows it writes with it. The sentinel holds each person's
policy in memory and checks it with :meth:`AuthorityQueries.policy_read` before every
decision: one primary-key read when nothing changed, the changed rows when something did — so
a revocation bites at the very next action, inside a running task too, without re-reading a
thousand grants each time.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Row,
    String,
    bindparam,
    func,
    or_,
    select,
    update,
)
from sqlalchemy import Connection as SqlConnection

from steward.domain.approval import Approval
from steward.domain.authority import Connection, Grant, Lifetime, Rule, RuleMode
from steward.domain.roles import DataClass
from steward.errors import NotFound, UsageError
from steward.store import rows
from steward.store.audit import append_in
from steward.store.backend import Backend
from steward.store.inbox import decide_in
from steward.store.schema import (
    connections,
    grant_uses,
    grants,
    persons,
    policy_versions,
    rules,
    tasks,
)
from steward.store.tasks import TaskQueries

SCOPE = re.compile(r"^[A-Za-z0-9_.:/-]{1,200}$")
"""A scope: exact, no wildcards (``email.send``, ``mcp:github.issues.read``)."""
RULE_PATTERN = re.compile(r"^[A-Za-z0-9_.:/*-]{1,200}$")
"""A rule pattern: a tool name or scope where ``*`` matches anything. No ``%``, ``?``, ``[`` or
backslash, so the SQL prefilter (SQLite ``GLOB``; PostgreSQL ``LIKE`` with ``*`` → ``%``) can
only match more, never less, than the exact test."""
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
URL_KEY = re.compile(r"^https?://[^/?#\s]+:[0-9]{1,5}/[^#\s]*$")
"""A URL as a lasting grant names it (:func:`steward.sentinel.arguments.url_key`)."""
CONSTRAINT_KEYS = frozenset(
    {
        "tool",
        "recipients",
        "domains",
        "hosts",
        "path_prefix",
        "urls",
        "same",
        "max_amount",
        "period_amount",
        "period_seconds",
        "data",
    }
)
"""Constraints the evaluator enforces. Anything else is refused rather than silently ignored."""
_LIST_CONSTRAINTS = ("recipients", "domains", "hosts", "data")


@dataclass(kw_only=True, frozen=True)
class PolicyRead:
    """One person's authorization state, or what changed in it, at a policy version."""

    person_id: str
    """Whose state."""
    version: int
    """The person's policy version the read is complete up to (0 before any write)."""
    complete: bool
    """True: the whole live state, replacing anything held. False: only the rows written
    since the version asked about (none when nothing changed), revoked, spent and
    inactive ones included."""
    connections: tuple[Connection, ...] = ()
    """Connections (complete: the active ones)."""
    grants: tuple[Grant, ...] = ()
    """Grants (complete: those not revoked, spent or expired)."""
    rules: tuple[Rule, ...] = ()
    """Rules."""


@dataclass(kw_only=True, frozen=True)
class Disconnected:
    """What disconnecting an account changed."""

    connection: Connection
    """The connection, now inactive."""
    revoked: tuple[Grant, ...]
    """Grants revoked because no active connection allows their scopes any more."""


class AuthorityQueries(TaskQueries):
    # --- connections --------------------------------------------------------------------

    async def add_connection(self, connection: Connection) -> Connection:
        """Record a connected account and the scopes it exposes."""
        for scope in (*connection.scopes, *connection.hosts):
            if not SCOPE.match(scope):
                raise UsageError(f"connection {connection.name!r}: bad scope or host {scope!r}")
        values = {
            "id": connection.id,
            "person_id": connection.person_id,
            "kind": connection.kind,
            "name": connection.name,
            "scopes": rows.dump(list(connection.scopes)),
            "hosts": rows.dump([h.lower() for h in connection.hosts]),
            "active": connection.active,
            "created_at": rows.ts(connection.created_at),
        }

        def op(conn: SqlConnection) -> Connection:
            _require_person(conn, connection.person_id)
            version = _bump(conn, self.backend, connection.person_id)
            conn.execute(connections.insert().values({**values, "version": version}))
            added = _get_connection(conn, connection.id, connection.person_id)
            _audit(
                self,
                conn,
                added.person_id,
                "connection",
                "person",
                now=connection.created_at,
                connection=added.id,
                name=added.name,
                scopes=list(added.scopes),
                active=True,
            )
            return added

        return await self.backend.write(op)

    async def list_connections(self, person_id: str) -> list[Connection]:
        query = (
            select(connections)
            .where(connections.c.person_id == person_id)
            .order_by(connections.c.created_at, connections.c.id)
        )
        return await self.backend.read(lambda conn: [_connection(r) for r in conn.execute(query)])

    async def disconnect(
        self, connection_id: str, *, person_id: str, now: datetime
    ) -> Disconnected:
        """Deactivate a connection and revoke (at ``now``) every unrevoked grant whose scopes
        the remaining active connections no longer all allow: reconnecting later does not
        bring old authority back."""
        now_f = rows.ts(now)

        def op(conn: SqlConnection) -> Disconnected:
            _get_connection(conn, connection_id, person_id)
            version = _bump(conn, self.backend, person_id)
            conn.execute(
                update(connections)
                .where(connections.c.id == connection_id)
                .values(active=False, version=version)
            )
            offered = _offered_scopes(conn, person_id)
            revoked = []
            for row in conn.execute(
                select(grants).where(grants.c.person_id == person_id, grants.c.revoked_at.is_(None))
            ):
                grant = _grant(row)
                if not set(grant.scopes) <= offered:
                    revoked.append(grant.id)
            if revoked:
                conn.execute(
                    update(grants)
                    .where(grants.c.id.in_(revoked))
                    .values(revoked_at=now_f, version=version)
                )
            _audit(
                self,
                conn,
                person_id,
                "revocation",
                "person",
                now=now,
                connection=connection_id,
                grants=revoked,
            )
            return Disconnected(
                connection=_get_connection(conn, connection_id, person_id),
                revoked=tuple(_get_grant(conn, grant_id, person_id) for grant_id in revoked),
            )

        return await self.backend.write(op)

    # --- grants -------------------------------------------------------------------------

    async def add_grant(self, grant: Grant) -> Grant:
        """Record a grant. Refused (:class:`UsageError`) if its scopes go beyond the person's
        active connections, its constraints are not ones the sentinel enforces, or its
        lifetime's fields do not fit; returned as stored (allowlists lower-cased)."""
        return await self.backend.write(self._grant_writer(grant))

    async def approve_granting(
        self, approval_id: str, grant: Grant, *, decided_by: str, now: datetime, note: str | None
    ) -> Approval:
        """Approve a pending approval and record the lasting grant made from it, in one
        transaction: either both happen or neither (refused as :meth:`add_grant` and
        :meth:`decide_approval` refuse)."""
        write_grant = self._grant_writer(grant)

        def op(conn: SqlConnection) -> Approval:
            write_grant(conn)
            return decide_in(
                conn,
                self.backend,
                approval_id,
                approve=True,
                decided_by=decided_by,
                now=now,
                note=note,
            )

        return await self.backend.write(op)

    def _grant_writer(self, grant: Grant) -> Callable[[SqlConnection], Grant]:
        """The write that records ``grant``, once it passed the checks that need no data."""
        constraints = normalize_constraints(grant.constraints)
        _check_lifetime(grant)
        for scope in grant.scopes:
            if not SCOPE.match(scope):
                raise UsageError(f"grant: bad scope {scope!r} (exact names, no wildcards)")
        if not grant.scopes and "tool" not in constraints:
            raise UsageError("grant: name the scopes it gives, or the one tool it allows")
        values = {
            "id": grant.id,
            "person_id": grant.person_id,
            "scopes": rows.dump(sorted(set(grant.scopes))),
            "lifetime": grant.lifetime.value,
            "constraints": rows.dump(constraints),
            "task_id": grant.task_id,
            "session_id": grant.session_id,
            "expires_at": rows.ts_opt(grant.expires_at),
            "used_at": None,
            "issued_by": grant.issued_by,
            "reason": grant.reason,
            "created_at": rows.ts(grant.created_at),
            "revoked_at": None,
        }

        def op(conn: SqlConnection) -> Grant:
            _require_person(conn, grant.person_id)
            beyond = sorted(set(grant.scopes) - _offered_scopes(conn, grant.person_id))
            if beyond:
                raise UsageError(
                    f"grant: no active connection allows {', '.join(beyond)}; a grant can never "
                    "give more than a connection allows"
                )
            if grant.task_id is not None:
                owner = conn.execute(
                    select(tasks.c.person_id).where(tasks.c.id == grant.task_id)
                ).scalar()
                if owner != grant.person_id:
                    raise NotFound("task", grant.task_id)
            version = _bump(conn, self.backend, grant.person_id)
            conn.execute(grants.insert().values({**values, "version": version}))
            added = _get_grant(conn, grant.id, grant.person_id)
            _audit(
                self,
                conn,
                added.person_id,
                "grant",
                added.issued_by,
                now=added.created_at,
                grant=added.id,
                scopes=list(added.scopes),
                lifetime=added.lifetime.value,
                constraints=added.constraints,
                task=added.task_id,
                reason=added.reason,
            )
            return added

        return op

    async def get_grant(self, grant_id: str, *, person_id: str) -> Grant:
        return await self.backend.read(lambda conn: _get_grant(conn, grant_id, person_id))

    async def list_grants(self, person_id: str, *, live_at: datetime | None = None) -> list[Grant]:
        """The person's grants, oldest first; with ``live_at`` only those not revoked, spent or
        expired at that time."""
        query = select(grants).where(grants.c.person_id == person_id)
        if live_at is not None:
            query = query.where(*_live(rows.ts(live_at)))
        query = query.order_by(grants.c.created_at, grants.c.id)
        return await self.backend.read(lambda conn: [_grant(r) for r in conn.execute(query)])

    async def revoke_grant(
        self, grant_id: str, *, person_id: str, now: datetime, actor: str = "person"
    ) -> Grant:
        """Revoke a grant (idempotent: a revoked grant keeps its first revocation time)."""

        def op(conn: SqlConnection) -> Grant:
            _get_grant(conn, grant_id, person_id)
            version = _bump(conn, self.backend, person_id)
            changed = conn.execute(
                update(grants)
                .where(grants.c.id == grant_id, grants.c.revoked_at.is_(None))
                .values(revoked_at=rows.ts(now), version=version)
                .returning(grants.c.id)
            ).first()
            if changed is not None:
                _audit(self, conn, person_id, "revocation", actor, now=now, grant=grant_id)
            return _get_grant(conn, grant_id, person_id)

        return await self.backend.write(op)

    async def spend_grant(self, grant_id: str, *, now: datetime) -> int | None:
        """Mark a ``once`` grant used, atomically, and return the policy version that wrote it;
        None if it was already spent or revoked (two actions racing for one grant: exactly one
        wins)."""
        statement = (
            update(grants)
            .where(
                grants.c.id == grant_id,
                grants.c.lifetime == Lifetime.ONCE.value,
                grants.c.used_at.is_(None),
                grants.c.revoked_at.is_(None),
            )
            .values(used_at=rows.ts(now))
            .returning(grants.c.person_id)
        )

        def op(conn: SqlConnection) -> int | None:
            person_id = conn.execute(statement).scalar()
            if person_id is None:
                return None
            version = _bump(conn, self.backend, person_id)
            conn.execute(update(grants).where(grants.c.id == grant_id).values(version=version))
            return version

        return await self.backend.write(op)

    async def charge_grant(
        self,
        grant_id: str,
        *,
        person_id: str,
        amount: float,
        task_id: str | None,
        now: datetime,
    ) -> float | None:
        """Count ``amount`` against the grant's per-period ceiling, atomically: the total used
        in the period ending now, this amount included, or None when it would go over the
        ceiling (nothing is counted then) or the grant is no longer live. The person's
        policy-version row is locked first, so two actions racing for the same allowance are
        counted one after the other."""
        now_f = rows.ts(now)

        def op(conn: SqlConnection) -> float | None:
            _ensure_version_row(conn, self.backend, person_id)
            conn.execute(
                self.backend.lock_for_update(
                    select(policy_versions.c.person_id).where(
                        policy_versions.c.person_id == person_id
                    )
                )
            )
            grant = _get_grant(conn, grant_id, person_id)
            ceiling = grant.constraints.get("period_amount")
            window = grant.constraints.get("period_seconds")
            if grant.revoked_at is not None or ceiling is None or window is None:
                return None
            used = conn.execute(
                select(func.coalesce(func.sum(grant_uses.c.amount), 0.0)).where(
                    grant_uses.c.grant_id == grant_id, grant_uses.c.at > now_f - float(window)
                )
            ).scalar_one()
            total = float(used) + amount
            if total > ceiling:
                return None
            conn.execute(
                grant_uses.insert().values(
                    grant_id=grant_id, task_id=task_id, amount=amount, at=now_f
                )
            )
            return total

        return await self.backend.write(op)

    # --- rules --------------------------------------------------------------------------

    async def add_rule(self, rule: Rule) -> Rule:
        if not RULE_PATTERN.match(rule.pattern):
            raise UsageError(
                f"rule: bad pattern {rule.pattern!r}: a tool name or scope, `*` as wildcard"
            )
        values = {
            "id": rule.id,
            "person_id": rule.person_id,
            "pattern": rule.pattern,
            "mode": RuleMode(rule.mode).value,
            "priority": rule.priority,
            "reason": rule.reason,
            "created_at": rows.ts(rule.created_at),
        }

        def op(conn: SqlConnection) -> Rule:
            _require_person(conn, rule.person_id)
            version = _bump(conn, self.backend, rule.person_id)
            conn.execute(rules.insert().values({**values, "version": version}))
            added = _get_rule(conn, rule.id, rule.person_id)
            _audit(
                self,
                conn,
                added.person_id,
                "rule",
                "person",
                now=added.created_at,
                rule=added.id,
                pattern=added.pattern,
                mode=added.mode.value,
                priority=added.priority,
            )
            return added

        return await self.backend.write(op)

    async def list_rules(self, person_id: str) -> list[Rule]:
        """The person's rules, highest priority first."""
        query = (
            select(rules)
            .where(rules.c.person_id == person_id)
            .order_by(rules.c.priority.desc(), rules.c.created_at, rules.c.id)
        )
        return await self.backend.read(lambda conn: [_rule(r) for r in conn.execute(query)])

    async def delete_rule(self, rule_id: str, *, person_id: str, now: datetime) -> None:
        def op(conn: SqlConnection) -> None:
            rule = _get_rule(conn, rule_id, person_id)
            _bump(conn, self.backend, person_id, reset=True)  # a deleted row cannot be fetched
            conn.execute(rules.delete().where(rules.c.id == rule_id))
            _audit(
                self,
                conn,
                person_id,
                "rule",
                "person",
                now=now,
                rule=rule_id,
                pattern=rule.pattern,
                deleted=True,
            )

        await self.backend.write(op)

    # --- the sentinel's read ------------------------------------------------------------

    async def policy_read(self, person_id: str, *, known: int | None, now: datetime) -> PolicyRead:
        """What changed in the person's authority since version ``known``.

        The sentinel's hot path: when nothing changed, one primary-key read (a statement
        compiled once, on the driver's cursor, in autocommit so PostgreSQL needs one round
        trip). Otherwise the rows written since ``known``, dead ones included so a holder can
        drop them; or, with ``known`` None or after a rule was deleted, every active
        connection, unrevoked, unspent and unexpired grant and rule.

        Writers serialize on the person's version row and bump it in their transaction, so
        versions commit in order: everything at or below the version read first is visible to
        the statements after it, which may also see later rows (harmless: the next read
        fetches them again)."""
        backend = self.backend
        head = backend.prepared(
            "policy-version",
            lambda: select(policy_versions.c.version, policy_versions.c.reset_version).where(
                policy_versions.c.person_id == bindparam("person_id", type_=String)
            ),
        )
        autocommit = backend.name == "postgresql"

        def op(conn: SqlConnection) -> PolicyRead:
            if autocommit:
                conn.execution_options(isolation_level="AUTOCOMMIT")
            cursor = head.run(conn, {"person_id": person_id})
            try:
                found = cursor.fetchone()
            finally:
                cursor.close()
            version, reset = (0, 0) if found is None else (int(found[0]), int(found[1]))
            if known is not None and version == known:
                return PolicyRead(person_id=person_id, version=version, complete=False)
            complete = known is None or reset > known
            picks: tuple[list[ColumnElement[bool]], ...]
            if complete:
                picks = ([connections.c.active.is_(True)], _live(rows.ts(now)), [])
            else:
                picks = tuple([table.c.version > known] for table in (connections, grants, rules))
            return PolicyRead(
                person_id=person_id,
                version=version,
                complete=complete,
                connections=tuple(
                    _connection(r)
                    for r in conn.execute(
                        select(connections).where(connections.c.person_id == person_id, *picks[0])
                    )
                ),
                grants=tuple(
                    _grant(r)
                    for r in conn.execute(
                        select(grants).where(grants.c.person_id == person_id, *picks[1])
                    )
                ),
                rules=tuple(
                    _rule(r)
                    for r in conn.execute(
                        select(rules).where(rules.c.person_id == person_id, *picks[2])
                    )
                ),
            )

        return await backend.read(op)


# --- validation -----------------------------------------------------------------------------


def normalize_constraints(constraints: dict[str, Any]) -> dict[str, Any]:
    """Constraints in the canonical form the sentinel relies on, or
    :class:`UsageError` naming what is wrong."""
    unknown = set(constraints) - CONSTRAINT_KEYS
    if unknown:
        raise UsageError(
            f"grant: unknown constraints {sorted(unknown)}; use {sorted(CONSTRAINT_KEYS)}"
        )
    out: dict[str, Any] = {}
    for key in _LIST_CONSTRAINTS:
        if key in constraints:
            values = constraints[key]
            if (
                not isinstance(values, list | tuple)
                or not values
                or not all(isinstance(v, str) and v.strip() for v in values)
            ):
                raise UsageError(f"grant: {key} must be a non-empty list of strings")
            out[key] = sorted({v.strip().lower() for v in values})
    unknown_data = sorted(set(out.get("data", ())) - {str(kind) for kind in DataClass})
    if unknown_data:
        raise UsageError(
            f"grant: unknown data kinds {unknown_data}; use {sorted(str(k) for k in DataClass)}"
        )
    if "tool" in constraints:
        tool = constraints["tool"]
        if not isinstance(tool, str) or not TOOL_NAME.match(tool):
            raise UsageError(f"grant: tool must be a tool name, got {tool!r}")
        out["tool"] = tool
    if "urls" in constraints:
        # exact URLs as a lasting approval names them (url_key): their paths keep their case
        urls = constraints["urls"]
        if not isinstance(urls, list | tuple) or not urls:
            raise UsageError("grant: urls must be a non-empty list of URLs")
        if not all(isinstance(u, str) and URL_KEY.match(u) for u in urls):
            raise UsageError("grant: urls must be written scheme://host:port/path")
        out["urls"] = sorted(set(urls))
    if "same" in constraints:
        same = constraints["same"]
        if not isinstance(same, dict) or not all(isinstance(k, str) for k in same):
            raise UsageError("grant: same must map argument names to their exact values")
        out["same"] = dict(same)
    if "path_prefix" in constraints:
        prefix = constraints["path_prefix"]
        if not isinstance(prefix, str) or not prefix.startswith("/"):
            raise UsageError(f"grant: path_prefix must start with '/', got {prefix!r}")
        out["path_prefix"] = prefix
    if "max_amount" in constraints:
        amount = constraints["max_amount"]
        if (
            isinstance(amount, bool)
            or not isinstance(amount, int | float)
            or not math.isfinite(amount)
            or amount < 0
        ):
            raise UsageError(f"grant: max_amount must be a number >= 0, got {amount!r}")
        out["max_amount"] = amount
    if ("period_amount" in constraints) != ("period_seconds" in constraints):
        raise UsageError("grant: period_amount and period_seconds go together")
    for key, least in (("period_amount", 0.0), ("period_seconds", 1.0)):
        if key in constraints:
            value = constraints[key]
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value < least
            ):
                raise UsageError(f"grant: {key} must be a number >= {least:g}, got {value!r}")
            out[key] = value
    return out


def _check_lifetime(grant: Grant) -> None:
    """Each lifetime uses exactly its own fields, so a grant means what it looks like."""
    lifetime = Lifetime(grant.lifetime)
    if grant.used_at is not None or grant.revoked_at is not None:
        raise UsageError("grant: a new grant cannot already be used or revoked")
    if lifetime is Lifetime.TASK and grant.task_id is None:
        raise UsageError("grant: a 'task' grant needs task_id")
    if lifetime not in (Lifetime.TASK, Lifetime.ONCE) and grant.task_id is not None:
        raise UsageError(f"grant: a {lifetime.value!r} grant takes no task_id")
    if (lifetime is Lifetime.SESSION) != (grant.session_id is not None):
        raise UsageError("grant: session_id is for (and needed by) 'session' grants only")
    if (lifetime is Lifetime.UNTIL) != (grant.expires_at is not None):
        raise UsageError("grant: expires_at is for (and needed by) 'until' grants only")


# --- SQL pieces -----------------------------------------------------------------------------


def _live(now_f: float) -> list[ColumnElement[bool]]:
    """Not revoked, not spent (only ``once`` grants are ever spent), not expired."""
    return [
        grants.c.revoked_at.is_(None),
        grants.c.used_at.is_(None),
        or_(grants.c.expires_at.is_(None), grants.c.expires_at > now_f),
    ]


def _offered_scopes(conn: SqlConnection, person_id: str) -> set[str]:
    offered: set[str] = set()
    for (scopes,) in conn.execute(
        select(connections.c.scopes).where(
            connections.c.person_id == person_id, connections.c.active.is_(True)
        )
    ):
        offered.update(rows.load(scopes))
    return offered


def _bump(conn: SqlConnection, backend: Backend, person_id: str, *, reset: bool = False) -> int:
    """The person's next policy version, taken in the writer's transaction. The version row's
    lock serializes the person's writers until commit, so versions commit in order."""
    _ensure_version_row(conn, backend, person_id)
    after = policy_versions.c.version + 1
    changes: dict[Any, Any] = {policy_versions.c.version: after}
    if reset:
        changes[policy_versions.c.reset_version] = after
    version: int = conn.execute(
        update(policy_versions)
        .where(policy_versions.c.person_id == person_id)
        .values(changes)
        .returning(policy_versions.c.version)
    ).scalar_one()
    return version


def _ensure_version_row(conn: SqlConnection, backend: Backend, person_id: str) -> None:
    conn.execute(
        backend.insert_ignore(
            policy_versions, {"person_id": person_id, "version": 0, "reset_version": 0}
        )
    )


def _require_person(conn: SqlConnection, person_id: str) -> None:
    if conn.execute(select(persons.c.id).where(persons.c.id == person_id)).first() is None:
        raise NotFound("person", person_id)


def _get_connection(conn: SqlConnection, connection_id: str, person_id: str) -> Connection:
    row = conn.execute(
        select(connections).where(
            connections.c.id == connection_id, connections.c.person_id == person_id
        )
    ).first()
    if row is None:
        raise NotFound("connection", connection_id)
    return _connection(row)


def _get_grant(conn: SqlConnection, grant_id: str, person_id: str) -> Grant:
    row = conn.execute(
        select(grants).where(grants.c.id == grant_id, grants.c.person_id == person_id)
    ).first()
    if row is None:
        raise NotFound("grant", grant_id)
    return _grant(row)


def _get_rule(conn: SqlConnection, rule_id: str, person_id: str) -> Rule:
    row = conn.execute(
        select(rules).where(rules.c.id == rule_id, rules.c.person_id == person_id)
    ).first()
    if row is None:
        raise NotFound("rule", rule_id)
    return _rule(row)


# --- rows -----------------------------------------------------------------------------------


def _connection(row: Row[Any] | Mapping[str, Any]) -> Connection:
    m = row._mapping if isinstance(row, Row) else row
    return Connection(
        id=m["id"],
        person_id=m["person_id"],
        kind=m["kind"],
        name=m["name"],
        scopes=tuple(rows.load(m["scopes"])),
        hosts=tuple(rows.load(m["hosts"])),
        active=bool(m["active"]),
        created_at=rows.dt(m["created_at"]),
    )


def _grant(row: Row[Any] | Mapping[str, Any]) -> Grant:
    m = row._mapping if isinstance(row, Row) else row
    return Grant(
        id=m["id"],
        person_id=m["person_id"],
        scopes=tuple(rows.load(m["scopes"])),
        lifetime=Lifetime(m["lifetime"]),
        constraints=rows.load(m["constraints"]),
        task_id=m["task_id"],
        session_id=m["session_id"],
        expires_at=rows.dt_opt(m["expires_at"]),
        used_at=rows.dt_opt(m["used_at"]),
        issued_by=m["issued_by"],
        reason=m["reason"],
        created_at=rows.dt(m["created_at"]),
        revoked_at=rows.dt_opt(m["revoked_at"]),
    )


def _rule(row: Row[Any] | Mapping[str, Any]) -> Rule:
    m = row._mapping if isinstance(row, Row) else row
    return Rule(
        id=m["id"],
        person_id=m["person_id"],
        pattern=m["pattern"],
        mode=RuleMode(m["mode"]),
        priority=m["priority"],
        reason=m["reason"],
        created_at=rows.dt(m["created_at"]),
    )


def _audit(
    queries: AuthorityQueries,
    conn: SqlConnection,
    person_id: str,
    kind: str,
    actor: str,
    *,
    now: datetime,
    **data: Any,
) -> None:
    """Every change of authority is in the audit log, committed with the change."""
    append_in(
        conn, queries.backend, person_id=person_id, kind=kind, actor=actor, data=data, now=now
    )
