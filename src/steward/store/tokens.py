"""API tokens: issue (hash stored, plain text returned once), authenticate, list, revoke.
Issuing and revoking are audited in the same transaction as the change."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Row, insert, select, update

from steward.domain import ApiToken
from steward.domain.ids import new_id
from steward.domain.tokens import SCOPES, hash_token, new_token
from steward.errors import NotFound, Unauthorized, UsageError
from steward.store import rows
from steward.store.audit import append_in
from steward.store.backend import Backend
from steward.store.schema import api_tokens, persons

LAST_USED_RESOLUTION = timedelta(minutes=1)
"""``last_used_at`` is rewritten at most this often, so that a dashboard polling every second
does not turn every read into a write."""

_REJECTED = "invalid or revoked API token"
"""One message for every failure, so a caller learns nothing about which tokens exist."""


class TokenRepository:
    """API tokens."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    async def create_token(
        self,
        *,
        person_id: str,
        name: str,
        scopes: Iterable[str],
        now: datetime,
        actor: str = "person",
    ) -> tuple[ApiToken, str]:
        """Issue a token. Returns it and its plain text, which is not stored and cannot be
        shown again: only its hash is kept."""
        wanted = tuple(sorted(set(scopes)))
        if not wanted or not set(wanted) <= SCOPES:
            raise UsageError(f"token scopes must be some of {sorted(SCOPES)}, got {wanted}")
        if not name.strip():
            raise UsageError("a token needs a name (where it is used: 'phone', 'dashboard')")
        plaintext = new_token()
        token_id = new_id("tok")

        def op(conn: Connection) -> ApiToken:
            if conn.execute(select(persons.c.id).where(persons.c.id == person_id)).first() is None:
                raise NotFound("person", person_id)
            conn.execute(
                insert(api_tokens).values(
                    id=token_id,
                    person_id=person_id,
                    name=name,
                    scopes=rows.dump(list(wanted)),
                    token_hash=hash_token(plaintext),
                    created_at=rows.ts(now),
                )
            )
            append_in(
                conn,
                self.backend,
                person_id=person_id,
                kind="token",
                actor=actor,
                data={"token_id": token_id, "name": name, "scopes": list(wanted)},
                now=now,
            )
            return _get(conn, token_id)

        return await self.backend.write(op), plaintext

    async def authenticate(self, token: str, *, now: datetime) -> ApiToken:
        """The live token ``token`` is the plain text of, or :class:`Unauthorized`."""
        digest = hash_token(token)

        def find(conn: Connection) -> ApiToken | None:
            row = conn.execute(select(api_tokens).where(api_tokens.c.token_hash == digest)).first()
            return None if row is None else _token(row)

        found = await self.backend.read(find)
        if found is None or found.revoked_at is not None:
            raise Unauthorized(_REJECTED)
        if found.last_used_at is not None and now - found.last_used_at < LAST_USED_RESOLUTION:
            return found
        now_f = rows.ts(now)

        def touch(conn: Connection) -> bool:
            res = conn.execute(
                update(api_tokens)
                .where(api_tokens.c.id == found.id, api_tokens.c.revoked_at.is_(None))
                .values(last_used_at=now_f)
                .returning(api_tokens.c.id)
            )
            return res.first() is not None

        if not await self.backend.write(touch):  # revoked since it was read
            raise Unauthorized(_REJECTED)
        return replace(found, last_used_at=rows.dt(now_f))

    async def list_tokens(self, person_id: str) -> list[ApiToken]:
        """A person's tokens, revoked ones included, oldest first."""
        query = (
            select(api_tokens)
            .where(api_tokens.c.person_id == person_id)
            .order_by(api_tokens.c.created_at, api_tokens.c.id)
        )
        return await self.backend.read(lambda conn: [_token(r) for r in conn.execute(query)])

    async def revoke_token(
        self, token_id: str, *, person_id: str, now: datetime, actor: str = "person"
    ) -> ApiToken:
        """Revoke one of ``person_id``'s tokens; the next request with it is refused. Another
        person's token is :class:`NotFound`. Revoking twice changes nothing."""

        def op(conn: Connection) -> ApiToken:
            current = _get(conn, token_id)
            if current.person_id != person_id:
                raise NotFound("api token", token_id)
            if current.revoked_at is not None:
                return current
            conn.execute(
                update(api_tokens)
                .where(api_tokens.c.id == token_id)
                .values(revoked_at=rows.ts(now))
            )
            append_in(
                conn,
                self.backend,
                person_id=person_id,
                kind="revocation",
                actor=actor,
                data={"token_id": token_id, "name": current.name},
                now=now,
            )
            return _get(conn, token_id)

        return await self.backend.write(op)


def _get(conn: Connection, token_id: str) -> ApiToken:
    row = conn.execute(select(api_tokens).where(api_tokens.c.id == token_id)).first()
    if row is None:
        raise NotFound("api token", token_id)
    return _token(row)


def _token(row: Row[Any]) -> ApiToken:
    m = row._mapping
    return ApiToken(
        id=m["id"],
        person_id=m["person_id"],
        name=m["name"],
        scopes=tuple(rows.load(m["scopes"])),
        created_at=rows.dt(m["created_at"]),
        revoked_at=rows.dt_opt(m["revoked_at"]),
        last_used_at=rows.dt_opt(m["last_used_at"]),
    )
