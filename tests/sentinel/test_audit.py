"""The audit log: a gap-free hash chain under concurrent appends, whose every field is covered
by the hash, so tampering with any row, or deleting one, is found at the right seq."""

from __future__ import annotations

import asyncio
import itertools
import math
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

# Tampering means writing rows the store itself never changes, so it takes raw SQL; ruff bans
# SQLAlchemy outside steward.store, and this is the one place a test needs it.
from sqlalchemy import text  # noqa: TID251

from steward.domain import AuditEntry
from steward.domain.auditchain import (
    GENESIS,
    AuditProblem,
    AuditVerdict,
    canonical_json,
    entry_hash,
    hash_of,
    verify,
)
from steward.domain.clock import SimulatedClock
from steward.errors import UsageError
from steward.store import Store
from steward.store.audit import append_in


def _sql(store: Store, statement: str, **params: Any) -> list[dict[str, Any]]:
    with store.backend.engine.begin() as conn:
        result = conn.execute(text(statement), params)
        return [dict(r._mapping) for r in result] if result.returns_rows else []


async def _fill(store: Store, clock: SimulatedClock, n: int) -> list[AuditEntry]:
    a = await store.persons.create_person(name="a", now=clock.now())
    b = await store.persons.create_person(name="b", now=clock.now())
    entries = []
    for i in range(n):
        # odd microseconds: the hashed instant must survive the trip through a float column
        clock.advance(timedelta(seconds=1, microseconds=123_457))
        person = (a.id, b.id, None)[i % 3]
        entries.append(
            await store.audit.append_audit(
                person_id=person,
                kind=("decision", "effect", "grant")[i % 3],
                actor=f"agent:tsk_{i}",
                data={"n": i, "tool": "email.send", "args": {"to": ["x@example.com"]}},
                now=clock.now(),
            )
        )
    return entries


# --- the hash and the verifier ------------------------------------------------------------


def _entry(seq: int, prev: str, **fields: Any) -> AuditEntry:
    base: dict[str, Any] = {
        "person_id": "per_1",
        "at": datetime(2026, 1, 5, 8, 0, tzinfo=UTC),
        "kind": "decision",
        "actor": "system",
        "data": {"verdict": "allow"},
    }
    base |= fields
    digest = entry_hash(
        prev, seq, base["person_id"], base["at"], base["kind"], base["actor"], base["data"]
    )
    return AuditEntry(seq=seq, prev_hash=prev, hash=digest, **base)


def _chain(n: int) -> list[AuditEntry]:
    chain: list[AuditEntry] = []
    for seq in range(1, n + 1):
        chain.append(_entry(seq, chain[-1].hash if chain else GENESIS, data={"i": seq}))
    return chain


def test_every_field_is_in_the_hash() -> None:
    """Changing any one field (or the predecessor's hash) changes the entry's hash."""
    at = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
    args: tuple[Any, ...] = (GENESIS, 1, "per_1", at, "decision", "system", {"a": 1})
    variants: list[tuple[Any, ...]] = [
        ("1" * 64, *args[1:]),
        (*args[:1], 2, *args[2:]),
        (*args[:2], None, *args[3:]),
        (*args[:3], at + timedelta(microseconds=1), *args[4:]),
        (*args[:4], "effect", *args[5:]),
        (*args[:5], "person", *args[6:]),
        (*args[:6], {"a": 2}),
    ]
    original = entry_hash(*args)
    assert len(original) == 64
    assert entry_hash(*args) == original
    hashes = {entry_hash(*v) for v in variants}
    assert original not in hashes
    assert len(hashes) == len(variants)


def test_the_same_instant_in_any_zone_hashes_the_same() -> None:
    at = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
    local = at.astimezone(ZoneInfo("Europe/Berlin"))
    assert _entry(1, GENESIS, at=at).hash == _entry(1, GENESIS, at=local).hash
    with pytest.raises(ValueError, match="timezone-aware"):
        _entry(1, GENESIS, at=at.replace(tzinfo=None))


def test_canonical_json_is_one_text_per_value() -> None:
    assert canonical_json({"b": 1, "a": [1, "é"]}) == '{"a":[1,"é"],"b":1}'
    assert canonical_json({"s": {3, 1, 2}}) == '{"s":[1,2,3]}'
    with pytest.raises(ValueError, match="JSON"):
        canonical_json({"x": math.nan})
    with pytest.raises(TypeError, match="cannot hold"):
        canonical_json({"x": object()})


