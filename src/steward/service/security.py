"""The facade's security part: the audit log, API tokens, connections, grants, rules and the
vault."""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from steward.domain import (
    ApiToken,
    AuditEntry,
    Connection,
    Grant,
    Lifetime,
    Rule,
    RuleMode,
)
from steward.domain.auditchain import AuditVerdict
from steward.domain.authority import AuditFilter, Disconnected
from steward.domain.ids import new_id
from steward.domain.limits import MAX_KIND, check_json, check_text, hours_ahead
from steward.domain.secrets import SecretInfo
from steward.domain.tokens import CONTROL, READ
from steward.errors import ConfigError, NotFound, UsageError
from steward.service.base import ServiceBase


class SecurityService(ServiceBase):
    # --- security: audit log and API tokens ---------------------------------------------

    async def audit_log(
        self, *, person_id: str, after_seq: int = 0, limit: int = 500
    ) -> list[AuditEntry]:
        """The person's own audit entries, oldest first."""
        return await self.store.audit.list_audit(
            person_id=self._for(person_id, READ), after_seq=after_seq, limit=limit
        )

    async def recent_audit(
        self,
        *,
        person_id: str,
        before_seq: int | None = None,
        limit: int = 200,
        kind: str | None = None,
        tool: str | None = None,
        goal_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[AuditEntry]:
        """The person's own audit entries before ``before_seq`` (None: from the newest), newest
        first: what was decided lately, without reading the whole log. Narrowed to one
        ``kind``, one ``tool``, what one of their goals' agents did (``goal_id``), or a time
        range (``since`` inclusive, ``until`` exclusive); page on with the last entry's seq."""
        person_id = self._for(person_id, READ)
        if (before_seq is not None and before_seq < 1) or not 1 <= limit <= 1000:
            raise UsageError("before_seq is at least 1, and limit is from 1 to 1000")
        if since is not None and until is not None and since >= until:
            raise UsageError("since must be before until")
        if goal_id:
            goal = await self.store.goals.get_goal(goal_id)
            if goal.person_id != person_id:
                raise NotFound("goal", goal_id)
        only = AuditFilter(
            kind=kind or None, tool=tool or None, goal_id=goal_id or None, since=since, until=until
        )
        return await self.store.audit.list_recent_audit(
            person_id=person_id, before_seq=before_seq, limit=limit, only=only
        )

    async def verify_audit(self) -> AuditVerdict:
        """Check the whole hash chain; the verdict names the first entry that fails. The chain
        links everyone's entries, so this is the machine owner's."""
        self._owner_only("verifying the whole audit chain")
        return await self.store.audit.verify_audit()

    async def create_token(
        self, *, person_id: str, name: str, scopes: Sequence[str]
    ) -> tuple[ApiToken, str]:
        """Issue an API token; the plaintext is returned once and never stored."""
        check_json([name, list(scopes)], "a token")
        return await self.store.tokens.create_token(
            person_id=self._for(person_id, CONTROL), name=name, scopes=scopes, now=self.clock.now()
        )

    async def list_tokens(self, *, person_id: str) -> list[ApiToken]:
        return await self.store.tokens.list_tokens(self._for(person_id, READ))

    async def revoke_token(self, token_id: str, *, person_id: str) -> ApiToken:
        return await self.store.tokens.revoke_token(
            token_id, person_id=self._for(person_id, CONTROL), now=self.clock.now()
        )

    # --- security: connections, grants, rules ------------------------------------------

    async def add_connection(
        self,
        *,
        person_id: str,
        kind: str,
        name: str,
        scopes: Sequence[str],
        hosts: Sequence[str] = (),
    ) -> Connection:
        person_id = self._for(person_id, CONTROL)
        if not scopes:
            raise UsageError("a connection exposes at least one scope (e.g. mail.read)")
        check_json([kind, name, list(scopes), list(hosts)], "a connection")
        check_text(kind, "a connection's kind", most=MAX_KIND)
        return await self.store.authority.add_connection(
            Connection(
                id=new_id("con"),
                person_id=person_id,
                kind=kind,
                name=name,
                scopes=tuple(scopes),
                hosts=tuple(hosts),
                created_at=self.clock.now(),
            )
        )

    async def list_connections(self, *, person_id: str) -> list[Connection]:
        return await self.store.authority.list_connections(self._for(person_id, READ))

    async def disconnect(self, connection_id: str, *, person_id: str) -> Disconnected:
        """Deactivate a connection; grants it no longer covers are revoked at once."""
        return await self.store.authority.disconnect(
            connection_id, person_id=self._for(person_id, CONTROL), now=self.clock.now()
        )

    async def list_grants(self, *, person_id: str, live: bool = True) -> list[Grant]:
        return await self.store.authority.list_grants(
            self._for(person_id, READ), live_at=self.clock.now() if live else None
        )

    async def add_grant(
        self,
        *,
        person_id: str,
        scopes: Sequence[str],
        constraints: dict[str, Any] | None = None,
        hours: float | None = None,
        reason: str = "",
        issued_by: str = "person",
    ) -> Grant:
        """A grant the person gives directly: standing, or for ``hours`` from now."""
        person_id = self._for(person_id, CONTROL)
        issued_by = self._decider(issued_by)
        lasts = None if hours is None else hours_ahead(hours, "a grant's hours")
        check_json([list(scopes), constraints, reason], "a grant")
        now = self.clock.now()
        return await self.store.authority.add_grant(
            Grant(
                id=new_id("grt"),
                person_id=person_id,
                scopes=tuple(scopes),
                lifetime=Lifetime.STANDING if hours is None else Lifetime.UNTIL,
                constraints=constraints or {},
                expires_at=None if lasts is None else now + lasts,
                issued_by=issued_by,
                reason=reason,
                created_at=now,
            )
        )

    async def revoke_grant(self, grant_id: str, *, person_id: str) -> Grant:
        """Takes effect at the very next action, inside running tasks too."""
        return await self.store.authority.revoke_grant(
            grant_id, person_id=self._for(person_id, CONTROL), now=self.clock.now()
        )

    async def add_rule(
        self, *, person_id: str, pattern: str, mode: str, priority: int = 0, reason: str = ""
    ) -> Rule:
        person_id = self._for(person_id, CONTROL)
        try:
            parsed = RuleMode(mode)
        except ValueError as exc:
            modes = ", ".join(m.value for m in RuleMode)
            raise UsageError(f"unknown rule mode {mode!r}; use one of {modes}") from exc
        check_json([pattern, priority, reason], "a rule")
        return await self.store.authority.add_rule(
            Rule(
                id=new_id("rul"),
                person_id=person_id,
                pattern=pattern,
                mode=parsed,
                priority=priority,
                reason=reason,
                created_at=self.clock.now(),
            )
        )

    async def list_rules(self, *, person_id: str) -> list[Rule]:
        return await self.store.authority.list_rules(self._for(person_id, READ))

    async def delete_rule(self, rule_id: str, *, person_id: str) -> None:
        await self.store.authority.delete_rule(
            rule_id, person_id=self._for(person_id, CONTROL), now=self.clock.now()
        )

    # --- security: the vault --------------------------------------------------------------

    async def put_secret(
        self, *, person_id: str, name: str, value: str, hosts: Sequence[str]
    ) -> SecretInfo:
        """Store (or replace) a secret, encrypted, bound to the hosts it may be sent to. Tools
        and the model only ever see ``{{secret:<name>}}``."""
        person_id = self._for(person_id, CONTROL)
        if not value:
            raise UsageError("the secret's value is empty")
        check_json([name, value, list(hosts)], "a secret")
        return await self.store.secrets.put_secret(
            person_id=person_id,
            name=name,
            ciphertext=(await self._vault()).encrypt(value),
            hosts=hosts,
            now=self.clock.now(),
            actor=self._decider("person"),
        )

    async def list_secrets(self, *, person_id: str) -> list[SecretInfo]:
        """Names and hosts; never values."""
        return await self.store.secrets.list_secrets(self._for(person_id, READ))

    async def delete_secret(self, name: str, *, person_id: str) -> None:
        await self.store.secrets.delete_secret(
            self._for(person_id, CONTROL), name, now=self.clock.now(), actor=self._decider("person")
        )

    async def rotate_vault_key(self) -> int:
        """Re-encrypt every secret under a new key, in one transaction, then drop the old key.

        With the key in ``$STEWARD_VAULT_KEY``, the new key is whatever that now holds (the
        previous one in ``$STEWARD_VAULT_OLD_KEYS`` until this has run); with the key file, a
        new key is generated. Returns how many secrets were re-encrypted."""
        from steward.sentinel.vault import (
            KEY_ENV,
            Vault,
            VaultKeys,
            retire_old_keys,
            rotate_key_file,
        )

        self._owner_only("rotating the vault key")
        if self.data_dir is None:
            raise ConfigError("no data directory is configured, so there is no vault key")
        from_env = bool(os.environ.get(KEY_ENV, "").strip())
        await self._vault()  # no new key while the one the stored secrets need is missing
        keys = VaultKeys.load(self.data_dir) if from_env else rotate_key_file(self.data_dir)
        count = await self.store.secrets.rewrap_secrets(Vault(keys).rotate, now=self.clock.now())
        if not from_env:
            retire_old_keys(self.data_dir)
        return count
