"""GitLab's webhook deliveries: its secret token and its payloads, read as typed events.

GitLab does not sign a delivery: it sends the webhook's secret token itself in
``X-Gitlab-Token``, compared here in constant time (so deliveries must travel over HTTPS). The
event is in ``X-Gitlab-Event``; ``Idempotency-Key`` is the same when GitLab re-sends a delivery
(older GitLab: ``X-Gitlab-Event-UUID``). A captured delivery carries the token, so it can be
re-sent: the semantic keys of :mod:`.events` make that start nothing.

Mapped: ``Merge Request Hook`` (``open``, ``reopen`` → ``pr.opened``; ``update`` →
``pr.updated``), ``Pipeline Hook`` with status ``failed`` → ``check.failed``, and ``Note Hook``
(a comment on a merge request, issue, commit or snippet) → ``issue.commented``. Everything
else (pushes, tags, test deliveries of them) starts nothing.
"""

from __future__ import annotations

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

KIND = "gitlab"
TOKEN = "x-gitlab-token"
EVENT = "x-gitlab-event"
IDEMPOTENCY = "idempotency-key"
EVENT_UUID = "x-gitlab-event-uuid"

OPENED = {"open", "reopen"}
NOTED_ON = {
    "MergeRequest": "merge request",
    "Issue": "issue",
    "Commit": "commit",
    "Snippet": "snippet",
}
"""What a note can be on, as the event says it."""


class GitLab:
    """GitLab's delivery scheme."""

    kind: str = KIND
    title: str = "GitLab"
    events_to_tick: tuple[str, ...] = ("Merge request events", "Pipeline events", "Comments")

    def signed(self, secret: str, body: bytes, headers: Mapping[str, str]) -> bool:
        return hmac.compare_digest(secret.encode(), headers.get(TOKEN, "").encode())

    def delivery_id(self, headers: Mapping[str, str]) -> str:
        return (headers.get(IDEMPOTENCY) or headers.get(EVENT_UUID) or "").strip()

    def read(self, headers: Mapping[str, str], payload: Mapping[str, Any]) -> Reading:
        name = headers.get(EVENT, "").strip()
        project = mapping(payload.get("project"))
        repo = text(project.get("path_with_namespace")) or None
        if repo is None:
            return Reading(event=None, repo=None, note=f"a {name} delivery names no project")
        where = f"{whole(project.get('id')) or repo}"
        attributes = mapping(payload.get("object_attributes"))
        actor = text(mapping(payload.get("user")).get("username"))
        event: CodeEvent | None = None
        if name == "Merge Request Hook":
            event = _merge_request(attributes, repo, where, actor)
        elif name == "Pipeline Hook" and attributes.get("status") == "failed":
            event = _pipeline(payload, attributes, project, repo, where, actor)
        elif name == "Note Hook" and text(attributes.get("action")) in ("", "create"):
            event = _note(payload, attributes, repo, where, actor)
        if event is None:
            action = text(attributes.get("action") or attributes.get("status"))
            what = f"{name} {action}".strip() or "an unnamed event"
            return Reading(event=None, repo=repo, note=f"{what} starts nothing here")
        return Reading(event=event, repo=repo)


def _merge_request(
    attributes: Mapping[str, Any], repo: str, where: str, actor: str
) -> CodeEvent | None:
    action = text(attributes.get("action"))
    if action not in OPENED and action != "update":
        return None
    sha = text(mapping(attributes.get("last_commit")).get("id"))
    draft = attributes.get("draft", attributes.get("work_in_progress"))
    updated = text(attributes.get("updated_at"))
    return CodeEvent(
        type=PR_OPENED if action in OPENED else PR_UPDATED,
        provider=KIND,
        repo=repo,
        key=f"{where}:mr:{attributes.get('id')}:{action}:{sha}:{updated}",
        action=action,
        at=moment(updated),
        number=whole(attributes.get("iid")),
        title=text(attributes.get("title")),
        url=text(attributes.get("url")),
        author=actor,
        branch=text(attributes.get("source_branch")),
        base=text(attributes.get("target_branch")),
        sha=sha,
        draft=draft if isinstance(draft, bool) else None,
        text=text(attributes.get("description")),
    )


def _pipeline(
    payload: Mapping[str, Any],
    attributes: Mapping[str, Any],
    project: Mapping[str, Any],
    repo: str,
    where: str,
    actor: str,
) -> CodeEvent:
    ident = whole(attributes.get("id"))
    url = text(attributes.get("url")) or f"{text(project.get('web_url'))}/-/pipelines/{ident}"
    name = text(attributes.get("name")) or "pipeline"
    request = mapping(payload.get("merge_request"))
    return CodeEvent(
        type=CHECK_FAILED,
        provider=KIND,
        repo=repo,
        # a retried pipeline keeps its id and fails again later
        key=f"{where}:pipeline:{ident}:failed:{text(attributes.get('finished_at'))}",
        action="failed",
        at=moment(attributes.get("finished_at")),
        number=whole(request.get("iid")),
        title=text(request.get("title")) or name,
        url=url,
        author=actor,
        branch=text(attributes.get("ref")) or None,
        sha=text(attributes.get("sha")) or None,
        check=name,
        conclusion="failed",
    )


def _note(
    payload: Mapping[str, Any], attributes: Mapping[str, Any], repo: str, where: str, actor: str
) -> CodeEvent:
    on = NOTED_ON.get(text(attributes.get("noteable_type")), "something else")
    about = mapping(payload.get("merge_request")) or mapping(payload.get("issue"))
    return CodeEvent(
        type=ISSUE_COMMENTED,
        provider=KIND,
        repo=repo,
        key=f"{where}:note:{attributes.get('id')}",
        action="create",
        at=moment(attributes.get("created_at")),
        number=whole(about.get("iid")),
        title=text(about.get("title")),
        url=text(attributes.get("url")),
        author=actor,
        on=on,
        text=text(attributes.get("note")),
    )


PROVIDER = GitLab()


class GitLabConnector(CodeHostConnector):
    """The ``gitlab`` connection kind."""

    kind: ClassVar[str] = KIND
    title: ClassVar[str] = "GitLab"
    provider: ClassVar[Provider] = PROVIDER


CONNECTOR = GitLabConnector()
