"""Authorization state: connected accounts, grants and action rules, and the policy snapshot the
sentinel decides on.

Every query names the person it acts for (but those of what is reached by an id alone, before
anyone is known: a code host's delivery, or the watcher's list); an id of another person's
object is :class:`~steward.errors.NotFound`, never someone else's data. Scopes are exact strings
(``mail.read`` never implies ``mail.send``), and a grant can never give more than the person's
active connections allow: :meth:`AuthorityRepository.add_grant` refuses it, and disconnecting an
account revokes the grants it alone backed.

Every write of a person's connections, grants or rules bumps the person's policy version in
its own transaction and stamps the rows it writes with it. The sentinel holds each person's
policy in memory and checks it with :meth:`AuthorityRepository.policy_read` before every
decision: one primary-key read when nothing changed, the changed rows when something did — so
a revocation bites at the very next action, inside a running task too, without re-reading a
thousand grants each time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import (
    ColumnElement,
    String,
    bindparam,
    func,
    select,
    update,
)
from sqlalchemy import Connection as SqlConnection

from steward.domain.approval import Approval
from steward.domain.authority import Connection, Disconnected, Grant, Lifetime, Rule, RuleMode
from steward.errors import NotFound, UsageError
from steward.store import rows
from steward.store.authority_sql import (
    RULE_PATTERN,
    SCOPE,
    bump_version,
    check_lifetime,
    connection_of,
    ensure_version_row,
    grant_of,
    live_clauses,
    load_connection,
    load_grant,
    load_rule,
    normalize_constraints,
    offered_scopes,
    record_audit,
    require_person,
    rule_of,
)
from steward.store.backend import Backend
from steward.store.inbox import decide_in
from steward.store.mailchannel import spend_token_in
from steward.store.schema import (
    connections,
    grant_uses,
    grants,
    policy_versions,
    rules,
    tasks,
    watch_cursors,
)


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


class AuthorityRepository:
    """Connections, grants and rules, and the policy reads the sentinel decides on."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

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
            "settings": rows.dump(connection.settings),
            "bounds": rows.dump(connection.bounds.to_json()),
            "secret": connection.secret,
        }

        def op(conn: SqlConnection) -> Connection:
            require_person(conn, connection.person_id)
            version = bump_version(conn, self.backend, connection.person_id)
            conn.execute(connections.insert().values({**values, "version": version}))
            added = load_connection(conn, connection.id, connection.person_id)
            record_audit(
                self.backend,
                conn,
                added.person_id,
                "connection",
                "person",
                now=connection.created_at,
                connection=added.id,
                name=added.name,
                scopes=list(added.scopes),
                bounds=added.bounds.to_json(),
                active=True,
            )
            return added

        return await self.backend.write(op)

    async def get_connection(self, connection_id: str) -> Connection:
        """The connection ``connection_id`` of whichever person, active or not; :class:`NotFound`
        when there is none (for what is keyed by the id alone: a code host's deliveries)."""
        query = select(connections).where(connections.c.id == connection_id)

        def op(conn: SqlConnection) -> Connection:
            row = conn.execute(query).first()
            if row is None:
                raise NotFound("connection", connection_id)
            return connection_of(row)

        return await self.backend.read(op)

    async def list_connections(self, person_id: str) -> list[Connection]:
        query = (
            select(connections)
            .where(connections.c.person_id == person_id)
            .order_by(connections.c.created_at, connections.c.id)
        )
        return await self.backend.read(lambda conn: [connection_of(r) for r in conn.execute(query)])

    async def list_active_connections(self) -> list[Connection]:
        """Every person's active connections (what the watcher watches), oldest first."""
        query = (
            select(connections)
            .where(connections.c.active.is_(True))
            .order_by(connections.c.created_at, connections.c.id)
        )
        return await self.backend.read(lambda conn: [connection_of(r) for r in conn.execute(query)])

    async def disconnect(
        self, connection_id: str, *, person_id: str, now: datetime
    ) -> Disconnected:
        """Deactivate a connection and revoke (at ``now``) every unrevoked grant whose scopes
        the remaining active connections no longer all allow: reconnecting later does not
        bring old authority back."""
        now_f = rows.ts(now)

        def op(conn: SqlConnection) -> Disconnected:
            load_connection(conn, connection_id, person_id)
            version = bump_version(conn, self.backend, person_id)
            conn.execute(
                update(connections)
                .where(connections.c.id == connection_id)
                .values(active=False, version=version)
            )
            offered = offered_scopes(conn, person_id)
            revoked = []
            for row in conn.execute(
                select(grants).where(grants.c.person_id == person_id, grants.c.revoked_at.is_(None))
            ):
                grant = grant_of(row)
                if not set(grant.scopes) <= offered:
                    revoked.append(grant.id)
            if revoked:
                conn.execute(
                    update(grants)
                    .where(grants.c.id.in_(revoked))
                    .values(revoked_at=now_f, version=version)
                )
            record_audit(
                self.backend,
                conn,
                person_id,
                "revocation",
                "person",
                now=now,
                connection=connection_id,
                grants=revoked,
            )
            return Disconnected(
                connection=load_connection(conn, connection_id, person_id),
                revoked=tuple(load_grant(conn, grant_id, person_id) for grant_id in revoked),
            )

        return await self.backend.write(op)

    async def remove_connection(self, connection_id: str, *, person_id: str, now: datetime) -> None:
        """Delete a connection that never worked (its login check failed when it was made):
        no grant, watch or memory can refer to it yet, so nothing of it is kept but the audit
        entry. A connection that was in use is disconnected instead (:meth:`disconnect`)."""

        def op(conn: SqlConnection) -> None:
            gone = load_connection(conn, connection_id, person_id)
            # a deleted row cannot be fetched by a holder's next incremental read
            bump_version(conn, self.backend, person_id, reset=True)
            conn.execute(watch_cursors.delete().where(watch_cursors.c.connection_id == gone.id))
            conn.execute(connections.delete().where(connections.c.id == gone.id))
            record_audit(
                self.backend,
                conn,
                person_id,
                "connection",
                "person",
                now=now,
                connection=gone.id,
                name=gone.name,
                removed=True,
            )

        await self.backend.write(op)

    # --- grants -------------------------------------------------------------------------

    async def add_grant(self, grant: Grant) -> Grant:
        """Record a grant. Refused (:class:`UsageError`) if its scopes go beyond the person's
        active connections, its constraints are not ones the sentinel enforces, or its
        lifetime's fields do not fit; returned as stored (allowlists lower-cased)."""
        return await self.backend.write(self._grant_writer(grant))

    async def approve_granting(
        self,
        approval_id: str,
        grant: Grant,
        *,
        decided_by: str,
        now: datetime,
        note: str | None,
        spend_token: str | None = None,
    ) -> Approval:
        """Approve a pending approval and record the lasting grant made from it, in one
        transaction: either both happen or neither (refused as :meth:`add_grant` and
        :meth:`decide_approval` refuse). ``spend_token``: the reply token that decides it,
        spent in the same transaction."""
        write_grant = self._grant_writer(grant)

        def op(conn: SqlConnection) -> Approval:
            if spend_token is not None:
                spend_token_in(conn, spend_token, now)
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
        check_lifetime(grant)
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
            require_person(conn, grant.person_id)
            beyond = sorted(set(grant.scopes) - offered_scopes(conn, grant.person_id))
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
            version = bump_version(conn, self.backend, grant.person_id)
            conn.execute(grants.insert().values({**values, "version": version}))
            added = load_grant(conn, grant.id, grant.person_id)
            record_audit(
                self.backend,
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
        return await self.backend.read(lambda conn: load_grant(conn, grant_id, person_id))

    async def list_grants(self, person_id: str, *, live_at: datetime | None = None) -> list[Grant]:
        """The person's grants, oldest first; with ``live_at`` only those not revoked, spent or
        expired at that time."""
        query = select(grants).where(grants.c.person_id == person_id)
        if live_at is not None:
            query = query.where(*live_clauses(rows.ts(live_at)))
        query = query.order_by(grants.c.created_at, grants.c.id)
        return await self.backend.read(lambda conn: [grant_of(r) for r in conn.execute(query)])

    async def revoke_grant(
        self, grant_id: str, *, person_id: str, now: datetime, actor: str = "person"
    ) -> Grant:
        """Revoke a grant (idempotent: a revoked grant keeps its first revocation time)."""

        def op(conn: SqlConnection) -> Grant:
            load_grant(conn, grant_id, person_id)
            version = bump_version(conn, self.backend, person_id)
            changed = conn.execute(
                update(grants)
                .where(grants.c.id == grant_id, grants.c.revoked_at.is_(None))
                .values(revoked_at=rows.ts(now), version=version)
                .returning(grants.c.id)
            ).first()
            if changed is not None:
                record_audit(
                    self.backend, conn, person_id, "revocation", actor, now=now, grant=grant_id
                )
            return load_grant(conn, grant_id, person_id)

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
            version = bump_version(conn, self.backend, person_id)
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
            ensure_version_row(conn, self.backend, person_id)
            conn.execute(
                self.backend.lock_for_update(
                    select(policy_versions.c.person_id).where(
                        policy_versions.c.person_id == person_id
                    )
                )
            )
            grant = load_grant(conn, grant_id, person_id)
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
            require_person(conn, rule.person_id)
            version = bump_version(conn, self.backend, rule.person_id)
            conn.execute(rules.insert().values({**values, "version": version}))
            added = load_rule(conn, rule.id, rule.person_id)
            record_audit(
                self.backend,
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
        return await self.backend.read(lambda conn: [rule_of(r) for r in conn.execute(query)])

    async def delete_rule(self, rule_id: str, *, person_id: str, now: datetime) -> None:
        def op(conn: SqlConnection) -> None:
            rule = load_rule(conn, rule_id, person_id)
            bump_version(
                conn, self.backend, person_id, reset=True
            )  # a deleted row cannot be fetched
            conn.execute(rules.delete().where(rules.c.id == rule_id))
            record_audit(
                self.backend,
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
                picks = ([connections.c.active.is_(True)], live_clauses(rows.ts(now)), [])
            else:
                picks = tuple([table.c.version > known] for table in (connections, grants, rules))
            return PolicyRead(
                person_id=person_id,
                version=version,
                complete=complete,
                connections=tuple(
                    connection_of(r)
                    for r in conn.execute(
                        select(connections).where(connections.c.person_id == person_id, *picks[0])
                    )
                ),
                grants=tuple(
                    grant_of(r)
                    for r in conn.execute(
                        select(grants).where(grants.c.person_id == person_id, *picks[1])
                    )
                ),
                rules=tuple(
                    rule_of(r)
                    for r in conn.execute(
                        select(rules).where(rules.c.person_id == person_id, *picks[2])
                    )
                ),
            )

        return await backend.read(op)
