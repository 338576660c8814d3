"""Vault secrets: ciphertext and host bindings, per person. Plaintext never reaches this module —
the caller encrypts before :meth:`SecretRepository.put_secret` and decrypts after reading."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, delete, func, select, update

from steward.domain.ids import new_id
from steward.domain.secrets import SecretInfo, check_secret_name
from steward.errors import NotFound, UsageError
from steward.store import rows
from steward.store.audit import append_in
from steward.store.backend import Backend
from steward.store.schema import persons, secrets

_LABEL = r"[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?"
_HOSTNAME_RE = re.compile(rf"{_LABEL}(?:\.{_LABEL})*\Z")


class SecretRepository:
    """Secrets (ciphertext only) and the hosts they may be sent to."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    async def put_secret(
        self,
        *,
        person_id: str,
        name: str,
        ciphertext: str,
        hosts: Iterable[str],
        now: datetime,
        actor: str = "person",
    ) -> SecretInfo:
        """Store secret ``name`` of a person, or replace its value and hosts (keeping its id);
        the audit log records the name and hosts, never the value."""
        check_secret_name(name)
        bound = normalize_hosts(hosts)
        now_f = rows.ts(now)
        values: dict[str, Any] = {
            "id": new_id("sec"),
            "person_id": person_id,
            "name": name,
            "hosts": rows.dump(list(bound)),
            "ciphertext": ciphertext,
            "created_at": now_f,
            "rotated_at": None,
        }

        def op(conn: Connection) -> SecretInfo:
            if conn.execute(select(persons.c.id).where(persons.c.id == person_id)).first() is None:
                raise NotFound("person", person_id)
            insert = self.backend.insert_ignore(secrets, values).returning(secrets.c.id)
            created = conn.execute(insert).first() is not None
            if not created:
                conn.execute(
                    update(secrets)
                    .where(secrets.c.person_id == person_id, secrets.c.name == name)
                    .values(hosts=values["hosts"], ciphertext=ciphertext, rotated_at=now_f)
                )
            stored = _secret(_get_row(conn, person_id, name))
            append_in(
                conn,
                self.backend,
                person_id=person_id,
                kind="secret",
                actor=actor,
                data={"secret": name, "hosts": list(bound), "stored": not created},
                now=now,
            )
            return stored

        return await self.backend.write(op)

    async def secret_ciphertext(self, person_id: str, name: str) -> tuple[SecretInfo, str]:
        """A person's secret and its ciphertext; :class:`NotFound` if they have none so named."""

        def op(conn: Connection) -> tuple[SecretInfo, str]:
            row = _get_row(conn, person_id, name)
            return _secret(row), str(row.ciphertext)

        return await self.backend.read(op)

    async def list_secrets(self, person_id: str) -> list[SecretInfo]:
        query = select(secrets).where(secrets.c.person_id == person_id).order_by(secrets.c.name)
        return await self.backend.read(lambda conn: [_secret(r) for r in conn.execute(query)])

    async def count_secrets(self) -> int:
        """How many secrets are stored, everyone's: what a lost vault key would leave unreadable."""
        query = select(func.count()).select_from(secrets)
        return await self.backend.read(lambda conn: int(conn.execute(query).scalar_one()))

    async def sample_ciphertexts(self, limit: int = 5) -> list[str]:
        """A few stored ciphertexts, the newest first: whether the vault's keys open them."""
        query = select(secrets.c.ciphertext).order_by(secrets.c.created_at.desc()).limit(limit)
        return await self.backend.read(lambda conn: [str(c) for c in conn.execute(query).scalars()])

    async def delete_secret(
        self, person_id: str, name: str, *, now: datetime, actor: str = "person"
    ) -> None:
        """Delete a person's secret; :class:`NotFound` if they have none so named."""

        def op(conn: Connection) -> None:
            res = conn.execute(
                delete(secrets)
                .where(secrets.c.person_id == person_id, secrets.c.name == name)
                .returning(secrets.c.id)
            )
            if res.first() is None:
                raise NotFound("secret", name)
            append_in(
                conn,
                self.backend,
                person_id=person_id,
                kind="secret",
                actor=actor,
                data={"secret": name, "deleted": True},
                now=now,
            )

        await self.backend.write(op)

    async def rewrap_secrets(self, rotate: Callable[[str], str], *, now: datetime) -> int:
        """Re-encrypt every stored secret with ``rotate`` (``Vault.rotate``) in one transaction:
        either all of them move to the current key or, if one cannot be decrypted, none does.
        Returns how many were rewrapped."""
        now_f = rows.ts(now)

        def op(conn: Connection) -> int:
            query = self.backend.lock_for_update(select(secrets.c.id, secrets.c.ciphertext))
            found = conn.execute(query).all()
            for row in found:
                conn.execute(
                    update(secrets)
                    .where(secrets.c.id == row.id)
                    .values(ciphertext=rotate(row.ciphertext), rotated_at=now_f)
                )
            return len(found)

        return await self.backend.write(op)


def normalize_hosts(hosts: Iterable[str]) -> tuple[str, ...]:
    """Hosts a secret is bound to, lower-cased and checked: bare host names or IP addresses,
    no scheme, port, path or wildcard (binding is by exact host)."""
    out: list[str] = []
    for raw in hosts if not isinstance(hosts, str) else [hosts]:
        host = raw.strip().lower().rstrip(".")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        if not (_is_ip(host) or _HOSTNAME_RE.match(host)):
            raise UsageError(
                f"invalid host {raw!r} for a secret: give a bare host name such as "
                "'api.example.com' (no scheme, port, path or '*'; binding is by exact host)"
            )
        if host not in out:
            out.append(host)
    if not out:
        raise UsageError("a secret must be bound to at least one host it may be sent to")
    return tuple(out)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _get_row(conn: Connection, person_id: str, name: str) -> Row[Any]:
    row = conn.execute(
        select(secrets).where(secrets.c.person_id == person_id, secrets.c.name == name)
    ).first()
    if row is None:
        raise NotFound("secret", name)
    return row


def _secret(row: Row[Any]) -> SecretInfo:
    m = row._mapping
    return SecretInfo(
        id=m["id"],
        person_id=m["person_id"],
        name=m["name"],
        hosts=tuple(rows.load(m["hosts"])),
        created_at=rows.dt(m["created_at"]),
        rotated_at=rows.dt_opt(m["rotated_at"]),
    )
