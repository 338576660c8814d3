"""The runtime's own reports read as plain words: a failed task says which task stopped and
why in a short sentence, never a raw exception, an id or a structure."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from steward.domain.runtime_reports import task_failed

NOW = datetime(2026, 1, 5, 9, tzinfo=UTC)


def _failed(error: str, *, gave_up: bool = False) -> str:
    report = task_failed(
        person_id="per_1",
        goal_id=None,
        task_id="tsk_1",
        title="Compare prices",
        error=error,
        gave_up=gave_up,
        now=NOW,
    )
    return f"{report.what}\n{report.why}"


def test_a_plain_reason_is_quoted_after_the_task_name() -> None:
    text = _failed("the shop's page was gone")
    assert text.splitlines()[0] == "The task 'Compare prices' stopped: the shop's page was gone"


@pytest.mark.parametrize(
    ("error", "words"),
    [
        ("KeyError: 'price'", "something went wrong inside Steward"),
        ("TimeoutError: ", "it took too long"),
        (
            "gave up after 5 attempts: httpx.ConnectError: [Errno 111] Connection refused",
            "a service it needed could not be reached",
        ),
        ("no harness for task kind 'x.y'", "Steward does not know how to do this kind of work"),
        ('{"status": 500, "detail": "boom"}', "something went wrong inside Steward"),
        ("Traceback (most recent call last):\n  File ...", "something went wrong inside Steward"),
        ("waiting on tsk_01jabcdefghjkmnpqrstv failed", "waiting on another task failed"),
    ],
)
def test_raw_errors_become_a_short_reason_in_words(error: str, words: str) -> None:
    text = _failed(error, gave_up=error.startswith("gave up"))
    assert text.splitlines()[0] == f"The task 'Compare prices' stopped: {words}"
    for raw in ("Error", "{", "[Errno", "tsk_", "Traceback", "attempts:", "'x.y'"):
        assert raw not in text


def test_a_long_reason_is_cut_at_a_word() -> None:
    first = _failed("the page " + "was very long and " * 20).splitlines()[0]
    assert len(first) <= 160
    assert first.endswith("…")
