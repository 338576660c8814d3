"""What the Matrix channel decides without a server: a room's audience, what a reply decides,
how a notification looks."""

from __future__ import annotations

import pytest

from steward.connectors.matrix.room import (
    audience_of,
    decision_in,
    own_words,
    plain_text,
    reply_target,
    room_group,
    text_content,
)
from steward.domain.audience import PRIVATE, Audience
from steward.domain.channel import OutboundMessage

BOT, ME, EVE = "@bot:example.org", "@me:example.org", "@eve:example.org"


def test_a_room_of_the_bot_and_the_person_alone_is_private_else_the_rooms_group() -> None:
    room = "!AbCd12:example.org"
    assert audience_of(room, members={BOT, ME}, bot=BOT, person=ME) == PRIVATE
    assert audience_of(room, members={BOT}, bot=BOT, person=ME) == PRIVATE
    group = audience_of(room, members={BOT, ME, EVE}, bot=BOT, person=ME)
    assert group == Audience.parse("group:AbCd12@example.org")
    assert group.may_hear(PRIVATE) is False
    # a room id that is no group name still gets a group of its own, the same each time
    odd = "!a b:c:8448"
    named = room_group(odd)
    assert named == room_group(odd) != room_group("!a b:c:8449")
    assert Audience.parse(f"group:{named}").group == named


@pytest.mark.parametrize(
    ("text", "decided"),
    [
        ("approve", ("approve", "once")),
        ("Yes!", ("approve", "once")),
        ("> <@bot:example.org> May I send?\n\nApprove for this task", ("approve", "task")),
        ("approve always", ("approve", "always")),
        ("No thanks", ("deny", "once")),
        ("deny", ("deny", "once")),
        ("approve the other one", None),
        ("maybe later", None),
        ("", None),
    ],
)
def test_what_a_reply_decides(text: str, decided: tuple[str, str] | None) -> None:
    assert decision_in(text) == decided


def test_a_reply_names_the_event_it_answers_and_its_own_words() -> None:
    content = {"m.relates_to": {"m.in_reply_to": {"event_id": "$abc"}}}
    assert reply_target(content) == "$abc"
    assert reply_target({}) is None
    assert reply_target({"m.relates_to": {"rel_type": "m.replace"}}) is None
    assert own_words("> <@bot:x> quoted\n> more\n\nmine") == "mine"


def test_a_notification_reads_as_words_with_a_simple_formatted_body() -> None:
    message = OutboundMessage(
        key="k",
        person_id="p",
        kind="approval",
        title="May I send this <email>?",
        body="To dana@example.org: Thursday works",
        link="/inbox/apr_1",
        ref="apr_1",
    )
    text = plain_text(message)
    assert text.splitlines()[0] == "May I send this <email>?"
    assert 'Reply to this message with "approve" or "deny"' in text
    assert "/inbox/apr_1" in text
    content = text_content(text, title=True, extra="x")
    assert content["msgtype"] == "m.text"
    assert content["body"] == text
    assert content["formatted_body"].startswith("<b>May I send this &lt;email&gt;?</b><br>")
    assert content["extra"] == "x"
