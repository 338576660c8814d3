"""What the dashboard says, in words: times in the person's zone, money, titles, statuses,
waits, masked secrets, and the sentinel's reasons as sentences."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from steward.domain import Step, TaskStatus
from steward.domain.task import WaitCondition
from steward.domain.wording import reason_in_words
from steward.web import words
from steward.web.steps import ShownStep, shown, task_status

NOW = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)  # a Tuesday
BERLIN = ZoneInfo("Europe/Berlin")


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (0.0, "$0"),
        (0.00004, "less than $0.01"),
        (0.0049, "less than $0.01"),
        (0.42, "$0.42"),
        (1234.5, "$1,234.50"),
    ],
)
def test_money_has_sensible_precision(value: float, said: str) -> None:
    assert words.money(value) == said
    assert "0.0000" not in words.money(value)


@pytest.mark.parametrize(
    ("then", "said"),
    [
        (NOW - timedelta(seconds=10), "just now"),
        (NOW + timedelta(hours=2), "in 2 hours"),
        (NOW - timedelta(minutes=3), "3 minutes ago"),
        (datetime(2026, 11, 30, 17, 4, tzinfo=UTC), "yesterday 18:04"),  # Berlin is UTC+1
        (datetime(2026, 12, 3, 9, 0, tzinfo=UTC), "Thursday 10:00"),
        (datetime(2026, 12, 1, 21, 0, tzinfo=UTC), "today 22:00"),
        (datetime(2026, 12, 1, 23, 30, tzinfo=UTC), "tomorrow 00:30"),  # the zone's day
        (datetime(2026, 10, 2, 8, 0, tzinfo=UTC), "2 Oct 10:00"),  # summer time
        (datetime(2027, 3, 1, 8, 0, tzinfo=UTC), "1 Mar 2027 09:00"),
    ],
)
def test_times_are_in_the_persons_zone_and_relative_where_natural(
    then: datetime, said: str
) -> None:
    assert words.when(then, BERLIN, NOW) == said


def test_the_exact_time_names_the_zone_and_an_unknown_zone_reads_as_utc() -> None:
    assert words.exact(NOW, BERLIN) == "2026-12-01 10:30 CET"
    assert words.zone("Nowhere/Atlantis") == ZoneInfo("UTC")


def test_titles_are_cut_at_a_word_with_an_ellipsis() -> None:
    title = "Reply to Dana about Thursday (dana.park@acme.example): Thursday at 10:00 works"
    cut = words.cut(title, 40)
    assert cut.endswith("…")
    assert len(cut) <= 40
    assert title.startswith(cut[:-1])
    assert title[len(cut) - 1] == " "  # the cut fell between words
    assert words.cut("Short title", 40) == "Short title"


def test_statuses_in_words_and_failures_never_look_like_success() -> None:
    assert words.status_words("succeeded") == "done"
    assert words.status_words("dead_lettered") == "gave up"
    for bad in ("failed", "cancelled", "denied", "dead_lettered", "deny", "expired"):
        assert words.status_class(bad) == "bad", bad
    assert words.status_class("succeeded") == "good"


def test_waits_are_sentences_and_only_while_waiting() -> None:
    until = WaitCondition(kind="until", until=datetime(2026, 12, 3, 9, 0, tzinfo=UTC))
    assert words.waits_for(until, "waiting", BERLIN, NOW) == "waits until Thursday 10:00"
    mail = WaitCondition(kind="event", event_type="email.received", match={"from": "dana@x.io"})
    assert words.waits_for(mail, "waiting", BERLIN, NOW) == (
        "waits for a new e-mail from dana@x.io"
    )
    assert words.waits_for(mail, "cancelled", BERLIN, NOW) == ""  # a cancelled task waits not
    approval = WaitCondition(kind="approval", ref="apr_1")
    assert words.waits_for(approval, "waiting", BERLIN, NOW) == "waits for your approval"


def test_secrets_are_masked_in_arguments_and_lines() -> None:
    args = {
        "url": "https://api.x.io/send",
        "headers": {"Authorization": "Bearer abc123", "Content-Type": "application/json"},
        "body": "token is {{secret:mail}}",
    }
    shown = words.masked(args)
    assert shown["headers"]["Authorization"] == words.MASK
    assert shown["headers"]["Content-Type"] == "application/json"
    assert "{{secret:mail}}" not in shown["body"]
    line = "http_fetch(headers={'Authorization': 'Bearer {{secret:demo-mail}}'})"
    assert "Bearer" not in words.masked_text(line)
    assert "demo-mail" not in words.masked_text(line)


@pytest.mark.parametrize(
    ("reason", "said"),
    [
        (
            "rule 'mail.send' (ask)",
            "You asked me to check with you before sending mail.",
        ),
        (
            "rule 'api.call' (do_if_preapproved): calls to my accounts run only if I "
            "pre-approved them; no grant covers it",
            "You asked me to check with you before calling web services with your accounts, "
            "unless you approved it in advance, and nothing you approved covers this (you "
            "said: “calls to my accounts run only if I pre-approved them”).",
        ),
        (
            "rule 'mail.send' (do_if_preapproved); pre-approved by grant grt_1",
            "You asked me to check with you before sending mail, unless you approved it in "
            "advance, and you had approved this in advance.",
        ),
        (
            "rule 'mcp__github__*' (deny)",
            "You told me never to do this (using any mcp__github__ tool).",
        ),
        (
            "send_email acts on the world and no grant covers it",
            "This acts outside Steward on your behalf, and you have not approved anything "
            "like it in advance.",
        ),
        ("external action", "External action"),
    ],
)
def test_sentinel_reasons_read_as_sentences(reason: str, said: str) -> None:
    assert reason_in_words(reason) == said
    assert "rule '" not in reason_in_words(reason)


@pytest.mark.parametrize(
    ("kind", "summary", "data", "said_no", "said"),
    [
        (
            "activation",
            "woke for timer, 8 steps: succeeded",
            {},
            False,
            "worked on its schedule: done",
        ),
        (
            "activation",
            "woke for approval, 5 steps: succeeded",
            {},
            True,
            "worked after your answer: stopped: you said no",
        ),
        (
            "activation",
            "woke for created, 4 steps: waiting",
            {},
            True,
            "worked when it was asked: waiting",
        ),
        (
            "activation",
            "woke for retry, 0 steps: running",
            {},
            False,
            "worked again after a problem: working",
        ),
        (
            "activation",
            "woke for lease lost, 1 step: failed",
            {},
            False,
            "worked for lease lost: failed",
        ),
        (
            "result",
            "text=Sent Dana a reply",
            {"text": "Sent Dana a reply"},
            False,
            "Sent Dana a reply",
        ),
        ("firing", "trigger hourly fired", {"trigger_id": "trg_1"}, False, "trigger hourly fired"),
    ],
)
def test_a_goal_timeline_entry_in_words(
    kind: str, summary: str, data: dict[str, str], said_no: bool, said: str
) -> None:
    assert words.timeline_text(kind, summary, data, said_no=said_no) == said


def test_a_task_whose_action_the_person_denied_reads_stopped_not_done() -> None:
    def step(seq: int, observation: str) -> ShownStep:
        return shown(
            Step(
                task_id="tsk_1",
                seq=seq,
                activation_id="act_1",
                kind="tool",
                output={"call_id": "c", "name": "office_mail_send", "observation": observation},
                created_at=NOW,
            )
        )

    denied = [step(1, "not done: the person denied it (not now)")]
    assert denied[0].said_no
    assert denied[0].failed
    assert task_status(TaskStatus.SUCCEEDED, denied) == "said_no"
    assert words.status_words("said_no") == "stopped: you said no"
    assert words.status_class("said_no") == "bad"
    # refused by a rule, or failed and then finished: the task is done, said no by nobody
    other = [step(1, "denied: rule 'mail.send' (deny)"), step(2, "sent")]
    assert task_status(TaskStatus.SUCCEEDED, other) == "succeeded"
    assert task_status(TaskStatus.FAILED, denied) == "failed"
