"""API tokens: issued once in plain text and stored only as a hash, authenticated without
telling which tokens exist, revocable by their owner only, and audited."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

# The test reads every row of the table as stored, which only raw SQL shows; ruff bans
# SQLAlchemy outside steward.store.
from sqlalchemy import text  # noqa: TID251

from steward.domain import ApiToken, Person
from steward.domain.clock import SimulatedClock
from steward.domain.tokens import CONTROL, READ, hash_token, new_token, require_scope
from steward.errors import Forbidden, NotFound, Unauthorized, UsageError
from steward.store import Store
from steward.store.tokens import LAST_USED_RESOLUTION


@pytest.fixture
async def people(store: Store, clock: SimulatedClock) -> tuple[Person, Person]:
    a = await store.persons.create_person(name="a", now=clock.now())
    b = await store.persons.create_person(name="b", now=clock.now())
    return a, b


def _rows(store: Store, table: str) -> list[dict[str, Any]]:
    with store.backend.engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(text(f"SELECT * FROM {table}"))]


def test_tokens_are_long_random_and_recognisable() -> None:
    tokens = {new_token() for _ in range(100)}
    assert len(tokens) == 100
    for token in tokens:
        assert token.startswith("stw_")
        assert len(token) == 4 + 43  # 32 bytes in unpadded URL-safe base64
    token = tokens.pop()
    assert hash_token(token) == hash_token(token) != hash_token(token + "x")
    assert len(hash_token(token)) == 64


async def test_only_the_hash_is_stored(
    store: Store, people: tuple[Person, Person], clock: SimulatedClock
) -> None:
    a, _ = people
    token, plaintext = await store.tokens.create_token(
        person_id=a.id, name="phone", scopes=[CONTROL, READ, READ], now=clock.now()
    )
    assert token.id.startswith("tok_")
    assert (token.person_id, token.name, token.scopes) == (a.id, "phone", (CONTROL, READ))
    assert token.revoked_at is None
    assert token.last_used_at is None
    for table in ("api_tokens", "audit_log"):
        for row in _rows(store, table):
            assert all(plaintext not in str(value) for value in row.values()), table
    (row,) = _rows(store, "api_tokens")
    assert row["token_hash"] == hash_token(plaintext)
    assert await store.tokens.list_tokens(a.id) == [token]


async def test_authenticate_and_last_used(
    store: Store, people: tuple[Person, Person], clock: SimulatedClock
) -> None:
    """A live token authenticates as itself; its last use is recorded, at most once per
    resolution period."""
    a, _ = people
    token, plaintext = await store.tokens.create_token(
        person_id=a.id, name="dashboard", scopes=[READ], now=clock.now()
    )
    clock.advance(timedelta(seconds=5))
    first_use = clock.now()
    found = await store.tokens.authenticate(plaintext, now=first_use)
    assert found == replace(token, last_used_at=first_use)
    assert (await store.tokens.list_tokens(a.id))[0].last_used_at == first_use

    clock.advance(LAST_USED_RESOLUTION / 2)
    again = await store.tokens.authenticate(plaintext, now=clock.now())
    assert again.last_used_at == first_use
    clock.advance(LAST_USED_RESOLUTION)
    later = await store.tokens.authenticate(plaintext, now=clock.now())
    assert later.last_used_at == clock.now()
    assert (await store.tokens.list_tokens(a.id))[0].last_used_at == clock.now()


async def test_wrong_tokens_are_refused_alike(
    store: Store, people: tuple[Person, Person], clock: SimulatedClock
) -> None:
    """Unknown, malformed, revoked, or the stored hash itself: all Unauthorized (401) with
    one message, so a failure says nothing about which tokens exist."""
    a, _ = people
    live, plaintext = await store.tokens.create_token(
        person_id=a.id, name="x", scopes=[CONTROL], now=clock.now()
    )
    revoked, revoked_plain = await store.tokens.create_token(
        person_id=a.id, name="y", scopes=[CONTROL], now=clock.now()
    )
    await store.tokens.revoke_token(revoked.id, person_id=a.id, now=clock.now())
    messages = set()
    for attempt in (
        new_token(),
        "",
        "Bearer " + plaintext,
        plaintext[:-1],
        hash_token(plaintext),
        revoked_plain,
    ):
        with pytest.raises(Unauthorized) as caught:
            await store.tokens.authenticate(attempt, now=clock.now())
        assert caught.value.status_code == 401
        messages.add(str(caught.value))
    assert len(messages) == 1
    assert (await store.tokens.authenticate(plaintext, now=clock.now())).id == live.id


async def test_revoke_takes_effect_and_is_owner_only(
    store: Store, people: tuple[Person, Person], clock: SimulatedClock
) -> None:
    a, b = people
    token, plaintext = await store.tokens.create_token(
        person_id=a.id, name="phone", scopes=[READ], now=clock.now()
    )
    other, _ = await store.tokens.create_token(
        person_id=b.id, name="b's", scopes=[READ], now=clock.now()
    )
    assert await store.tokens.list_tokens(b.id) == [other]
    with pytest.raises(NotFound):
        await store.tokens.revoke_token(token.id, person_id=b.id, now=clock.now())
    with pytest.raises(NotFound):
        await store.tokens.revoke_token("tok_nope", person_id=b.id, now=clock.now())
    assert (await store.tokens.authenticate(plaintext, now=clock.now())).id == token.id

    clock.advance(timedelta(minutes=3))
    revoked = await store.tokens.revoke_token(token.id, person_id=a.id, now=clock.now())
    assert revoked.revoked_at == clock.now()
    with pytest.raises(Unauthorized):
        await store.tokens.authenticate(plaintext, now=clock.now())
    clock.advance(timedelta(minutes=3))
    assert await store.tokens.revoke_token(token.id, person_id=a.id, now=clock.now()) == revoked
    assert await store.tokens.list_tokens(a.id) == [revoked]


async def test_issuing_and_revoking_are_audited(
    store: Store, people: tuple[Person, Person], clock: SimulatedClock
) -> None:
    """Each issue and each (first) revocation appends one entry to the person's log, with
    the token's id and name and never its secret; the chain verifies."""
    a, b = people
    token, plaintext = await store.tokens.create_token(
        person_id=a.id, name="phone", scopes=[READ], now=clock.now(), actor="token:laptop"
    )
    await store.tokens.create_token(person_id=b.id, name="other", scopes=[READ], now=clock.now())
    await store.tokens.revoke_token(token.id, person_id=a.id, now=clock.now())
    await store.tokens.revoke_token(token.id, person_id=a.id, now=clock.now())
    log = await store.audit.list_audit(person_id=a.id)
    assert [(e.kind, e.actor, e.data) for e in log] == [
        ("token", "token:laptop", {"token_id": token.id, "name": "phone", "scopes": [READ]}),
        ("revocation", "person", {"token_id": token.id, "name": "phone"}),
    ]
    assert all(plaintext not in str(e) for e in log)
    verdict = await store.audit.verify_audit()
    assert (verdict.ok, verdict.checked) == (True, 3)