def test_verify_finds_the_first_bad_entry() -> None:
    chain = _chain(6)
    assert verify([]) == AuditVerdict(ok=True, checked=0)
    good = verify(chain)
    assert (good.ok, good.checked, good.last_seq, good.last_hash) == (True, 6, 6, chain[-1].hash)

    forged = chain.copy()
    forged[3] = replace(chain[3], data={"i": 99})
    assert _why(verify(forged)) == (4, AuditProblem.HASH_MISMATCH, 3)

    relinked = chain.copy()
    relinked[2] = _entry(3, "a" * 64, data={"i": 3})  # self-consistent, wrong predecessor
    assert _why(verify(relinked)) == (3, AuditProblem.BROKEN_LINK, 2)

    assert _why(verify(chain[:2] + chain[3:])) == (3, AuditProblem.GAP, 2)
    assert _why(verify(chain[1:])) == (1, AuditProblem.GAP, 0)
    assert _why(verify([chain[0], chain[0]])) == (2, AuditProblem.GAP, 1)


def test_verify_resumes_page_by_page() -> None:
    chain = _chain(10)
    verdict = None
    for start in range(0, 10, 3):
        verdict = verify(chain[start : start + 3], resume=verdict)
    assert verdict == verify(chain)
    broken = verify(chain[:2] + chain[3:4])
    assert verify(chain[4:], resume=broken) is broken, "a failed verdict stays failed"


def _why(verdict: AuditVerdict) -> tuple[int | None, AuditProblem | None, int]:
    assert not verdict.ok
    return verdict.bad_seq, verdict.problem, verdict.checked


# --- the store ----------------------------------------------------------------------------


async def test_chain_verifies_and_each_person_reads_their_own(
    store: Store, clock: SimulatedClock
) -> None:
    entries = await _fill(store, clock, 30)
    assert [e.seq for e in entries] == list(range(1, 31))
    assert entries[0].prev_hash == GENESIS
    assert all(e.prev_hash == p.hash for p, e in itertools.pairwise(entries))

    everything = await store.audit.list_audit()
    assert everything == entries, "what was appended is what reads back, hash included"
    verdict = await store.audit.verify_audit(page_size=7)
    assert (verdict.ok, verdict.checked, verdict.last_hash) == (True, 30, entries[-1].hash)

    a = entries[0].person_id
    assert a is not None
    mine = await store.audit.list_audit(person_id=a)
    assert mine == [e for e in entries if e.person_id == a]
    page = await store.audit.list_audit(person_id=a, after_seq=mine[2].seq, limit=2)
    assert page == mine[3:5]


async def test_data_is_stored_as_it_was_hashed(store: Store, clock: SimulatedClock) -> None:
    """Values JSON changes on the way to storage (tuples, datetimes, sets) are hashed in their
    stored form; values it cannot store faithfully are refused and append nothing."""
    when = clock.now() + timedelta(microseconds=7)
    entry = await store.audit.append_audit(
        person_id=None,
        kind="grant",
        actor="person",
        data={"scopes": ("email.read",), "until": when, "hosts": {"b.example", "a.example"}},
        now=clock.now(),
    )
    assert entry.data == {
        "scopes": ["email.read"],
        "until": when.isoformat(timespec="microseconds"),
        "hosts": ["a.example", "b.example"],
    }
    assert await store.audit.list_audit() == [entry]
    bad_data: list[tuple[Any, type[Exception]]] = [
        ({1: "x"}, TypeError),
        ({"x": math.inf}, ValueError),
    ]
    for bad, error in bad_data:
        with pytest.raises(error):
            await store.audit.append_audit(
                person_id=None, kind="grant", actor="person", data=bad, now=clock.now()
            )
    with pytest.raises(UsageError, match="at most"):
        await store.audit.append_audit(
            person_id=None, kind="k" * 33, actor="person", data={}, now=clock.now()
        )
    verdict = await store.audit.verify_audit()
    assert (verdict.ok, verdict.checked) == (True, 1)


async def test_an_entry_commits_or_rolls_back_with_its_transaction(
    store: Store, clock: SimulatedClock
) -> None:
    """append_in inside another write: if that write fails, the entry is gone with it, and
    the next append takes its seq, so the chain stays gap-free."""
    await _fill(store, clock, 2)

    def failing(conn: Any) -> None:
        append_in(
            conn, store.backend, person_id=None, kind="grant", actor="x", data={}, now=clock.now()
        )
        raise RuntimeError("the change this entry records failed")

    with pytest.raises(RuntimeError):
        await store.backend.write(failing)
    entry = await store.audit.append_audit(
        person_id=None, kind="effect", actor="x", data={}, now=clock.now()
    )
    assert entry.seq == 3
    assert (await store.audit.verify_audit()).ok


TAMPERING = [
    # (column, SQL expression for its forged value, what verification reports)
    ("data", "'{\"n\": 999}'", AuditProblem.HASH_MISMATCH),
    ("kind", "'forged'", AuditProblem.HASH_MISMATCH),
    ("actor", "'person'", AuditProblem.HASH_MISMATCH),
    ("at", "at + 1", AuditProblem.HASH_MISMATCH),
    ("person_id", "CASE WHEN person_id IS NULL THEN 'per_x' END", AuditProblem.HASH_MISMATCH),
    ("hash", "'" + "f" * 64 + "'", AuditProblem.HASH_MISMATCH),
    ("prev_hash", "'" + "e" * 64 + "'", AuditProblem.BROKEN_LINK),
]


