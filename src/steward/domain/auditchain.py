"""The audit log's hash chain: how an entry is hashed, and how a chain is verified.

Each entry's hash covers its own fields and the previous entry's hash, so changing, inserting
or deleting any entry breaks every hash after it. What a chain alone cannot show is a cut-off
*tail*: whoever can write the database can delete the newest entries, or rewrite a suffix and
rehash it. The verdict's ``last_seq``/``last_hash`` are the anchor to record elsewhere (a note,
a backup, another host) so that a later verification can be compared against it.

Pure functions: no I/O. The store appends and pages entries through :func:`verify`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from steward.domain import AuditEntry

GENESIS = "0" * 64
"""The ``prev_hash`` of the first entry."""


class AuditProblem(StrEnum):
    GAP = "gap in seq"
    """An entry is missing (deleted) or out of order: ``bad_seq`` is the one expected."""
    BROKEN_LINK = "broken link"
    """``prev_hash`` is not the hash of the entry before."""
    HASH_MISMATCH = "hash mismatch"
    """The stored hash is not the hash of the entry's fields."""


@dataclass(kw_only=True, frozen=True)
class AuditVerdict:
    """What verifying (part of) the chain found."""

    ok: bool
    """True if every entry checked is intact and linked."""
    checked: int
    """How many entries were checked and found good."""
    last_seq: int = 0
    """Seq of the last good entry (0: none yet): with :attr:`last_hash`, the chain's head to
    record elsewhere, since a deleted tail is only visible against such an anchor."""
    last_hash: str = GENESIS
    """Hash of the last good entry."""
    bad_seq: int | None = None
    """The first seq that failed (None when ok)."""
    problem: AuditProblem | None = None
    """Why it failed."""


def canonical_json(value: Any) -> str:
    """One text for one value: sorted keys, no whitespace, UTF-8 as is, no NaN/Infinity.

    Dict keys must be strings: JSON would turn ``{1: …}`` into ``{"1": …}``, and the text
    read back would then sort (and hash) differently from the text written.
    """
    return json.dumps(
        value,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
        default=_jsonable,
    )


def normalize(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` as it reads back from storage (tuples become lists, datetimes ISO text), so
    the hash computed at append time is the hash recomputed at verification."""
    _check_keys(data)
    loaded: dict[str, Any] = json.loads(canonical_json(data))
    return loaded


def entry_hash(
    prev_hash: str,
    seq: int,
    person_id: str | None,
    at: datetime,
    kind: str,
    actor: str,
    data: dict[str, Any],
) -> str:
    """SHA-256 (hex) of the entry's fields and its predecessor's hash.

    All fields go into one canonical JSON object, so no choice of values can make two
    different entries encode to the same bytes.
    """
    fields = {
        "prev_hash": prev_hash,
        "seq": seq,
        "person_id": person_id,
        "at": _instant(at),
        "kind": kind,
        "actor": actor,
        "data": data,
    }
    return hashlib.sha256(canonical_json(fields).encode()).hexdigest()


def hash_of(entry: AuditEntry) -> str:
    """The hash ``entry`` should carry, recomputed from its fields."""
    return entry_hash(
        entry.prev_hash,
        entry.seq,
        entry.person_id,
        entry.at,
        entry.kind,
        entry.actor,
        entry.data,
    )


def verify(entries: Iterable[AuditEntry], *, resume: AuditVerdict | None = None) -> AuditVerdict:
    """Check entries in seq order: gap-free from 1 (or from ``resume``), each linked to the one
    before, each hash matching its fields. Stops at the first bad entry.

    ``resume`` is the verdict of the previous page, so a long chain is verified page by page
    without holding it all in memory.
    """
    state = resume or AuditVerdict(ok=True, checked=0)
    if not state.ok:
        return state
    checked, last_seq, last_hash = state.checked, state.last_seq, state.last_hash
    for entry in entries:
        problem: AuditProblem | None = None
        if entry.seq != last_seq + 1:
            problem = AuditProblem.GAP
        elif entry.prev_hash != last_hash:
            problem = AuditProblem.BROKEN_LINK
        elif entry.hash != hash_of(entry):
            problem = AuditProblem.HASH_MISMATCH
        if problem is not None:
            bad = last_seq + 1 if problem is AuditProblem.GAP else entry.seq
            return AuditVerdict(
                ok=False,
                checked=checked,
                last_seq=last_seq,
                last_hash=last_hash,
                bad_seq=bad,
                problem=problem,
            )
        checked, last_seq, last_hash = checked + 1, entry.seq, entry.hash
    return AuditVerdict(ok=True, checked=checked, last_seq=last_seq, last_hash=last_hash)


def _instant(at: datetime) -> str:
    if at.tzinfo is None:
        raise ValueError("audit times must be timezone-aware")
    return at.astimezone(UTC).isoformat(timespec="microseconds")


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return _instant(value)
    if isinstance(value, (set, frozenset)):
        # sorted, so the same set always hashes the same
        return sorted(value, key=canonical_json)
    raise TypeError(f"audit data cannot hold {type(value).__name__} values: {value!r}")


def _check_keys(value: Any) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"audit data keys must be strings, not {key!r}")
            _check_keys(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _check_keys(item)
