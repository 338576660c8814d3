"""GitHub's webhook deliveries: its signature scheme and its payloads, read as typed events.

GitHub signs the raw body: ``X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body under
the webhook's secret>``. The legacy SHA-1 ``X-Hub-Signature`` alone is refused. The event is in
``X-GitHub-Event`` and the delivery's id (a GUID, kept when GitHub re-sends it) in
``X-GitHub-Delivery``. The signature covers no time and no id, so a captured delivery can be
re-sent as it is, or under a new id: the semantic keys of :mod:`.events` make that start
nothing.

Mapped: ``pull_request`` (``opened``, ``reopened``, ``ready_for_review`` → ``pr.opened``;
``synchronize``, ``edited`` → ``pr.updated``), ``issue_comment`` ``created`` →
``issue.commented``, and ``check_run``, ``check_suite`` and ``workflow_run`` ``completed`` with
a failing conclusion → ``check.failed``. ``ping`` and everything else start nothing.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from typing import Any, ClassVar

from steward.connectors.codehost.connector import CodeHostConnector
from steward.connectors.codehost.events import (
    CHECK_FAILED,
    ISSUE_COMMENTED,
    PR_OPENED,
    PR_UPDATED,
    CodeEvent,
    Provider,
    Reading,
    mapping,
    moment,
    text,
    whole,
)

KIND = "github"
SIGNATURE = "x-hub-signature-256"
EVENT = "x-github-event"
DELIVERY = "x-github-delivery"

OPENED = {"opened", "reopened", "ready_for_review"}
UPDATED = {"synchronize", "edited"}
FAILING = {"failure", "timed_out", "startup_failure"}
"""Conclusions of a check or workflow run that count as failed."""


def signature(secret: str, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` value GitHub sends with ``body`` under ``secret``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class GitHub:
    """GitHub's delivery scheme."""

    kind: str = KIND
    title: str = "GitHub"
    events_to_tick: tuple[str, ...] = (
        "Pull requests",
        "Issue comments",
        "Check runs",
        "Workflow runs",
    )

    def signed(self, secret: str, body: bytes, headers: Mapping[str, str]) -> bool:
        given = headers.get(SIGNATURE, "").strip()
        # as bytes: a header may carry any character, and compare_digest refuses non-ASCII text
        return hmac.compare_digest(signature(secret, body).encode(), given.encode())

    def delivery_id(self, headers: Mapping[str, str]) -> str:
        return headers.get(DELIVERY, "").strip()

    def read(self, headers: Mapping[str, str], payload: Mapping[str, Any]) -> Reading:
        name = headers.get(EVENT, "").strip()
        repository = mapping(payload.get("repository"))
        repo = text(repository.get("full_name")) or None
        action = text(payload.get("action"))
        if name == "ping":
            return Reading(event=None, repo=repo, note="GitHub's ping: the webhook works")
        if repo is None:
            return Reading(event=None, repo=None, note=f"a {name} delivery names no repository")
        where = f"{whole(repository.get('id')) or repo}"
        sender = text(mapping(payload.get("sender")).get("login"))
        event: CodeEvent | None = None
        if name == "pull_request" and action in OPENED | UPDATED:
            event = _pull_request(payload, repo, where, action)
        elif name == "issue_comment" and action == "created":
            event = _comment(payload, repo, where)
        elif name in ("check_run", "check_suite", "workflow_run") and action == "completed":
            event = _failed(name, payload, repository, repo, where, sender)
        if event is None:
            what = f"{name} {action}".strip() or "an unnamed event"
            return Reading(event=None, repo=repo, note=f"{what} starts nothing here")
        return Reading(event=event, repo=repo)


def _pull_request(payload: Mapping[str, Any], repo: str, where: str, action: str) -> CodeEvent:
    pr = mapping(payload.get("pull_request"))
    head = mapping(pr.get("head"))
    sha = text(head.get("sha"))
    draft = pr.get("draft")
    return CodeEvent(
        type=PR_OPENED if action in OPENED else PR_UPDATED,
        provider=KIND,
        repo=repo,
        key=f"{where}:pr:{pr.get('id')}:{action}:{sha}:{text(pr.get('updated_at'))}",
        action=action,
        at=moment(pr.get("updated_at")),
        number=whole(pr.get("number")) or whole(payload.get("number")),
        title=text(pr.get("title")),
        url=text(pr.get("html_url")),
        author=text(mapping(pr.get("user")).get("login")),
        branch=text(head.get("ref")),
        base=text(mapping(pr.get("base")).get("ref")),
        sha=sha,
        draft=draft if isinstance(draft, bool) else None,
        text=text(pr.get("body")),
    )


def _comment(payload: Mapping[str, Any], repo: str, where: str) -> CodeEvent:
    issue = mapping(payload.get("issue"))
    comment = mapping(payload.get("comment"))
    return CodeEvent(
        type=ISSUE_COMMENTED,
        provider=KIND,
        repo=repo,
        key=f"{where}:comment:{comment.get('id')}",
        action="created",
        at=moment(comment.get("created_at")),
        number=whole(issue.get("number")),
        title=text(issue.get("title")),
        url=text(comment.get("html_url")),
        author=text(mapping(comment.get("user")).get("login")),
        on="pull request" if "pull_request" in issue else "issue",
        text=text(comment.get("body")),
    )


def _failed(
    name: str,
    payload: Mapping[str, Any],
    repository: Mapping[str, Any],
    repo: str,
    where: str,
    sender: str,
) -> CodeEvent | None:
    run = mapping(payload.get(name))
    conclusion = text(run.get("conclusion"))
    if conclusion not in FAILING:
        return None
    sha = text(run.get("head_sha"))
    if name == "check_run":
        branch = text(mapping(run.get("check_suite")).get("head_branch"))
        check = text(run.get("name"))
        url = text(run.get("html_url"))
        attempt = ""
    elif name == "check_suite":
        branch = text(run.get("head_branch"))
        check = text(mapping(run.get("app")).get("name")) or "check suite"
        url = f"{text(repository.get('html_url'))}/commit/{sha}"
        attempt = text(run.get("updated_at"))  # a re-requested suite keeps its id
    else:
        branch = text(run.get("head_branch"))
        check = text(run.get("name"))
        url = text(run.get("html_url"))
        attempt = str(whole(run.get("run_attempt")) or 1)
    pulls = run.get("pull_requests")
    first = mapping(pulls[0]) if isinstance(pulls, list) and pulls else {}
    return CodeEvent(
        type=CHECK_FAILED,
        provider=KIND,
        repo=repo,
        key=f"{where}:{name}:{run.get('id')}:{attempt}:{conclusion}",
        action="completed",
        # a check run says when it completed; a suite or workflow run when it last changed
        at=moment(run.get("completed_at") or run.get("updated_at")),
        number=whole(first.get("number")),
        title=check,
        url=url,
        author=sender,
        branch=branch or None,
        sha=sha or None,
        check=check,
        conclusion=conclusion,
    )


PROVIDER = GitHub()


class GitHubConnector(CodeHostConnector):
    """The ``github`` connection kind."""

    kind: ClassVar[str] = KIND
    title: ClassVar[str] = "GitHub"
    provider: ClassVar[Provider] = PROVIDER


CONNECTOR = GitHubConnector()
