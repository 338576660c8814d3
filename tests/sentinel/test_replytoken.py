"""Reply tokens signed and checked (pure): bound to the approval, its arguments, the person,
the channel and the expiry; and what a reply says (its first line of the person's own words)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest

from steward.connectors.mail.person import decision_in, unquoted
from steward.domain.replytoken import ReplyToken
from steward.sentinel.replytoken import (
    found_in,
    new_key,
    new_token_id,
    refusal,
    signature,
    text_of,
)

NOW = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
KEY = new_key()
TOKEN = ReplyToken(
    id=new_token_id(),
    person_id="per_1",
    channel_id="chn_1",
    approval_id="apr.tsk_1.3",
    args_hash="h" * 64,
    expires_at=NOW + timedelta(days=1),
    created_at=NOW,
)


def check(token: ReplyToken = TOKEN, sig: str | None = None, **kw: object) -> str | None:
    args: dict[str, object] = {
        "now": NOW,
        "approval_args_hash": "h" * 64,
        "approval_pending": True,
    } | kw
    return refusal(KEY, token, sig or signature(KEY, token), **args)  # type: ignore[arg-type]


def test_a_fresh_token_decides_and_reads_back_from_a_subject() -> None:
    written = text_of(KEY, TOKEN)
    assert len(written) < 40
    assert found_in(f"Re: Send the report? {written}") == [(TOKEN.id, signature(KEY, TOKEN))]
    assert check() is None


@pytest.mark.parametrize(
    "change",
    [
        {"approval_id": "apr.tsk_1.4"},
        {"person_id": "per_2"},
        {"channel_id": "chn_2"},
        {"args_hash": "x" * 64},
        {"expires_at": NOW + timedelta(days=30)},
        {"id": new_token_id()},
    ],
)
def test_a_token_moved_to_anything_else_is_forged(change: dict[str, object]) -> None:
    """Someone who can write the table of issued tokens still cannot point a signature at
    another approval, person, channel, argument set or expiry."""
    moved = dataclasses.replace(TOKEN, **change)  # type: ignore[arg-type]
    assert check(moved, signature(KEY, TOKEN)) == "forged"


def test_other_key_or_made_up_signature_is_forged() -> None:
    assert check(sig=signature(new_key(), TOKEN)) == "forged"
    assert check(sig="A" * 16) == "forged"


def test_expired_used_decided_changed() -> None:
    assert check(now=TOKEN.expires_at) == "expired"
    assert check(dataclasses.replace(TOKEN, used_at=NOW)) == "used"
    assert check(approval_pending=False) == "decided"
    assert check(approval_args_hash="y" * 64) == "changed"


@pytest.mark.parametrize(
    ("text", "decided"),
    [
        ("approve", ("approve", "once")),
        ("Yes!\n\nOn Mon, Steward wrote:\n> Send it?", ("approve", "once")),
        ("  OK, thanks", ("approve", "once")),
        ("Approve for this task", ("approve", "task")),
        ("approve always.", ("approve", "always")),
        ("No.", ("deny", "once")),
        ("DENY - not this one", ("deny", "once")),
        ("\n\nreject\n", ("deny", "once")),
        ("approve the other thing", None),
        ("maybe later", None),
        ("> approve\nhmm", None),
        ("", None),
    ],
)
def test_what_a_reply_decides(text: str, decided: tuple[str, str] | None) -> None:
    assert decision_in(text) == decided


def test_quoted_lines_and_signature_are_not_the_persons_words() -> None:
    text = "Thanks, and book it.\nAna\n--\nAna Example\n> earlier"
    assert unquoted(text) == "Thanks, and book it.\nAna"
    assert unquoted("Sure\n\nLe lun. 7 déc., Steward a écrit :\n> hi") == "Sure"
