"""Reading the time a question names, relative to a fixed moment asked."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from steward.memory.timeframe import TimeFrame, parse_timeframe

AT = datetime(2026, 7, 15, 12, 0, tzinfo=UTC)
"""A Wednesday."""


def day(year: int, month: int, date: int) -> datetime:
    return datetime(year, month, date, tzinfo=UTC)


@pytest.mark.parametrize(
    ("question", "start", "end"),
    [
        ("where did I live last May?", day(2026, 5, 1), day(2026, 6, 1)),
        ("what did we do in March", day(2026, 3, 1), day(2026, 4, 1)),
        ("what did I eat yesterday", day(2026, 7, 14), day(2026, 7, 15)),
        ("anything today?", day(2026, 7, 15), day(2026, 7, 16)),
        ("who did I meet last week", day(2026, 7, 6), day(2026, 7, 13)),
        ("what did I buy two months ago", day(2026, 5, 1), day(2026, 6, 1)),
        ("the film I saw 3 days ago", day(2026, 7, 12), day(2026, 7, 13)),
        ("where did I travel in 2025", day(2025, 1, 1), day(2026, 1, 1)),
        ("what happened in May 2025", day(2025, 5, 1), day(2025, 6, 1)),
        ("last month's budget", day(2026, 6, 1), day(2026, 7, 1)),
        ("去年五月我住在哪里", day(2025, 5, 1), day(2025, 6, 1)),
        ("上个月我买了什么", day(2026, 6, 1), day(2026, 7, 1)),
        ("上周见了谁", day(2026, 7, 6), day(2026, 7, 13)),
        ("昨天吃了什么", day(2026, 7, 14), day(2026, 7, 15)),
        ("三月份去了哪里", day(2026, 3, 1), day(2026, 4, 1)),
        ("两个月前说了什么", day(2026, 5, 1), day(2026, 6, 1)),
        ("2025年3月", day(2025, 3, 1), day(2025, 4, 1)),
    ],
)
def test_a_named_time_is_a_window_relative_to_the_moment_asked(
    question: str, start: datetime, end: datetime
) -> None:
    frame = parse_timeframe(question, AT)
    assert frame is not None
    assert (frame.start, frame.end) == (start, end)


@pytest.mark.parametrize(
    ("question", "at", "start"),
    [
        # asked in January, last December is the previous year's
        ("what did I give for last December's holidays", day(2026, 1, 10), day(2025, 12, 1)),
        # asked in May, last May is a year ago; "in May" is this one
        ("where did I live last May", day(2026, 5, 20), day(2025, 5, 1)),
        ("where am I in May", day(2026, 5, 20), day(2026, 5, 1)),
        # a month not yet come this year is last year's, but the next one in a question of plans
        ("what did I do in November", day(2026, 5, 20), day(2025, 11, 1)),
        ("what are our plans for November?", day(2026, 5, 20), day(2026, 11, 1)),
        ("where will we be next May", day(2026, 5, 20), day(2027, 5, 1)),
        ("上个月", day(2026, 1, 10), day(2025, 12, 1)),
    ],
)
def test_months_across_the_turn_of_the_year(question: str, at: datetime, start: datetime) -> None:
    frame = parse_timeframe(question, at)
    assert frame is not None
    assert frame.start == start


def test_windows_follow_the_persons_time_zone() -> None:
    # 01:00 on the 15th in Tokyo is still the 14th in UTC: "yesterday" is Tokyo's 14th
    frame = parse_timeframe(
        "what did I say yesterday", day(2026, 7, 14).replace(hour=16), "Asia/Tokyo"
    )
    assert frame is not None
    assert frame.start == datetime(2026, 7, 13, 15, tzinfo=UTC)
    assert frame.end == datetime(2026, 7, 14, 15, tzinfo=UTC)


@pytest.mark.parametrize("question", ["what did I say at the start", "一开始我想要什么"])
def test_the_start_is_the_earliest_remembered(question: str) -> None:
    frame = parse_timeframe(question, AT)
    assert frame is not None
    assert frame.earliest


@pytest.mark.parametrize(
    ("question", "anchor", "before"),
    [
        ("where did I live before the move?", "move", True),
        ("what changed after the wedding", "wedding", False),
        ("搬家之前我住在哪里", "搬家", True),
    ],
)
def test_an_event_named_as_the_time_is_an_anchor(question: str, anchor: str, before: bool) -> None:
    frame = parse_timeframe(question, AT)
    assert frame is not None
    assert (frame.anchor, frame.before_anchor) == (anchor, before)


@pytest.mark.parametrize(
    "question", ["May I book the table?", "what does she like to eat", "who is my manager"]
)
def test_no_time_named_is_none(question: str) -> None:
    assert parse_timeframe(question, AT) is None


def test_the_rest_of_the_question_is_what_to_search_for() -> None:
    frame = parse_timeframe("where did I live last May?", AT)
    assert frame is not None
    assert frame.remainder("where did I live last May?") == "where did I live ?"
    assert TimeFrame(phrase="yesterday").remainder("yesterday") == "yesterday"
