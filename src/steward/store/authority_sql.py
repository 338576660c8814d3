"""Functions of a SQLAlchemy ``Connection`` the authority repository
(:mod:`steward.store.authority`) is built from: what a scope, pattern or constraint may be, the
person's policy version, lookups and row mapping, and the audit entry of every change."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Row, or_, select, update
from sqlalchemy import Connection as SqlConnection

from steward.domain.authority import Connection, ConnectionBounds, Grant, Lifetime, Rule, RuleMode
from steward.domain.roles import DataClass
from steward.errors import NotFound, UsageError
from steward.store import rows
from steward.store.audit import append_in
from steward.store.backend import Backend
from steward.store.schema import connections, grants, persons, policy_versions, rules

SCOPE = re.compile(r"^[A-Za-z0-9_.:/-]{1,200}$")
"""A scope: exact, no wildcards (``mail.send``, ``mcp:github.issues.read``)."""
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
        "calendars",
    }
)
"""Constraints the evaluator enforces. Anything else is refused rather than silently ignored."""
_LIST_CONSTRAINTS = ("recipients", "domains", "hosts", "data", "calendars")


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


def check_lifetime(grant: Grant) -> None:
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


def live_clauses(now_f: float) -> list[ColumnElement[bool]]:
    """Not revoked, not spent (only ``once`` grants are ever spent), not expired."""
    return [
        grants.c.revoked_at.is_(None),
        grants.c.used_at.is_(None),
        or_(grants.c.expires_at.is_(None), grants.c.expires_at > now_f),
    ]


def offered_scopes(conn: SqlConnection, person_id: str) -> set[str]:
    offered: set[str] = set()
    for (scopes,) in conn.execute(
        select(connections.c.scopes).where(
            connections.c.person_id == person_id, connections.c.active.is_(True)
        )
    ):
        offered.update(rows.load(scopes))
    return offered


def bump_version(
    conn: SqlConnection, backend: Backend, person_id: str, *, reset: bool = False
) -> int:
    """The person's next policy version, taken in the writer's transaction. The version row's
    lock serializes the person's writers until commit, so versions commit in order."""
    ensure_version_row(conn, backend, person_id)
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


def ensure_version_row(conn: SqlConnection, backend: Backend, person_id: str) -> None:
    conn.execute(
        backend.insert_ignore(
            policy_versions, {"person_id": person_id, "version": 0, "reset_version": 0}
        )
    )


def require_person(conn: SqlConnection, person_id: str) -> None:
    if conn.execute(select(persons.c.id).where(persons.c.id == person_id)).first() is None:
        raise NotFound("person", person_id)


def load_connection(conn: SqlConnection, connection_id: str, person_id: str) -> Connection:
    row = conn.execute(
        select(connections).where(
            connections.c.id == connection_id, connections.c.person_id == person_id
        )
    ).first()
    if row is None:
        raise NotFound("connection", connection_id)
    return connection_of(row)


def load_grant(conn: SqlConnection, grant_id: str, person_id: str) -> Grant:
    row = conn.execute(
        select(grants).where(grants.c.id == grant_id, grants.c.person_id == person_id)
    ).first()
    if row is None:
        raise NotFound("grant", grant_id)
    return grant_of(row)


def load_rule(conn: SqlConnection, rule_id: str, person_id: str) -> Rule:
    row = conn.execute(
        select(rules).where(rules.c.id == rule_id, rules.c.person_id == person_id)
    ).first()
    if row is None:
        raise NotFound("rule", rule_id)
    return rule_of(row)


# --- rows -----------------------------------------------------------------------------------


def connection_of(row: Row[Any] | Mapping[str, Any]) -> Connection:
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
        settings=rows.load(m["settings"]) if m["settings"] else {},
        bounds=ConnectionBounds.from_json(rows.load(m["bounds"]) if m["bounds"] else {}),
        secret=m["secret"],
    )


def grant_of(row: Row[Any] | Mapping[str, Any]) -> Grant:
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


def rule_of(row: Row[Any] | Mapping[str, Any]) -> Rule:
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


def record_audit(
    backend: Backend,
    conn: SqlConnection,
    person_id: str,
    kind: str,
    actor: str,
    *,
    now: datetime,
    **data: Any,
) -> None:
    """Every change of authority is in the audit log, committed with the change."""
    append_in(conn, backend, person_id=person_id, kind=kind, actor=actor, data=data, now=now)
