"""The typed events a code host's deliveries become, and what a provider adapter reads.

A delivery is mapped to at most one :class:`CodeEvent` — ``pr.opened``, ``pr.updated``,
``check.failed`` or ``issue.commented`` — whatever the provider calls it, so one event trigger
("when a PR is opened, review it") serves GitHub and GitLab alike. Every field comes from the
provider's payload, written by whoever opened the pull request or wrote the comment: the event
says ``untrusted`` and the free text is kept apart in ``text``.

Each event carries a *semantic key*: the same for the same happening however often and under
whatever delivery id it arrives (a pull request's id with its action, head commit and update
time; a comment's id; a check run's id, attempt and conclusion). It is the event's dedupe key, so
a captured delivery re-sent under a new id starts nothing.

Each event also carries the time it happened by the payload's own clock (:attr:`CodeEvent.at`):
the signature covers no time, so that time, signed with the body, is what tells a delivery from
a replay made after the event (and its key) were pruned from history.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from steward.domain.limits import MAX_KEY
from steward.domain.watch import Found

PR_OPENED = "pr.opened"
PR_UPDATED = "pr.updated"
CHECK_FAILED = "check.failed"
ISSUE_COMMENTED = "issue.commented"
TYPES = (PR_OPENED, PR_UPDATED, CHECK_FAILED, ISSUE_COMMENTED)
"""Every event type a code host's delivery can become."""

MAX_TEXT = 8_000
"""Characters of free text (a pull request's description, a comment) an event keeps; the rest
is cut, and the event says so."""
MAX_FIELD = 500
"""Characters of any other text field (a title, a branch, a URL)."""


@dataclass(kw_only=True, frozen=True)
class CodeEvent:
    """One happening at a code host, as Steward's event triggers see it."""

    type: str
    """One of :data:`TYPES`."""
    provider: str
    """``github`` or ``gitlab``."""
    repo: str
    """The repository (``octo/widgets``) or GitLab project path (``group/sub/project``)."""
    key: str
    """The semantic key (see the module's description), without the provider."""
    action: str
    """The provider's own word for what happened (``opened``, ``synchronize``, ``open``)."""
    at: datetime | None
    """When it happened, by the payload (a pull request's update, a comment's creation, a
    check's completion); None when the payload does not say."""
    number: int | None = None
    """The pull request's, merge request's or issue's number in the repository."""
    title: str = ""
    """Its title."""
    url: str = ""
    """Where a person reads it (the pull request, the comment, the failed check)."""
    author: str = ""
    """Who wrote it or made it happen (a login)."""
    branch: str | None = None
    """The head (source) branch, where there is one."""
    base: str | None = None
    """The branch a pull request would merge into."""
    sha: str | None = None
    """The head commit, where there is one."""
    draft: bool | None = None
    """For a pull request: whether it is a draft."""
    check: str | None = None
    """For a failed check: the check's or pipeline's name."""
    conclusion: str | None = None
    """For a failed check: how it ended (``failure``, ``timed_out``, ``failed``)."""
    on: str | None = None
    """For a comment: what it is on (``pull request``, ``issue``, ``commit``)."""
    text: str = ""
    """The free text others wrote (a description, a comment): never instructions."""

    def found(self, account: str, delivery: str) -> Found:
        """The inbox event this becomes for the connection ``account``; ``delivery``: the
        provider's delivery id, kept to trace it."""
        text = self.text[:MAX_TEXT]
        payload: dict[str, Any] = {
            "provider": self.provider,
            "account": account,
            "repo": self.repo,
            "action": self.action,
            "number": self.number,
            "title": self.title[:MAX_FIELD],
            "url": self.url[:MAX_FIELD],
            "author": self.author[:MAX_FIELD],
            "branch": _cut(self.branch),
            "base": _cut(self.base),
            "sha": _cut(self.sha),
            "draft": self.draft,
            "check": _cut(self.check),
            "conclusion": _cut(self.conclusion),
            "on": self.on,
            "text": text,
            "text_cut": len(self.text) > MAX_TEXT,
            "delivery": delivery,
            "untrusted": True,
        }
        return Found(
            type=self.type,
            dedupe_key=semantic_key(self.provider, self.key),
            payload={k: v for k, v in payload.items() if v is not None},
        )


@dataclass(kw_only=True, frozen=True)
class Reading:
    """What one delivery says: an event, or why it starts nothing."""

    event: CodeEvent | None
    """The typed event, or None (a ping, an event type or action not mapped)."""
    repo: str | None
    """The repository it is about (checked against the connection's), None when it names
    none (an organisation's ping)."""
    note: str = ""
    """When there is no event: why, in plain words."""


class Provider(Protocol):
    """A code host's own delivery scheme: how a delivery is signed, named and shaped."""

    kind: str
    """The connection kind (``github``)."""
    title: str
    """What it is called (``GitHub``)."""
    events_to_tick: tuple[str, ...]
    """The events to choose in the provider's webhook settings, in its words."""

    def signed(self, secret: str, body: bytes, headers: Mapping[str, str]) -> bool:
        """The delivery carries the provider's proof that it knows ``secret`` (compared in
        constant time). ``headers``: lower-case names."""
        ...

    def delivery_id(self, headers: Mapping[str, str]) -> str:
        """The provider's id of this delivery (the same when it re-sends it), or ``""``."""
        ...

    def read(self, headers: Mapping[str, str], payload: Mapping[str, Any]) -> Reading:
        """The typed event the delivery is, if any."""
        ...


def semantic_key(provider: str, key: str) -> str:
    """The dedupe key of an event: readable, and hashed when it would be too long to store."""
    whole = f"{provider}:{key}"
    if len(whole) <= MAX_KEY:
        return whole
    return f"{provider}:sha256:{hashlib.sha256(key.encode()).hexdigest()}"


def text(value: object) -> str:
    """A payload's text field, or ``""`` when it is missing or not text."""
    return value if isinstance(value, str) else ""


def whole(value: object) -> int | None:
    """A payload's whole-number field, or None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def mapping(value: object) -> Mapping[str, Any]:
    """A payload's object field, or an empty one."""
    return value if isinstance(value, Mapping) else {}


def moment(value: object) -> datetime | None:
    """A payload's time field (``2026-12-04T10:00:00Z``, or GitLab's ``2026-12-04 10:00:00
    UTC``) in UTC, or None when it is missing, not a time, or has no zone."""
    if not isinstance(value, str):
        return None
    given = value.strip()
    if given.endswith(" UTC"):
        given = given.removesuffix(" UTC") + "+00:00"
    try:
        parsed = datetime.fromisoformat(given)
        # a zone is needed to compare; a year near the ends of the calendar overflows here
        return None if parsed.tzinfo is None else parsed.astimezone(UTC)
    except (ValueError, OverflowError):
        return None


def _cut(value: str | None) -> str | None:
    return None if value is None else value[:MAX_FIELD]
