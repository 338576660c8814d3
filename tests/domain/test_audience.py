"""The audience of a conversation: its one spelling, and who may hear what."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from steward.domain.audience import PRIVATE, PUBLIC, Audience, AudienceKind
from steward.errors import UsageError

FAMILY = Audience(kind=AudienceKind.GROUP, group="family")
WORK = Audience(kind=AudienceKind.GROUP, group="work")

audiences = st.one_of(
    st.just(PRIVATE),
    st.just(PUBLIC),
    st.from_regex(r"[a-z0-9][a-z0-9_.@-]{0,20}", fullmatch=True).map(
        lambda name: Audience(kind=AudienceKind.GROUP, group=name)
    ),
)


@given(audiences)
def test_parse_reads_back_what_str_writes(audience: Audience) -> None:
    assert Audience.parse(str(audience)) == audience


@pytest.mark.parametrize(
    "text", ["", "group", "group:", "everyone", "group:has space", "group:-dash", "Private"]
)
def test_bad_audiences_are_refused_with_the_accepted_forms(text: str) -> None:
    with pytest.raises(UsageError, match=r"private|group name"):
        Audience.parse(text)


def test_a_group_needs_a_name_and_only_a_group_has_one() -> None:
    with pytest.raises(UsageError):
        Audience(kind=AudienceKind.GROUP)
    with pytest.raises(UsageError):
        Audience(kind=AudienceKind.PUBLIC, group="family")


@pytest.mark.parametrize(
    ("listener", "kept_for", "heard"),
    [
        (PRIVATE, PRIVATE, True),
        (PRIVATE, FAMILY, True),
        (PRIVATE, PUBLIC, True),
        (FAMILY, PRIVATE, False),
        (FAMILY, FAMILY, True),
        (FAMILY, WORK, False),
        (FAMILY, PUBLIC, True),
        (PUBLIC, PRIVATE, False),
        (PUBLIC, FAMILY, False),
        (PUBLIC, PUBLIC, True),
    ],
)
def test_who_may_hear_what(listener: Audience, kept_for: Audience, heard: bool) -> None:
    assert listener.may_hear(kept_for) is heard


@given(audiences, audiences)
def test_public_hears_least_and_the_person_alone_hears_most(
    listener: Audience, kept_for: Audience
) -> None:
    """Whatever the public may hear, every audience may; whatever any audience may hear, the
    person alone may."""
    if PUBLIC.may_hear(kept_for):
        assert listener.may_hear(kept_for)
    if listener.may_hear(kept_for):
        assert PRIVATE.may_hear(kept_for)


@given(audiences, audiences)
def test_the_query_filter_agrees_with_the_rule(listener: Audience, kept_for: Audience) -> None:
    heard = listener.heard()
    assert (heard is None or str(kept_for) in heard) is listener.may_hear(kept_for)


def test_a_tasks_audience_is_private_by_default_and_public_when_unreadable() -> None:
    """Input written around the facade with a garbled audience fails closed: it is treated as
    the audience shown the least."""
    assert Audience.of_task({}) == PRIVATE
    assert Audience.of_task({"audience": "group:family"}) == FAMILY
    assert Audience.of_task({"audience": "the whole internet"}) == PUBLIC
    assert Audience.of_task({"audience": {"kind": "private"}}) == PUBLIC