async def test_bad_requests_issue_nothing(
    store: Store, people: tuple[Person, Person], clock: SimulatedClock
) -> None:
    a, _ = people
    for scopes in ([], ["admin"], [READ, "write"]):
        with pytest.raises(UsageError, match="scopes"):
            await store.tokens.create_token(
                person_id=a.id, name="x", scopes=scopes, now=clock.now()
            )
    with pytest.raises(UsageError, match="name"):
        await store.tokens.create_token(person_id=a.id, name=" ", scopes=[READ], now=clock.now())
    with pytest.raises(NotFound):
        await store.tokens.create_token(
            person_id="per_nobody", name="x", scopes=[READ], now=clock.now()
        )
    assert await store.tokens.list_tokens(a.id) == []
    assert await store.audit.list_audit() == []


def test_scopes_control_covers_read() -> None:
    def token(*scopes: str) -> ApiToken:
        return ApiToken(
            id="tok_1",
            person_id="per_1",
            name="t",
            scopes=scopes,
            created_at=datetime(2026, 1, 1, tzinfo=UTC),
        )

    require_scope(token(READ), READ)
    require_scope(token(CONTROL), READ)
    require_scope(token(CONTROL), CONTROL)
    with pytest.raises(Forbidden) as caught:
        require_scope(token(READ), CONTROL)
    assert caught.value.status_code == 403
    with pytest.raises(UsageError, match="unknown"):
        require_scope(token(CONTROL), "admin")
