"""The service facade: the one door every interface (CLI, API, dashboard, MCP) goes through.

It validates input (a bad request raises a :class:`~steward.errors.UsageError` and changes
nothing), stamps times from the clock, and nudges an in-process runtime when it adds work.

Its parts: :mod:`~steward.service.base` (who is asking: a service bound to an API token acts
for that token's person only, within its scopes), :mod:`~steward.service.ids` (ids
shortened, objects by name), :mod:`~steward.service.work` (goals, tasks, events, effects, the
agent), :mod:`~steward.service.triggers` (triggers, heartbeats, budgets,
follow-ups), :mod:`~steward.service.approvals` (approvals and
notifications), :mod:`~steward.service.security` (audit, tokens, connections, grants, rules,
the vault), :mod:`~steward.service.connections` (connecting, testing and disconnecting the
person's accounts), :mod:`~steward.service.memory` (what it remembers about the person),
:mod:`~steward.service.skills` (what it learned to do), :mod:`~steward.service.hooks`
(signed webhook deliveries), :mod:`~steward.service.channels` (the ways Steward reaches the
person: Apprise, Web Push), :mod:`~steward.service.codehost` (GitHub and GitLab as sources of
events), :mod:`~steward.service.webwatches` (watched web pages),
:mod:`~steward.service.reports` (reports, quiet hours, the digest's time),
:mod:`~steward.service.workspace` (the files in the person's workspace),
:mod:`~steward.service.browser` (what the person's browser last showed, logging it out),
:mod:`~steward.service.mailchannel` (talking to the agent by e-mail) and
:mod:`~steward.service.matrixchannel` (talking to the agent in Matrix rooms).
"""

from __future__ import annotations

from steward.sentinel.grants import APPROVAL_SCOPES
from steward.service.approvals import ApprovalService
from steward.service.base import Principal, ServiceBase
from steward.service.browser import BrowserService
from steward.service.channels import ChannelService
from steward.service.codehost import CodeHostService
from steward.service.connections import ConnectionService
from steward.service.health import HealthService
from steward.service.hooks import WebhookService
from steward.service.ids import IdService
from steward.service.mailchannel import MailChannelService
from steward.service.matrixchannel import MatrixChannelService
from steward.service.memory import MemoryService
from steward.service.reports import ReportService
from steward.service.security import SecurityService
from steward.service.skills import SkillService
from steward.service.status import StatusService
from steward.service.triggers import TriggerReport, TriggerService
from steward.service.webwatches import WebWatchService
from steward.service.work import TimelineEntry, WorkService, parse_time
from steward.service.workspace import WorkspaceService

__all__ = [
    "APPROVAL_SCOPES",
    "Principal",
    "Service",
    "ServiceBase",
    "TimelineEntry",
    "TriggerReport",
    "parse_time",
]


class Service(
    MailChannelService,
    MatrixChannelService,
    WorkService,
    TriggerService,
    ApprovalService,
    ChannelService,
    CodeHostService,
    ConnectionService,
    SecurityService,
    MemoryService,
    SkillService,
    WebhookService,
    WebWatchService,
    ReportService,
    BrowserService,
    WorkspaceService,
    StatusService,
    HealthService,
    IdService,
):
    """Everything an interface may do, for the owner or for one token's person."""
