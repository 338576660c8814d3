"""Authorization state: connected accounts, grants and action rules, and the policy snapshot the
sentinel decides on.

Every query names the person it acts for; an id of another person's object is
:class:`~steward.errors.NotFound`, never someone else's data. Scopes are exact strings
(``email.read`` never implies ``email.send``), and a grant can never give more than the person's
active connections allow: :meth:`AuthorityQueries.add_grant` refuses it, and disconnecting an
account revokes the grants it alone backed.

The sentinel reads a fresh :class:`PolicySnapshot` for every decision, so a revocation bites at
the very next action. Decoding a thousand grants costs far more than a millisecond in Python, so
:meth:`AuthorityQueries.policy_snapshot` takes an :class:`ActionFilter` and lets SQL drop the
rows that *cannot* decide that action (grants without its scopes, of another task or session,
or naming other recipients, hosts or domains; rules whose pattern matches neither the tool nor
its scopes), in statements of a fixed shape compiled once. The filters only ever drop rows the
evaluator would ignore: they search the canonical JSON this module writes (lower-cased
allowlists, validated keys and patterns), and each tests a condition the exact evaluation in
Python requires anyway.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    CompoundSelect,
    Float,
    Integer,
    Row,
    String,
    Table,
    Text,
    and_,
    bindparam,
    cast,
    func,
    literal,
    literal_column,
    not_,
    null,
    or_,
    select,
    union_all,
    update,
)
from sqlalchemy import Connection as SqlConnection

from steward.domain.authority import Connection, Grant, Lifetime, Rule, RuleMode
from steward.errors import NotFound, UsageError
from steward.store import rows
from steward.store.audit import append_in
from steward.store.schema import connections, grants, persons, rules, tasks
from steward.store.tasks import TaskQueries

SCOPE = re.compile(r"^[A-Za-z0-9_.:/-]{1,200}$")
"""A scope: exact, no wildcards (``email.send``, ``mcp:github.issues.read``)."""
RULE_PATTERN = re.compile(r"^[A-Za-z0-9_.:/*-]{1,200}$")
"""A rule pattern: a tool name or scope where ``*`` matches anything. No ``%``, ``?``, ``[`` or
backslash, so the SQL prefilter (SQLite ``GLOB``; PostgreSQL ``LIKE`` with ``*`` → ``%``) can
only match more, never less, than the exact test."""
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
CONSTRAINT_KEYS = frozenset({"tool", "recipients", "domains", "hosts", "path_prefix", "max_amount"})
"""Constraints the evaluator enforces. Anything else is refused rather than silently ignored."""
_LIST_CONSTRAINTS = ("recipients", "domains", "hosts")


@dataclass(kw_only=True, frozen=True)
class ActionFilter:
    """What one proposed action is, so a snapshot can leave out what cannot decide it."""

    tool: str
    """Tool name."""
    scopes: tuple[str, ...]
    """Scopes the tool needs."""
    task_id: str
    """The proposing task (``once``/``task`` grants of other tasks cannot cover it)."""
    session_id: str | None
    """The conversation it runs in (``session`` grants of others cannot cover it)."""
    recipients: tuple[str, ...]
    """Its recipients, lower-cased; grants with a recipient allowlist must name them all."""
    hosts: tuple[str, ...]
    """Hosts of its URLs, lower-cased; grants with a host allowlist must name them all."""
    domains: tuple[str, ...]
    """Domains of its recipients and URLs; grants with a domain allowlist must name each one
    or a parent of it."""


@dataclass(kw_only=True, frozen=True)
class PolicySnapshot:
    """The authorization state of one person at one instant, read in one transaction."""

    person_id: str
    """Whose state."""
    taken_at: datetime
    """The time grants were judged live at."""
    connections: tuple[Connection, ...]
    """Active connections."""
    grants: tuple[Grant, ...]
    """Live grants (not revoked, not spent, not expired): all of them, or with a filter at
    least every one that could cover the filtered action."""
    rules: tuple[Rule, ...]
    """Rules: all of them, or with a filter at least every one that could match the action."""
    filtered_for: str | None = None
    """The tool the snapshot was narrowed to, or None for the complete state."""


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
            conn.execute(connections.insert().values(values))
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
            conn.execute(
                update(connections).where(connections.c.id == connection_id).values(active=False)
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
                    update(grants).where(grants.c.id.in_(revoked)).values(revoked_at=now_f)
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
            conn.execute(grants.insert().values(values))
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

        return await self.backend.write(op)

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
            changed = conn.execute(
                update(grants)
                .where(grants.c.id == grant_id, grants.c.revoked_at.is_(None))
                .values(revoked_at=rows.ts(now))
                .returning(grants.c.id)
            ).first()
            if changed is not None:
                _audit(self, conn, person_id, "revocation", actor, now=now, grant=grant_id)
            return _get_grant(conn, grant_id, person_id)

        return await self.backend.write(op)

    async def spend_grant(self, grant_id: str, *, now: datetime) -> bool:
        """Mark a ``once`` grant used, atomically: False if it was already spent or revoked (two
        actions racing for one grant: exactly one wins)."""
        statement = (
            update(grants)
            .where(
                grants.c.id == grant_id,
                grants.c.lifetime == Lifetime.ONCE.value,
                grants.c.used_at.is_(None),
                grants.c.revoked_at.is_(None),
            )
            .values(used_at=rows.ts(now))
            .returning(grants.c.id)
        )
        return await self.backend.write(lambda conn: conn.execute(statement).first() is not None)

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
            conn.execute(rules.insert().values(values))
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

    async def policy_snapshot(
        self, person_id: str, *, now: datetime, action: ActionFilter | None = None
    ) -> PolicySnapshot:
        """Active connections, live grants and rules of one person, read by one statement (so
        one consistent snapshot on either database). With ``action``, grants and rules that
        cannot decide that action are left out in SQL."""
        # The sentinel's hot path: a statement of a fixed shape, compiled once per process and
        # run on the driver's cursor (building and compiling it per call costs ~2 ms), in
        # autocommit so PostgreSQL needs one round trip and no COMMIT.
        backend = self.backend
        sql = _Sql(backend.name)
        scoped = action is not None and bool(action.scopes)
        narrow_rules = action is not None and len(action.scopes) <= _RULE_SCOPE_SLOTS
        shape = "whole" if action is None else f"{scoped}-{narrow_rules}"
        statement = backend.prepared(
            f"policy-snapshot-{shape}",
            lambda: _snapshot_statement(sql, action is not None, scoped, narrow_rules),
        )
        params: dict[str, Any] = {"person_id": person_id, "now": rows.ts(now)}
        if action is not None:
            params |= _narrowing(action)
        autocommit = backend.name == "postgresql"

        def op(conn: SqlConnection) -> PolicySnapshot:
            if autocommit:
                conn.execution_options(isolation_level="AUTOCOMMIT")
            cursor = statement.run(conn, params)
            try:
                found = cursor.fetchall()
            finally:
                cursor.close()
            parts: tuple[list[Any], ...] = ([], [], [])
            for row in found:
                _DECODE[row[0]](row, parts)
            return PolicySnapshot(
                person_id=person_id,
                taken_at=now,
                connections=tuple(parts[0]),
                grants=tuple(parts[1]),
                rules=tuple(parts[2]),
                filtered_for=None if action is None else action.tool,
            )

        return await backend.read(op)


# --- validation -----------------------------------------------------------------------------


def normalize_constraints(constraints: dict[str, Any]) -> dict[str, Any]:
    """Constraints in the canonical form the sentinel and the SQL prefilter rely on, or
    :class:`UsageError` naming what is wrong."""
    unknown = set(constraints) - CONSTRAINT_KEYS
    if unknown & {"period_amount", "period_seconds"}:
        raise UsageError(
            "grant: per-period amount ceilings are not enforced yet; use max_amount (per action)"
        )
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
    if "tool" in constraints:
        tool = constraints["tool"]
        if not isinstance(tool, str) or not TOOL_NAME.match(tool):
            raise UsageError(f"grant: tool must be a tool name, got {tool!r}")
        out["tool"] = tool
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


_RULE_SCOPE_SLOTS = 3
"""Scopes a tool may need for rules to be narrowed in SQL; tools needing more read all rules."""
_DOMAIN_SLOTS = 4
"""Parents of a domain the grant prefilter tries; deeper domains skip that narrowing."""
_CONNECTION_KEYS = tuple(connections.c.keys())
_GRANT_KEYS = tuple(grants.c.keys())
_RULE_KEYS = tuple(rules.c.keys())


def _quoted(value: str | None) -> str | None:
    """``value`` as it appears in the JSON this module writes (quoted, so ``"a@x.io"`` is not
    found inside ``"ba@x.io"``); None stays None (finding NULL is never true)."""
    return None if value is None else json.dumps(value)


def _narrowing(action: ActionFilter) -> dict[str, str | None]:
    """Parameters of the fixed-shape statements. Each grant condition is necessary for the
    grant to cover the action, so testing only the first value of a kind drops nothing that
    could decide it; the empty needle (found in any text) switches a condition off."""
    domain = action.domains[0] if action.domains else None
    parents = _parents(domain) if domain is not None else []
    domain_needles: list[str | None] = [_quoted(d) for d in parents]
    if len(parents) > _DOMAIN_SLOTS:
        domain_needles = [""]
    domain_needles += [None] * (_DOMAIN_SLOTS - len(domain_needles))
    scope_names: list[str | None] = [*action.scopes[:_RULE_SCOPE_SLOTS]]
    scope_names += [None] * (_RULE_SCOPE_SLOTS - len(scope_names))
    return {
        "task_id": action.task_id,
        "session_id": action.session_id,
        "scope": _quoted(action.scopes[0]) if action.scopes else None,
        "pin": f'"tool":{json.dumps(action.tool)}',
        "recipient": _quoted(action.recipients[0] if action.recipients else None),
        "host": _quoted(action.hosts[0] if action.hosts else None),
        **{f"domain{i}": needle for i, needle in enumerate(domain_needles)},
        "tool": action.tool,
        **{f"scope{i}": name for i, name in enumerate(scope_names)},
    }


def _parents(domain: str) -> list[str]:
    """``a.b.c`` → ``a.b.c``, ``b.c``, ``c``: the allowlist entries that admit it."""
    parts = domain.split(".")
    return [".".join(parts[i:]) for i in range(len(parts))]


class _Sql:
    """The two dialects' spellings of substring search and glob matching (``instr`` and
    ``GLOB`` are several times faster on SQLite than ``LIKE '%…%'``)."""

    def __init__(self, dialect: str) -> None:
        self.sqlite = dialect == "sqlite"

    def has(self, text: ColumnElement[str], needle: ColumnElement[str]) -> ColumnElement[bool]:
        """``needle`` occurs in ``text`` (NULL if either is NULL)."""
        found = func.instr(text, needle) if self.sqlite else func.strpos(text, needle)
        return found > 0

    def has_param(self, column: ColumnElement[str], name: str) -> ColumnElement[bool]:
        return self.has(column, bindparam(name, type_=String))

    def lacks_key(self, key: str) -> ColumnElement[bool]:
        return not_(self.has(grants.c.constraints, literal(f'"{key}":')))

    def matches(self, name: str) -> ColumnElement[bool]:
        """The bound name matches a rule's pattern, ``*`` matching anything. SQLite's ``GLOB``
        is exact (patterns hold no ``?`` or ``[``); PostgreSQL's ``LIKE`` on the pattern with
        ``*`` → ``%`` can only match more (``_`` is a wildcard there), never less: patterns
        hold no ``%`` and no backslash."""
        value = bindparam(name, type_=String)
        if self.sqlite:
            return value.op("GLOB", is_comparison=True)(rules.c.pattern)
        return value.like(func.replace(rules.c.pattern, "*", "%"))


def _candidate_grants(sql: _Sql, scoped: bool) -> list[ColumnElement[bool]]:
    """Conditions met by every live grant that could cover the action: bound to it
    (task/session), holding its first scope (or, for a tool without scopes, pinned to it), and
    whose recipient, host and domain allowlists, if any, admit its first recipient, host and
    domain."""
    task, session = bindparam("task_id", type_=String), bindparam("session_id", type_=String)
    lifetime, constraints = grants.c.lifetime, grants.c.constraints
    pinned = sql.has_param(constraints, "pin")
    covers = [sql.has_param(grants.c.scopes, "scope"), or_(sql.lacks_key("tool"), pinned)]
    domains = [sql.has_param(constraints, f"domain{i}") for i in range(_DOMAIN_SLOTS)]
    # the most selective tests first: SQLite evaluates them in this order, row by row
    return [
        *(covers if scoped else [pinned]),
        or_(sql.lacks_key("recipients"), sql.has_param(constraints, "recipient")),
        or_(sql.lacks_key("hosts"), sql.has_param(constraints, "host")),
        or_(sql.lacks_key("domains"), *domains),
        or_(
            lifetime == Lifetime.STANDING.value,
            lifetime == Lifetime.UNTIL.value,
            and_(
                lifetime == Lifetime.ONCE.value,
                or_(grants.c.task_id.is_(None), grants.c.task_id == task),
            ),
            and_(lifetime == Lifetime.TASK.value, grants.c.task_id == task),
            and_(lifetime == Lifetime.SESSION.value, grants.c.session_id == session),
        ),
    ]


# One row shape for the three tables, so one statement reads them all: a source tag, then text,
# float and integer slots that each table fills with its own columns.
_SOURCES = ("connections", "grants", "rules")
_TEXT_SLOTS, _FLOAT_SLOTS = 9, 4
_LAYOUT: dict[str, tuple[Table, tuple[str, ...], tuple[str, ...], str | None]] = {
    # source: (table, text columns, float columns, integer column)
    "connections": (
        connections,
        ("id", "person_id", "scopes", "kind", "hosts", "name"),
        ("created_at",),
        "active",
    ),
    "grants": (
        grants,
        (
            "id",
            "person_id",
            "scopes",
            "lifetime",
            "constraints",
            "task_id",
            "session_id",
            "issued_by",
            "reason",
        ),
        ("created_at", "expires_at", "used_at", "revoked_at"),
        None,
    ),
    "rules": (rules, ("id", "person_id", "pattern", "mode", "reason"), ("created_at",), "priority"),
}


def _slots(source: str) -> list[ColumnElement[Any]]:
    table, texts, floats, integer = _LAYOUT[source]
    columns: list[ColumnElement[Any]] = [literal_column(str(_SOURCES.index(source)), Integer)]
    columns += [cast(table.c[t], Text) for t in texts]
    columns += [cast(null(), Text)] * (_TEXT_SLOTS - len(texts))
    columns += [table.c[f] for f in floats]
    columns += [cast(null(), Float)] * (_FLOAT_SLOTS - len(floats))
    columns.append(cast(null() if integer is None else table.c[integer], Integer))
    return columns


def _snapshot_statement(
    sql: _Sql, narrowed: bool, scoped: bool, narrow_rules: bool
) -> CompoundSelect[Any]:
    person = bindparam("person_id", type_=String)
    live_grants = [
        grants.c.person_id == person,
        grants.c.revoked_at.is_(None),
        *(_candidate_grants(sql, scoped) if narrowed else []),
        grants.c.used_at.is_(None),
        or_(grants.c.expires_at.is_(None), grants.c.expires_at > bindparam("now", type_=Float)),
    ]
    rule_query = select(*_slots("rules")).where(rules.c.person_id == person)
    if narrowed and narrow_rules:
        names = ["tool", *(f"scope{i}" for i in range(_RULE_SCOPE_SLOTS))]
        rule_query = rule_query.where(or_(*(sql.matches(n) for n in names)))
    return union_all(
        select(*_slots("connections")).where(
            connections.c.person_id == person, connections.c.active.is_(True)
        ),
        select(*_slots("grants")).where(*live_grants),
        rule_query,
    )


Decode = Callable[[Sequence[Any], tuple[list[Any], ...]], None]


def _decoder(source: str) -> Decode:
    _, texts, floats, integer = _LAYOUT[source]
    positions = [(t, 1 + i) for i, t in enumerate(texts)]
    positions += [(f, 1 + _TEXT_SLOTS + i) for i, f in enumerate(floats)]
    if integer is not None:
        positions.append((integer, 1 + _TEXT_SLOTS + _FLOAT_SLOTS))
    convert: Callable[[Mapping[str, Any]], Any] = {
        "connections": _connection,
        "grants": _grant,
        "rules": _rule,
    }[source]
    index = _SOURCES.index(source)

    def decode(row: Sequence[Any], parts: tuple[list[Any], ...]) -> None:
        parts[index].append(convert({column: row[at] for column, at in positions}))

    return decode


def _offered_scopes(conn: SqlConnection, person_id: str) -> set[str]:
    offered: set[str] = set()
    for (scopes,) in conn.execute(
        select(connections.c.scopes).where(
            connections.c.person_id == person_id, connections.c.active.is_(True)
        )
    ):
        offered.update(rows.load(scopes))
    return offered


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


_DECODE = [_decoder(source) for source in _SOURCES]
"""By source tag: decode a snapshot row and add it to its list."""


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
