"""Domain types: plain kw-only dataclasses and pure rules. No I/O, nothing of ours imported."""

from steward.domain.approval import (
    Approval,
    ApprovalPreview,
    ApprovalStatus,
    Artifact,
    Notification,
    args_hash,
)
from steward.domain.authority import (
    ApiToken,
    AuditEntry,
    Connection,
    Grant,
    Lifetime,
    Rule,
    RuleMode,
)
from steward.domain.event import Event
from steward.domain.goal import Budget, Goal, GoalRecord, GoalStatus, check_goal_transition
from steward.domain.journal import Activation, Effect, EffectStatus, Step
from steward.domain.person import Person
from steward.domain.task import (
    TERMINAL_TASK_STATUSES,
    Task,
    TaskSpec,
    TaskStatus,
    WaitCondition,
    can_transition,
    check_task_transition,
)
from steward.domain.trigger import Firing, FiringStatus, MissedPolicy, Trigger, TriggerKind

__all__ = [
    "TERMINAL_TASK_STATUSES",
    "Activation",
    "ApiToken",
    "Approval",
    "ApprovalPreview",
    "ApprovalStatus",
    "Artifact",
    "AuditEntry",
    "Budget",
    "Connection",
    "Effect",
    "EffectStatus",
    "Event",
    "Firing",
    "FiringStatus",
    "Goal",
    "GoalRecord",
    "GoalStatus",
    "Grant",
    "Lifetime",
    "MissedPolicy",
    "Notification",
    "Person",
    "Rule",
    "RuleMode",
    "Step",
    "Task",
    "TaskSpec",
    "TaskStatus",
    "Trigger",
    "TriggerKind",
    "WaitCondition",
    "args_hash",
    "can_transition",
    "check_goal_transition",
    "check_task_transition",
]
