"""Each provider's own scheme and payloads: GitHub's signature (checked against the example
GitHub documents), GitLab's token, and deliveries read as typed events with semantic keys."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from steward.connectors.codehost.connector import CodeHostSettings
from steward.connectors.codehost.events import MAX_TEXT, moment
from steward.connectors.codehost.github import PROVIDER as GITHUB
from steward.connectors.codehost.github import signature
from steward.connectors.codehost.gitlab import PROVIDER as GITLAB
from support.codehost import (
    HEAD_SHA,
    github_check_run,
    github_issue_comment,
    github_ping,
    github_pull_request,
    github_workflow_run,
    gitlab_merge_request,
    gitlab_note,
    gitlab_pipeline,
)


def lower(headers: dict[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items()}


def test_github_signature_matches_githubs_documented_example() -> None:
    # "Validating webhook deliveries": this secret and payload give this signature
    assert signature("It's a Secret to Everybody", b"Hello, World!") == (
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    )


def test_github_takes_only_a_sha256_signature_of_this_body_under_this_secret() -> None:
    body = b'{"zen": "Keep it logically awesome."}'
    good = {"x-hub-signature-256": signature("s3cret", body)}
    assert GITHUB.signed("s3cret", body, good)
    assert not GITHUB.signed("other", body, good)
    assert not GITHUB.signed("s3cret", body + b" ", good)
    assert not GITHUB.signed("s3cret", body, {})
    # the legacy SHA-1 header alone is not enough, whatever it says
    assert not GITHUB.signed("s3cret", body, {"x-hub-signature": "sha1=" + "0" * 40})
    bare = {"x-hub-signature-256": signature("s3cret", body).removeprefix("sha256=")}
    assert not GITHUB.signed("s3cret", body, bare)
    assert not GITHUB.signed("s3cret", body, {"x-hub-signature-256": "sha256=é"})


def test_gitlab_takes_exactly_its_token() -> None:
    assert GITLAB.signed("tok", b"{}", {"x-gitlab-token": "tok"})
    assert not GITLAB.signed("tok", b"{}", {"x-gitlab-token": "tok "})
    assert not GITLAB.signed("tok", b"{}", {"x-gitlab-token": "ünï"})
    assert not GITLAB.signed("tok", b"{}", {})


def read_github(event: str, payload: dict[str, Any]) -> Any:
    return GITHUB.read({"x-github-event": event}, payload)


def test_a_pull_request_opened_is_pr_opened_with_its_fields_and_untrusted_text() -> None:
    reading = read_github("pull_request", github_pull_request(body="Please review"))
    assert reading.event is not None
    assert reading.repo == "octo/widgets"
    found = reading.event.found("work", "guid-1")
    assert found.type == "pr.opened"
    assert found.payload == {
        "provider": "github",
        "account": "work",
        "repo": "octo/widgets",
        "action": "opened",
        "number": 42,
        "title": "Fix the parser",
        "url": "https://github.com/octo/widgets/pull/42",
        "author": "mallory",
        "branch": "fix-parser",
        "base": "main",
        "sha": HEAD_SHA,
        "draft": False,
        "text": "Please review",
        "text_cut": False,
        "delivery": "guid-1",
        "untrusted": True,
    }
    # the key names the happening, not the delivery
    assert found.dedupe_key == reading.event.found("work", "guid-2").dedupe_key
    assert HEAD_SHA in found.dedupe_key


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ("reopened", "pr.opened"),
        ("ready_for_review", "pr.opened"),
        ("synchronize", "pr.updated"),
        ("edited", "pr.updated"),
        ("closed", None),
        ("labeled", None),
    ],
)
def test_pull_request_actions(action: str, expected: str | None) -> None:
    reading = read_github("pull_request", github_pull_request(action))
    assert (reading.event.type if reading.event else None) == expected
    if expected is None:
        assert reading.note == f"pull_request {action} starts nothing here"


def test_new_commits_or_a_later_reopening_are_new_happenings() -> None:
    first = read_github("pull_request", github_pull_request("synchronize")).event
    pushed = read_github("pull_request", github_pull_request("synchronize", sha="a" * 40)).event
    later = read_github(
        "pull_request", github_pull_request("reopened", updated_at="2026-01-05T07:58:00Z")
    ).event
    reopened = read_github("pull_request", github_pull_request("reopened")).event
    assert first
    assert pushed
    assert later
    assert reopened
    keys = {e.found("w", "d").dedupe_key for e in (first, pushed, later, reopened)}
    assert len(keys) == 4


def test_comments_checks_and_workflow_runs() -> None:
    comment = read_github("issue_comment", github_issue_comment(body="ship it")).event
    assert comment is not None
    found = comment.found("work", "d")
    assert (found.type, found.payload["on"], found.payload["author"]) == (
        "issue.commented",
        "pull request",
        "dana",
    )
    assert found.payload["text"] == "ship it"
    on_issue = read_github("issue_comment", github_issue_comment(on_pull=False)).event
    assert on_issue is not None
    assert on_issue.on == "issue"

    check = read_github("check_run", github_check_run("timed_out")).event
    assert check is not None
    assert (check.type, check.check, check.conclusion, check.number, check.branch) == (
        "check.failed",
        "tests (3.12)",
        "timed_out",
        42,
        "fix-parser",
    )
    assert read_github("check_run", github_check_run("success")).event is None
    assert read_github("check_run", github_check_run("neutral")).event is None

    run = read_github("workflow_run", github_workflow_run()).event
    rerun = read_github("workflow_run", github_workflow_run(attempt=2)).event
    assert run is not None
    assert rerun is not None
    assert run.url == "https://github.com/octo/widgets/actions/runs/30433642"
    # a re-run that fails again is another failure
    assert run.found("w", "d").dedupe_key != rerun.found("w", "d").dedupe_key


def test_a_ping_and_unmapped_events_start_nothing() -> None:
    ping = read_github("ping", github_ping())
    assert (ping.event, ping.repo) == (None, "octo/widgets")
    assert "ping" in ping.note
    push = read_github("push", {"ref": "refs/heads/main", "repository": {"full_name": "o/r"}})
    assert push.event is None
    assert push.note == "push starts nothing here"
    org = read_github("membership", {"action": "added"})
    assert org.event is None
    assert org.repo is None


def test_long_text_is_cut_and_says_so() -> None:
    event = read_github("pull_request", github_pull_request(body="x" * (MAX_TEXT + 10))).event
    assert event is not None
    payload = event.found("w", "d").payload
    assert len(payload["text"]) == MAX_TEXT
    assert payload["text_cut"] is True


def read_gitlab(event: str, payload: dict[str, Any]) -> Any:
    return GITLAB.read({"x-gitlab-event": event}, payload)


def test_gitlab_merge_requests_pipelines_and_notes() -> None:
    opened = read_gitlab("Merge Request Hook", gitlab_merge_request("open")).event
    assert opened is not None
    found = opened.found("lab", "idem-1")
    assert found.type == "pr.opened"
    assert {k: found.payload[k] for k in ("repo", "number", "branch", "base", "author")} == {
        "repo": "octo/widgets",
        "number": 1,
        "branch": "fix-parser",
        "base": "main",
        "author": "mallory",
    }
    updated = read_gitlab("Merge Request Hook", gitlab_merge_request("update")).event
    assert updated is not None
    assert updated.type == "pr.updated"
    assert read_gitlab("Merge Request Hook", gitlab_merge_request("merge")).event is None

    failed = read_gitlab("Pipeline Hook", gitlab_pipeline()).event
    assert failed is not None
    assert (failed.type, failed.number, failed.url) == (
        "check.failed",
        1,
        "https://gitlab.example.com/octo/widgets/-/pipelines/31",
    )
    assert read_gitlab("Pipeline Hook", gitlab_pipeline("success")).event is None

    note = read_gitlab("Note Hook", gitlab_note()).event
    assert note is not None
    assert (note.type, note.on, note.text, note.number) == (
        "issue.commented",
        "merge request",
        "Please rebase",
        1,
    )
    issue_note = read_gitlab("Note Hook", gitlab_note(on="Issue")).event
    assert issue_note is not None
    assert (issue_note.on, issue_note.number) == ("issue", 17)
    push = read_gitlab(
        "Push Hook", {"object_kind": "push", "project": {"path_with_namespace": "a/b"}}
    )
    assert push.event is None
    assert push.repo == "a/b"


def test_gitlab_delivery_id_prefers_the_idempotency_key() -> None:
    assert GITLAB.delivery_id({"idempotency-key": "k", "x-gitlab-event-uuid": "u"}) == "k"
    assert GITLAB.delivery_id({"x-gitlab-event-uuid": "u"}) == "u"
    assert GITHUB.delivery_id({"x-github-delivery": " g "}) == "g"


def test_repositories_a_connection_takes() -> None:
    settings = CodeHostSettings(repositories=["Octo/Widgets", "tools/*", "group/sub/project"])
    assert settings.accepts("octo/widgets")
    assert settings.accepts("tools/anything")
    assert settings.accepts("group/sub/project")
    assert not settings.accepts("octo/widgets-fork")
    assert not settings.accepts("toolsmith/x")
    for wrong in (["octo"], [], ["a/b c"], ["../x"], ["*"]):
        with pytest.raises(ValidationError, match="repositories"):
            CodeHostSettings(repositories=wrong)


def test_each_event_says_when_it_happened_by_the_payloads_clock() -> None:
    at = {
        "pull_request": read_github("pull_request", github_pull_request()).event,
        "comment": read_github("issue_comment", github_issue_comment()).event,
        "check": read_github("check_run", github_check_run()).event,
        "workflow": read_github("workflow_run", github_workflow_run()).event,
        "merge_request": read_gitlab("Merge Request Hook", gitlab_merge_request()).event,
        "pipeline": read_gitlab("Pipeline Hook", gitlab_pipeline()).event,
        "note": read_gitlab("Note Hook", gitlab_note()).event,
    }
    early, late = datetime(2026, 1, 5, 7, 50, tzinfo=UTC), datetime(2026, 1, 5, 7, 55, tzinfo=UTC)
    assert {k: e.at if e else None for k, e in at.items()} == {
        "pull_request": early,
        "comment": late,
        "check": late,
        "workflow": late,
        "merge_request": early,
        "pipeline": late,
        "note": late,
    }


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("2026-01-05T08:00:00+01:00", datetime(2026, 1, 5, 7, 0, tzinfo=UTC)),
        ("2026-01-05 07:00:00 UTC", datetime(2026, 1, 5, 7, 0, tzinfo=UTC)),
        ("2026-01-05T07:00:00.5Z", datetime(2026, 1, 5, 7, 0, 0, 500_000, tzinfo=UTC)),
        ("2026-01-05T07:00:00", None),  # no zone: cannot be compared
        ("0001-01-01T00:00:00+01:00", None),  # before the calendar's start in UTC
        ("soon", None),
        (1767596400, None),
        (None, None),
    ],
)
def test_a_payload_time_is_read_in_utc_or_not_at_all(given: object, expected: object) -> None:
    assert moment(given) == expected
