"""A connector's tool is bound by the one connection it goes through: the connection of its
kind that its ACCOUNT argument names (the only one, when none is named) must offer every scope
it needs, and its recipients and calendars must be within that connection's bounds — whatever
rules or grants say, and whatever other connections allow."""

from __future__ import annotations

from typing import Any

import pytest

from steward.domain.actions import ActionRequest, EffectClass, Verdict
from steward.domain.authority import Connection, ConnectionBounds, Rule, RuleMode
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.domain.roles import Role
from steward.store import Store
from support.sentinel import World

SEND_ROLES = {"account": Role.ACCOUNT, "to": Role.RECIPIENT, "body": Role.CONTENT}
BOOK_ROLES = {
    "account": Role.ACCOUNT,
    "calendar": Role.CALENDAR,
    "attendees": Role.RECIPIENT,
    "title": Role.FREE_TEXT,
}


async def connect(
    w: World,
    kind: str,
    name: str,
    scopes: tuple[str, ...],
    **bounds: Any,
) -> Connection:
    return await w.store.authority.add_connection(
        Connection(
            id=new_id("con"),
            person_id=w.me.id,
            kind=kind,
            name=name,
            scopes=scopes,
            created_at=w.clock.now(),
            bounds=ConnectionBounds.from_json(bounds),
        )
    )


async def decide(
    w: World,
    args: dict[str, Any],
    *,
    tool: str = "mail_send",
    connector: str = "mail",
    scopes: tuple[str, ...] = ("mail.send",),
    roles: dict[str, Role] | None = None,
) -> tuple[Verdict, str]:
    decided = await w.sentinel.check(
        ActionRequest(
            person_id=w.me.id,
            task_id=w.task,
            goal_id=None,
            tool=tool,
            args=args,
            effect=EffectClass.READ if tool == "mail_search" else EffectClass.EXTERNAL,
            scopes=scopes,
            source="python",
            wake_reason="start",
            roles=SEND_ROLES if roles is None else roles,
            connector=connector,
        )
    )
    return decided.verdict, decided.reason


async def test_no_account_of_the_kind_denies_even_when_another_kind_offers_the_scope(
    w: World,
) -> None:
    # the fixture's "email" connection offers email.send; a mail tool needing mail.send through
    # a mail account finds none
    await connect(w, "calendar", "cal", ("mail.send",))
    verdict, reason = await decide(w, {"to": "ann@example.com", "body": "hi"})
    assert verdict is Verdict.DENY
    assert reason == "no mail account is connected"


async def test_a_read_only_account_cannot_send_whatever_a_rule_says(w: World) -> None:
    await connect(w, "mail", "home", ("mail.read", "mail.organize"))
    await w.store.authority.add_rule(
        rule(w, "mail.send", RuleMode.DO)  # the person's own "do" rule does not lift it
    )
    verdict, reason = await decide(w, {"to": "ann@example.com", "body": "hi"})
    assert verdict is Verdict.DENY
    assert reason == "your connection 'home' does not allow mail.send"
    read, _ = await decide(w, {}, tool="mail_search", scopes=("mail.read",))
    assert read is Verdict.ALLOW


async def test_two_accounts_need_the_account_named_and_each_keeps_its_own_scopes(
    w: World,
) -> None:
    await connect(w, "mail", "Work", ("mail.read", "mail.send"))
    await connect(w, "mail", "home", ("mail.read",))
    verdict, reason = await decide(w, {"to": "ann@example.com", "body": "hi"})
    assert verdict is Verdict.DENY
    assert "several mail accounts are connected (Work, home)" in reason
    # named (case does not matter): work may send, after the person approves
    assert (await decide(w, {"account": "work", "to": "ann@example.com"}))[0] is Verdict.ASK
    verdict, reason = await decide(w, {"account": "home", "to": "ann@example.com"})
    assert (verdict, reason) == (Verdict.DENY, "your connection 'home' does not allow mail.send")
    verdict, reason = await decide(w, {"account": "school", "to": "ann@example.com"})
    assert (verdict, reason) == (Verdict.DENY, "no mail account named school is connected")