async def test_tampering_with_any_field_of_any_row_is_found(
    store: Store, clock: SimulatedClock
) -> None:
    """One column of one row changed by hand (first, middle on a page boundary, last): the
    verifier reports that row's seq and why; restored, the chain verifies again."""
    await _fill(store, clock, 15)
    for seq in (1, 7, 8, 15):
        (original,) = _sql(store, "SELECT * FROM audit_log WHERE seq = :seq", seq=seq)
        for column, forged, problem in TAMPERING:
            _sql(store, f"UPDATE audit_log SET {column} = {forged} WHERE seq = :seq", seq=seq)
            verdict = await store.audit.verify_audit(page_size=7)
            assert (verdict.ok, verdict.bad_seq, verdict.problem) == (False, seq, problem), column
            assert verdict.checked == seq - 1
            sets = ", ".join(f"{c} = :{c}" for c in original if c != "seq")
            _sql(store, f"UPDATE audit_log SET {sets} WHERE seq = :seq", **original)
            assert (await store.audit.verify_audit(page_size=7)).ok, column


async def test_a_rehashed_forgery_breaks_the_next_link(store: Store, clock: SimulatedClock) -> None:
    """Someone who knows the algorithm changes an entry and recomputes its hash: the entry
    itself is consistent, but its successor no longer links to it."""
    entries = await _fill(store, clock, 5)
    target = replace(entries[2], data={"n": 2, "tool": "nothing to see"})
    _sql(
        store,
        "UPDATE audit_log SET data = :data, hash = :hash WHERE seq = 3",
        data=canonical_json(target.data),
        hash=hash_of(target),
    )
    verdict = await store.audit.verify_audit()
    assert (verdict.bad_seq, verdict.problem) == (4, AuditProblem.BROKEN_LINK)


async def test_deleted_rows_are_found(store: Store, clock: SimulatedClock) -> None:
    """A deleted first or middle row is a gap; a deleted tail shows against the head the
    last verification recorded (the documented limit of a hash chain on its own)."""
    await _fill(store, clock, 10)
    anchor = await store.audit.verify_audit()
    _sql(store, "DELETE FROM audit_log WHERE seq = 10")
    truncated = await store.audit.verify_audit()
    assert truncated.ok
    assert (truncated.last_seq, truncated.last_hash) != (anchor.last_seq, anchor.last_hash)

    _sql(store, "DELETE FROM audit_log WHERE seq = 6")
    verdict = await store.audit.verify_audit(page_size=4)
    assert (verdict.ok, verdict.bad_seq, verdict.problem) == (False, 6, AuditProblem.GAP)
    _sql(store, "DELETE FROM audit_log WHERE seq = 1")
    verdict = await store.audit.verify_audit(page_size=4)
    assert (verdict.ok, verdict.bad_seq, verdict.problem) == (False, 1, AuditProblem.GAP)


@pytest.fixture
async def two_stores(db_url: str) -> AsyncIterator[tuple[Store, Store]]:
    """Two stores on one database: two connection pools (two SQLite writers), as two
    processes have."""
    first = await Store.open(db_url)
    try:
        second = await Store.open(db_url)
        try:
            yield first, second
        finally:
            await second.close()
    finally:
        await first.close()


async def test_concurrent_appends_from_two_stores_stay_one_chain(
    two_stores: tuple[Store, Store], clock: SimulatedClock
) -> None:
    """4 writers, 50 appends each,, split over two stores, racing: every seq from 1 to 200 exactly
    once, each linked to its predecessor, and the chain verifies."""
    a, b = two_stores

    async def writer(store: Store, name: str) -> list[int]:
        seqs = []
        for i in range(50):
            entry = await store.audit.append_audit(
                person_id=None, kind="effect", actor=name, data={"i": i}, now=clock.now()
            )
            seqs.append(entry.seq)
        return seqs

    results = await asyncio.gather(*(writer((a, b)[w % 2], f"w{w}") for w in range(4)))
    assert sorted(seq for seqs in results for seq in seqs) == list(range(1, 201))
    assert all(seqs == sorted(seqs) for seqs in results)
    verdict = await b.audit.verify_audit(page_size=64)
    assert (verdict.ok, verdict.checked) == (True, 200)
    assert [e.actor for e in await a.audit.list_audit(limit=1000)].count("w3") == 50


async def test_pruning_history_keeps_the_audit_log(store: Store, clock: SimulatedClock) -> None:
    await _fill(store, clock, 4)
    await store.schedule.prune_history(before=clock.now() + timedelta(days=365))
    assert len(await store.audit.list_audit()) == 4
    assert (await store.audit.verify_audit()).ok
