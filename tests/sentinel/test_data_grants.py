"""The ``data`` grant constraint: which kinds of the person's sensitive data an action it covers
may carry out. Checked at the door; it narrows nothing, and only the data-flow step reads it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from steward.domain.actions import Verdict
from steward.domain.roles import DataClass
from steward.errors import UsageError
from steward.sentinel.grants import constraints_hold
from support.sentinel import World, request


async def test_a_grant_names_known_data_kinds_only(w: World) -> None:
    stored = await w.store.authority.add_grant(
        w.grant("email.send", constraints={"data": ["Card", "health"]})
    )
    assert stored.constraints == {"data": ["card", "health"]}
    with pytest.raises(UsageError, match=r"unknown data kinds \['cards'\]"):
        await w.store.authority.add_grant(w.grant("email.send", constraints={"data": ["cards"]}))


def test_the_data_constraint_narrows_nothing() -> None:
    assert constraints_hold({"data": ["card"]}, "send_email", {"to": "a@b.example"})


async def test_sensitive_data_leaves_only_under_a_grant_naming_its_kind(w: World) -> None:
    await w.store.authority.add_grant(w.grant("email.send"))
    sent = request(w, args={"to": "ann@example.com", "body": "4111 1111 1111 1111"})
    card = replace(sent, data_classes=(DataClass.CARD,))
    decided = await w.sentinel.check(card)
    assert (decided.verdict, decided.rule) == (Verdict.ASK, "provenance")
    assert "your sensitive data would leave (card)" in decided.reason
    await w.store.authority.add_grant(w.grant("email.send", constraints={"data": ["card"]}))
    decided = await w.sentinel.check(card)
    assert decided.verdict is Verdict.ALLOW
    assert decided.vouched