async def test_a_disconnected_account_allows_nothing(w: World) -> None:
    con = await connect(w, "mail", "home", ("mail.read",))
    assert (await decide(w, {}, tool="mail_search", scopes=("mail.read",)))[0] is Verdict.ALLOW
    await w.store.authority.disconnect(con.id, person_id=w.me.id, now=w.clock.now())
    verdict, reason = await decide(w, {}, tool="mail_search", scopes=("mail.read",))
    assert (verdict, reason) == (Verdict.DENY, "no mail account is connected")


@pytest.mark.parametrize(
    ("to", "allowed"),
    [
        ("dana@example.com", True),
        ("DANA@Example.COM", True),
        ("ops@team.example.com", True),  # a subdomain of an allowed domain
        ("boss@partner.test", True),  # a named address
        ("mallory@evil.test", False),
        ("dana@example.com.evil.test", False),
        (["dana@example.com", "mallory@evil.test"], False),  # every recipient must be inside
        ("Dana <dana@example.com>", False),  # cannot be read as one address: denied
    ],
)
async def test_recipient_bounds_hold_whatever_grants_say(w: World, to: Any, allowed: bool) -> None:
    await connect(
        w,
        "mail",
        "work",
        ("mail.send",),
        domains=["example.com"],
        recipients=["boss@partner.test"],
    )
    await w.store.authority.add_grant(w.grant("mail.send"))  # standing, unconstrained
    verdict, reason = await decide(w, {"to": to, "body": "hi"})
    if allowed:
        assert verdict is Verdict.ALLOW
    else:
        assert verdict is Verdict.DENY
        unreadable = "<" in str(to)
        assert ("cannot be read as one plain address" if unreadable else "'work' may not") in reason


async def test_a_calendar_bound_holds_and_the_calendar_must_be_named(w: World) -> None:
    await connect(w, "calendar", "cal", ("calendar.write",), calendars=["Work"])
    await w.store.authority.add_grant(w.grant("calendar.write"))

    async def book(**args: Any) -> tuple[Verdict, str]:
        return await decide(
            w,
            args,
            tool="calendar_create",
            connector="calendar",
            scopes=("calendar.write",),
            roles=BOOK_ROLES,
        )

    assert (await book(calendar="work", title="standup"))[0] is Verdict.ALLOW
    verdict, reason = await book(calendar="Home", title="standup")
    assert verdict is Verdict.DENY
    assert "only reaches the calendars work" in reason
    assert (await book(title="standup"))[0] is Verdict.DENY  # the default calendar: unnamed


async def test_a_grant_for_one_calendar_covers_no_other(
    store: Store, clock: SimulatedClock, w: World
) -> None:
    await connect(w, "calendar", "cal", ("calendar.write",))
    await store.authority.add_grant(w.grant("calendar.write", constraints={"calendars": ["Work"]}))

    async def book(**args: Any) -> Verdict:
        verdict, _ = await decide(
            w,
            args,
            tool="calendar_create",
            connector="calendar",
            scopes=("calendar.write",),
            roles=BOOK_ROLES,
        )
        return verdict

    assert await book(calendar="WORK", title="standup") is Verdict.ALLOW
    assert await book(calendar="Home", title="standup") is Verdict.ASK
    assert await book(title="standup") is Verdict.ASK


def rule(w: World, pattern: str, mode: RuleMode) -> Rule:
    return Rule(
        id=new_id("rul"),
        person_id=w.me.id,
        pattern=pattern,
        mode=mode,
        priority=100,
        created_at=w.clock.now(),
    )


def test_connection_bounds_refuse_what_they_cannot_read() -> None:
    with pytest.raises(ValueError, match="unknown connection bounds"):
        ConnectionBounds.from_json({"recipient": ["a@b.c"]})
    with pytest.raises(ValueError, match="must be a list of names"):
        ConnectionBounds.from_json({"domains": "example.com"})
    bounds = ConnectionBounds.from_json({"domains": [" Example.COM "]})
    assert bounds.domains == ("example.com",)
    assert ConnectionBounds.from_json(bounds.to_json()) == bounds
