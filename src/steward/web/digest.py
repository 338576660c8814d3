""" "While you were away": what happened since the person last looked, grouped by goal — what
was done, what was decided, and what waits for them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from steward.domain import Approval, Goal, Task
from steward.domain.feed import FeedEntry

DECIDED = frozenset({"approval.decided"})
ASKED = frozenset({"approval.requested", "notification"})
"""Asking is shown once, as what waits now (the feed's line would repeat it)."""


@dataclass(kw_only=True)
class GoalDigest:
    goal: Goal | None
    """None: work under no goal."""
    usage: Mapping[str, Any] | None = None
    """What the goal has spent so far."""
    done: list[FeedEntry] = field(default_factory=list)
    decided: list[FeedEntry] = field(default_factory=list)
    approvals: list[Approval] = field(default_factory=list)
    """Pending: the person's decision is needed."""
    questions: list[Task] = field(default_factory=list)
    """Tasks waiting for the person's answer."""

    @property
    def waiting(self) -> int:
        return len(self.approvals) + len(self.questions)

    @property
    def quiet(self) -> bool:
        return not (self.done or self.decided or self.waiting)


def digest(
    *,
    goals: Iterable[Goal],
    usage: Mapping[str, Mapping[str, Any]],
    entries: Iterable[FeedEntry],
    approvals: Iterable[Approval],
    questions: Iterable[Task],
) -> list[GoalDigest]:
    """One digest per goal (goals with something waiting first, then those with news, then
    quiet ones), and one for work under no goal if there is any."""
    by_goal: dict[str | None, GoalDigest] = {
        g.id: GoalDigest(goal=g, usage=usage.get(g.id)) for g in goals
    }

    def of(goal_id: str | None) -> GoalDigest:
        # a goal not listed (over the listing's limit) still has its news shown, unnamed
        return by_goal.setdefault(goal_id if goal_id in by_goal else None, GoalDigest(goal=None))

    for entry in entries:
        if entry.kind in DECIDED:
            of(entry.goal_id).decided.append(entry)
        elif entry.kind not in ASKED:
            of(entry.goal_id).done.append(entry)
    for approval in approvals:
        of(approval.goal_id).approvals.append(approval)
    for task in questions:
        of(task.goal_id).questions.append(task)
    return sorted(by_goal.values(), key=lambda d: (not d.waiting, d.quiet))
