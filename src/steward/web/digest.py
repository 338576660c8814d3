""" "While you were away": the reports Steward wrote for the person and what waits for them
(approvals, questions), grouped by goal, newest first. Steps stay in the goal's timeline."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from steward.domain import Approval, Goal, Task
from steward.domain.report import Report

STATES = {
    "pending": "sending now",
    "held": "held for your quiet hours",
    "digest": "in your next digest",
    "digested": "sent in your digest",
    "delivered": "sent to you",
    "dropped": "here only",
}
"""Where a report went, in words."""


@dataclass(kw_only=True)
class GoalDigest:
    goal: Goal | None
    """None: work under no goal."""
    usage: Mapping[str, Any] | None = None
    """What the goal has spent so far."""
    reports: list[Report] = field(default_factory=list)
    """Newest first."""
    approvals: list[Approval] = field(default_factory=list)
    """Pending: the person's decision is needed."""
    questions: list[Task] = field(default_factory=list)
    """Tasks waiting for the person's answer."""

    @property
    def waiting(self) -> int:
        return len(self.approvals) + len(self.questions)

    @property
    def unread(self) -> int:
        return sum(1 for r in self.reports if r.read_at is None)

    @property
    def newest(self) -> datetime | None:
        return max((r.created_at for r in self.reports), default=None)


def digest(
    *,
    goals: Iterable[Goal],
    usage: Mapping[str, Mapping[str, Any]],
    reports: Iterable[Report],
    approvals: Iterable[Approval],
    questions: Iterable[Task],
) -> list[GoalDigest]:
    """One group per goal with something to show — those with something waiting first, then
    by their newest report — and one for work under no goal if there is any."""
    known = {g.id: g for g in goals}
    groups: dict[str | None, GoalDigest] = {}

    def of(goal_id: str | None) -> GoalDigest:
        key = goal_id if goal_id in known else None
        if key not in groups:
            groups[key] = GoalDigest(
                goal=known.get(key) if key else None, usage=usage.get(key) if key else None
            )
        return groups[key]

    for report in sorted(reports, key=lambda r: (r.created_at, r.id), reverse=True):
        of(report.goal_id).reports.append(report)
    for approval in approvals:
        of(approval.goal_id).approvals.append(approval)
    for task in questions:
        of(task.goal_id).questions.append(task)

    def order(d: GoalDigest) -> tuple[bool, float]:
        newest = d.newest
        return (not d.waiting, -newest.timestamp() if newest else 0.0)

    return sorted(groups.values(), key=order)
