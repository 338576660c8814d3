"""The API's contract, over every route, on both backends.

Every (method, route) of the app has a :class:`Case` here: how to build a request that is valid
for one tenant's own objects. Each case is checked for:

* credentials: without a token, or with a garbage or revoked one, the answer is 401, a problem
  document with ``WWW-Authenticate: Bearer``; the webhook delivery route takes a signature
  instead of a token (Standard Webhooks', or GitHub's for a code host), and a missing or
  wrong one is 401 too;
* tenancy: A's token on B's objects is answered exactly as an id that does not exist (404 for
  an object in the path), what A is shown never names anything of B's, nothing of B's changes,
  and the same call on A's own objects goes through (so a route that refused everyone fails);
  a ``read`` token may not change anything (403);
* bad input: an invalid body (an unknown field, a value of the wrong type, a required field
  left out, not JSON at all) or query is 422 naming what is wrong, an unknown id 404, a request
  the API refuses on its merits a 4xx saying why, and none of them changes anything.

The OpenAPI document is served and lists the bearer scheme on every route but the webhook's.
A new route fails :func:`test_every_route_has_a_case` until it has a case here; a bug these
tests found stays visible in :data:`KNOWN_BUGS` (strict xfail) until it is fixed.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from fastapi.routing import APIRoute, iter_route_contexts
from pydantic import BaseModel

from steward.api import create_app
from steward.api.app import API_PREFIX
from steward.api.common import PROBLEM
from steward.domain import TaskSpec, TriggerKind
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.domain.memory import MemoryKind, Source, SourceKind
from steward.domain.skill import SkillContent
from steward.memory.skills import SkillLibrary
from steward.service import Service
from steward.store import Store
from steward.testing.http_server import serving
from support.api import Api, delivery
from support.clock import START
from support.codehost import encoded, github_headers, github_ping
from support.screenshots import png, record_look
from support.tenancy import Tenant, make_tenant, state_of, take_picture

READ, CONTROL, SIGNED, GITHUB = "read", "control", "signed", "github"
"""What a case needs: a ``read`` token, a ``control`` token, or a signature (no token): as
Standard Webhooks sign, or as GitHub does."""


@dataclass(frozen=True)
class Side:
    """What a request may name of one tenant: its ids, and its webhook's secret."""

    person: str
    goal: str
    task: str
    trigger: str
    hook: str
    """An event trigger that takes webhook deliveries."""
    hook_secret: str
    codehost: str
    """A GitHub connection that takes deliveries about octo/widgets."""
    codehost_secret: str
    event: str
    effect: str
    approval: str
    notification: str
    connection: str
    grant: str
    rule: str
    skill: str
    skill_name: str
    memory: str
    archived: str
    """An archived memory."""
    candidate: str
    """A memory from an untrusted source, waiting to be promoted."""
    proposal: str
    """A skill the agent proposed, waiting for the person's decision."""
    memory_pass: str
    watch: str
    channel: str
    report: str
    file: str
    """A file in the tenant's workspace, by its path."""
    token: str
    """The id of the tenant's ``control`` token."""


ID_PARAMS: dict[str, Callable[[Side], str]] = {
    "goal_id": lambda s: s.goal,
    "task_id": lambda s: s.task,
    "trigger_id": lambda s: s.trigger,
    "approval_id": lambda s: s.approval,
    "notification_id": lambda s: s.notification,
    "grant_id": lambda s: s.grant,
    "connection_id": lambda s: s.connection,
    "rule_id": lambda s: s.rule,
    "token_id": lambda s: s.token,
    "memory_id": lambda s: s.memory,
    "pass_id": lambda s: s.memory_pass,
    "skill": lambda s: s.skill,
    "watch_id": lambda s: s.watch,
    "channel_id": lambda s: s.channel,
    "report_id": lambda s: s.report,
    "path": lambda s: s.file,
}
"""How a path parameter that names an object is filled from a tenant."""

DELIVERY = b'{"sent_by": "the contract tests"}'
PING = encoded(github_ping())
"""GitHub's ping to a GitHub connection's webhook."""


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    params: Mapping[str, str] = field(default_factory=dict)
    json: Any = None
    content: bytes | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    stream: bool = False


@dataclass(frozen=True)
class Refusal:
    """A well-formed request the API must refuse on its merits, changing nothing."""

    status: int
    naming: str
    """What the problem's detail must mention."""
    body: Any = None
    params: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Case:
    method: str
    route: str
    """The route's path as the app declares it, under ``/api/v1``."""
    scope: str
    ok: int
    """The status of the call on the tenant's own objects."""
    variant: str = ""
    params: Callable[[Side], dict[str, str]] | None = None
    body: Callable[[Side], Any] | None = None
    """A valid JSON body."""
    path_params: Mapping[str, Callable[[Side], str]] = field(default_factory=dict)
    """Path parameters filled otherwise than by :data:`ID_PARAMS`."""
    unknown: int | None = None
    """The status of the call naming ids that do not exist; by default 404 when the path
    names an object, else not checked (e.g. a filter naming nothing finds nothing)."""
    refused: tuple[Refusal, ...] = ()
    shows: Callable[[Side], str] | None = None
    """What the answer on the tenant's own objects must include (a listing is not empty)."""

    @property
    def id(self) -> str:
        return f"{self.method} {self.route}" + (f" [{self.variant}]" if self.variant else "")

    @property
    def placeholders(self) -> list[str]:
        return re.findall(r"{(\w+)}", self.route)

    @property
    def names_an_object(self) -> bool:
        return any(p in ID_PARAMS for p in self.placeholders)

    @property
    def status_for_unknown(self) -> int | None:
        if self.unknown is not None:
            return self.unknown
        if self.scope in (SIGNED, GITHUB):
            return 401
        return 404 if self.names_an_object else None

    def request(self, side: Side, *, body: Any = None) -> Request:
        fill = {**ID_PARAMS, **self.path_params}
        path = self.route.format(**{p: fill[p](side) for p in self.placeholders})
        params = self.params(side) if self.params else {}
        if self.scope == SIGNED:
            headers = delivery(side.hook_secret, DELIVERY, at=START, delivery_id="delivery-1")
            return Request(self.method, path, params, content=DELIVERY, headers=headers)
        if self.scope == GITHUB:
            headers = github_headers(side.codehost_secret, PING, "ping", "delivery-1")
            return Request(self.method, path, params, content=PING, headers=headers)
        if body is None and self.body is not None:
            body = self.body(side)
        return Request(self.method, path, params, json=body, stream=self.route == "/stream")


PUSH_SUBSCRIPTION = {
    "endpoint": "https://1.1.1.1/push/laptop",
    "keys": {
        "p256dh": "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-"
        "Ts1XbjhazAkj7I99e8QcYP7DkM",
        "auth": "tBHItJI5svbpez7KI4CCXg",
    },
}
"""A browser's push subscription (a public push service, by address: nothing is looked up)."""


def _fixed(value: str) -> Callable[[Side], str]:
    return lambda _: value


CASES: list[Case] = [
    # --- goals ---
    Case("GET", "/goals", READ, 200, shows=lambda s: s.goal),
    Case(
        "POST",
        "/goals",
        CONTROL,
        201,
        body=lambda s: {"title": "Plan the trip"},
        refused=(
            Refusal(400, "title", {"title": "   "}),
            Refusal(400, "deadline", {"title": "Trip", "deadline": "2020-01-01T00:00:00Z"}),
        ),
    ),
    Case("GET", "/goals/{goal_id}", READ, 200),
    Case(
        "PATCH",
        "/goals/{goal_id}",
        CONTROL,
        200,
        body=lambda s: {"status": "paused", "budget": {"max_steps": 5}},
        refused=(  # the goal is active already
            Refusal(409, "active", {"status": "active", "budget": {"max_steps": 5}}),
        ),
    ),
    Case("GET", "/goals/{goal_id}/timeline", READ, 200, shows=lambda s: s.task),
    # --- tasks ---
    Case(
        "GET",
        "/tasks",
        READ,
        200,
        shows=lambda s: s.task,
        refused=(Refusal(400, "nonsense", params={"status": "nonsense"}),),
    ),
    Case(
        "GET",
        "/tasks",
        READ,
        200,
        "of a goal",
        params=lambda s: {"goal_id": s.goal},
        shows=lambda s: s.task,
    ),
    Case(
        "POST",
        "/tasks",
        CONTROL,
        201,
        body=lambda s: {"instructions": "Book a table", "goal_id": s.goal, "chat": True},
        unknown=404,
        refused=(
            Refusal(400, "instructions", {"instructions": "   "}),
            Refusal(400, "everyone!", {"instructions": "Hi", "audience": "everyone!"}),
            Refusal(400, "skill", {"instructions": "Hi", "inputs": {"day": "Friday"}}),
        ),
    ),
    Case("GET", "/tasks/{task_id}", READ, 200),
    Case("POST", "/tasks/{task_id}/control", CONTROL, 200, body=lambda s: {"action": "pause"}),
    Case("POST", "/tasks/{task_id}/answer", CONTROL, 409, body=lambda s: {"answer": "Yes"}),
    Case("GET", "/tasks/{task_id}/steps", READ, 200),
    # --- triggers and events ---
    Case("GET", "/triggers", READ, 200, shows=lambda s: s.hook),
    Case(
        "GET",
        "/triggers",
        READ,
        200,
        "of a goal",
        params=lambda s: {"goal_id": s.goal},
        shows=lambda s: s.trigger,
    ),
    Case(
        "POST",
        "/triggers",
        CONTROL,
        201,
        body=lambda s: {
            "kind": "cron",
            "spec": "0 8 * * *",
            "task": {"kind": "noop"},
            "goal_id": s.goal,
        },
        unknown=404,
    ),
    Case(
        "POST",
        "/triggers",
        CONTROL,
        201,
        "heartbeat",
        body=lambda s: {
            "kind": "heartbeat",
            "spec": "10m",
            "task": {"kind": "noop"},
            "goal_id": s.goal,
            "active_hours": "08:00-20:00",
            "days": "mon-fri",
            "budget": {"runs": 20, "tokens": 200000, "cost_usd": 1.5},
        },
        unknown=404,
        refused=(
            Refusal(400, "goal", {"kind": "heartbeat", "spec": "10m", "task": {"kind": "noop"}}),
            Refusal(
                400,
                "25:00",
                {
                    "kind": "heartbeat",
                    "spec": "10m",
                    "task": {"kind": "noop"},
                    "goal_id": "goal_x",
                    "active_hours": "08:00-25:00",
                },
            ),
        ),
    ),
    Case("PATCH", "/triggers/{trigger_id}", CONTROL, 200, body=lambda s: {"enabled": False}),
    Case(
        "PUT",
        "/triggers/{trigger_id}/budget",
        CONTROL,
        200,
        body=lambda s: {"runs": 5, "cost_usd": 0.5},
        refused=(Refusal(422, "runs", {"runs": -1}),),
    ),
    Case("GET", "/triggers/report", READ, 200, shows=lambda s: s.trigger),
    Case("GET", "/goals/{goal_id}/follow-ups", READ, 200),
    Case(
        "POST",
        "/events",
        CONTROL,
        202,
        body=lambda s: {"type": "ping", "payload": {"n": 1}, "dedupe_key": "ping-1"},
    ),
    Case("GET", "/events", READ, 200, shows=lambda s: s.event),
    # --- approvals, notifications, effects ---
    Case("GET", "/approvals", READ, 200, shows=lambda s: s.approval),
    Case(
        "GET",
        "/approvals",
        READ,
        200,
        "all",
        params=lambda s: {"status": "all"},
        shows=lambda s: s.approval,
    ),
    Case("GET", "/approvals/{approval_id}", READ, 200),
    Case("GET", "/approvals/{approval_id}/picture", READ, 200),
    Case(
        "POST",
        "/approvals/{approval_id}/decision",
        CONTROL,
        200,
        body=lambda s: {"approve": True, "scope": "task", "note": "go ahead"},
        refused=(Refusal(400, "hours", {"approve": True, "scope": "hours"}),),
    ),
    Case("GET", "/notifications", READ, 200, shows=lambda s: s.notification),
    # marking a notification read is a reader's act (the facade asks for ``read``)
    Case("POST", "/notifications/{notification_id}/read", READ, 204),
    Case("GET", "/effects", READ, 200, shows=lambda s: s.effect),
    Case(
        "GET",
        "/effects",
        READ,
        200,
        "of a task",
        params=lambda s: {"task_id": s.task},
        unknown=404,
        shows=lambda s: s.effect,
    ),
    # --- security ---
    Case("GET", "/grants", READ, 200, shows=lambda s: s.grant),
    Case(
        "GET",
        "/grants",
        READ,
        200,
        "all",
        params=lambda s: {"live": "false"},
        shows=lambda s: s.grant,
    ),
    Case(
        "POST",
        "/grants",
        CONTROL,
        201,
        body=lambda s: {"scopes": ["email.send"], "hours": 1, "reason": "the trip"},
        refused=(
            Refusal(400, "calendar.read", {"scopes": ["calendar.read"]}),
            Refusal(400, "weird", {"scopes": ["email.send"], "constraints": {"weird": 1}}),
        ),
    ),
    Case("DELETE", "/grants/{grant_id}", CONTROL, 200),
    Case("GET", "/connections", READ, 200, shows=lambda s: s.connection),
    Case(
        "DELETE", "/connections/{connection_id}", CONTROL, 200, params=lambda s: {"forget": "true"}
    ),
    Case("GET", "/accounts", READ, 200, shows=lambda s: s.connection),
    Case(
        "POST",
        "/accounts",
        CONTROL,
        # no CalDAV server answers here: the sign-in fails in plain words and nothing is kept
        # (tests/api/test_accounts.py connects to a real one)
        400,
        body=lambda s: {
            "kind": "calendar",
            "name": "home",
            "settings": {"url": "http://127.0.0.1:9/", "username": "ann"},
            "password": "not-stored",
        },
        refused=(
            Refusal(400, "url", {"kind": "calendar", "name": "x", "settings": {"url": "ftp://x"}}),
            Refusal(400, "fax", {"kind": "fax", "name": "x", "settings": {}}),
        ),
    ),
    Case("POST", "/accounts/{connection_id}/test", CONTROL, 200),
    Case("DELETE", "/accounts/{connection_id}", CONTROL, 200, params=lambda s: {"forget": "true"}),
    Case("GET", "/reports", READ, 200, shows=lambda s: s.report),
    Case("POST", "/reports/{report_id}/read", READ, 204),
    Case("GET", "/watches", READ, 200, shows=lambda s: s.watch),
    Case(
        "POST",
        "/watches",
        CONTROL,
        201,
        body=lambda s: {
            "url": "https://shop.example/laptop",
            "how": "css",
            "select": ".price",
            "conditions": [{"kind": "below", "threshold": 1000}],
            "goal_id": s.goal,
        },
        refused=(
            Refusal(
                400, "once a minute", {"url": "https://x.io/", "how": "text", "every_seconds": 9}
            ),
            Refusal(400, "CSS selector", {"url": "https://x.io/", "how": "css", "select": "..p"}),
            Refusal(400, "http", {"url": "ftp://x.io/", "how": "text"}),
        ),
    ),
    Case("GET", "/watches/{watch_id}", READ, 200),
    Case("POST", "/watches/{watch_id}/pause", CONTROL, 200),
    Case("POST", "/watches/{watch_id}/resume", CONTROL, 200),
    Case("DELETE", "/watches/{watch_id}", CONTROL, 200),
    Case("GET", "/rules", READ, 200, shows=lambda s: s.rule),
    Case(
        "POST",
        "/rules",
        CONTROL,
        201,
        body=lambda s: {"pattern": "calendar.*", "mode": "deny"},
        refused=(Refusal(400, "sometimes", {"pattern": "calendar.*", "mode": "sometimes"}),),
    ),
    Case("DELETE", "/rules/{rule_id}", CONTROL, 204),
    Case("GET", "/tokens", READ, 200, shows=lambda s: s.token),
    Case(
        "POST",
        "/tokens",
        CONTROL,
        201,
        body=lambda s: {"name": "laptop", "scopes": ["read"]},
        refused=(Refusal(400, "admin", {"name": "root", "scopes": ["admin"]}),),
    ),
    Case("DELETE", "/tokens/{token_id}", CONTROL, 200),
    Case("GET", "/audit", READ, 200, shows=lambda s: s.grant),
    # --- memory ---
    Case(
        "GET",
        "/memories",
        READ,
        200,
        shows=lambda s: s.memory,
        refused=(
            Refusal(400, "nonsense", params={"status": "nonsense"}),
            Refusal(400, "nonsense", params={"kind": "nonsense"}),
        ),
    ),
    Case(
        "GET",
        "/memories/search",
        READ,
        200,
        params=lambda s: {"q": "Lisbon"},
        shows=lambda s: s.memory,
        refused=(
            Refusal(400, "embedder", params={"mode": "semantic"}),
            Refusal(400, "everyone!", params={"audience": "everyone!"}),
        ),
    ),
    Case(
        "POST",
        "/memories",
        CONTROL,
        201,
        body=lambda s: {"content": "Likes green tea", "subjects": ["tea"], "importance": 0.7},
        refused=(
            Refusal(400, "nonsense", {"content": "Likes tea", "kind": "nonsense"}),
            Refusal(
                400,
                "valid_to",
                {
                    "content": "Likes tea",
                    "valid_from": "2026-02-01T00:00:00Z",
                    "valid_to": "2026-01-01T00:00:00Z",
                },
            ),
        ),
    ),
    Case(
        "POST",
        "/memories/bulk",
        CONTROL,
        200,
        refused=(
            Refusal(400, "item 1: kind", [{"content": "Likes tea"}, {"content": "x", "kind": "?"}]),
            Refusal(400, "observed_at", [{"content": "Likes tea", "observed_at": "2999-01-01Z"}]),
            Refusal(400, "bad import name", [{"content": "Tea"}], params={"import_name": "a:b"}),
        ),
    ),
    Case("GET", "/memories/export", READ, 200, shows=lambda s: s.memory),
    Case(
        "POST",
        "/memories/import",
        CONTROL,
        200,
        body=lambda s: {"markdown": "## Notes\n- Likes green tea\n"},
    ),
    Case(
        "POST",
        "/memories/forget",
        CONTROL,
        200,
        body=lambda s: {"source": f"task:{s.task}"},
        refused=(Refusal(400, "nonsense", {"source": "nonsense"}),),
    ),
    Case("POST", "/conversations/{task_id}/forget", CONTROL, 200),
    Case("GET", "/memories/{memory_id}", READ, 200),
    Case(
        "PATCH",
        "/memories/{memory_id}",
        CONTROL,
        200,
        body=lambda s: {"content": "Lives in Porto", "expected_version": 1},
        refused=(
            Refusal(409, "version 9", {"content": "Lives in Porto", "expected_version": 9}),
            Refusal(400, "nothing to change", {}),
        ),
    ),
    *(
        Case(
            "POST",
            "/memories/{memory_id}/{action}",
            CONTROL,
            200,
            action,
            path_params={"action": _fixed(action), "memory_id": memory},
        )
        for action, memory in (
            ("archive", ID_PARAMS["memory_id"]),
            ("delete", ID_PARAMS["memory_id"]),
            ("restore", lambda s: s.archived),
            ("promote", lambda s: s.candidate),
        )
    ),
    Case(
        "POST",
        "/memories/{memory_id}/versions/{version}/restore",
        CONTROL,
        200,
        path_params={"version": _fixed("1")},
    ),
    Case("GET", "/memory-passes", READ, 200, shows=lambda s: s.memory_pass),
    Case(
        "POST", "/memory-passes/{pass_id}/decision", CONTROL, 200, body=lambda s: {"approve": False}
    ),
    # --- skills ---
    Case("GET", "/skills", READ, 200, shows=lambda s: s.skill),
    Case("GET", "/skills/{skill}", READ, 200),
    Case(
        "GET",
        "/skills/{skill}",
        READ,
        200,
        "by name",
        path_params={"skill": lambda s: s.skill_name},
        unknown=404,
    ),
    Case("GET", "/skills/{skill}/history", READ, 200),
    Case("GET", "/skills/{skill}/diff", READ, 200, params=lambda s: {"from": "1", "to": "2"}),
    Case(
        "POST",
        "/skills/{skill}/restore",
        CONTROL,
        200,
        body=lambda s: {"version": 1},
        refused=(Refusal(404, "v9", {"version": 9}),),
    ),
    Case("POST", "/skills/{skill}/archive", CONTROL, 200),
    Case(
        "POST",
        "/skills/{skill}/decision",
        CONTROL,
        200,
        body=lambda s: {"approve": True},
        path_params={"skill": lambda s: s.proposal},
    ),
    # --- channels ---
    Case("GET", "/channels", READ, 200, shows=lambda s: s.channel),
    Case("GET", "/channels/push-key", READ, 200),
    Case(
        "POST",
        "/channels/apprise",
        CONTROL,
        201,
        body=lambda s: {"name": "desk", "url": "ntfy://a-topic"},
        refused=(
            Refusal(400, "Apprise does not understand", {"name": "x", "url": "nonsense://x"}),
            Refusal(400, "own network", {"name": "x", "url": "json://127.0.0.1:9/h"}),
            Refusal(409, "already a channel named", {"name": "phone", "url": "ntfy://t"}),
        ),
    ),
    Case(
        "POST",
        "/channels/push",
        CONTROL,
        201,
        body=lambda s: {"name": "laptop", "subscription": PUSH_SUBSCRIPTION},
        refused=(
            Refusal(
                400,
                "not valid",
                {
                    "name": "laptop",
                    "subscription": {**PUSH_SUBSCRIPTION, "keys": {"p256dh": "AA", "auth": "AA"}},
                },
            ),
        ),
    ),
    Case("POST", "/channels/{channel_id}/test", CONTROL, 200),
    Case("PATCH", "/channels/{channel_id}", CONTROL, 200, body=lambda s: {"enabled": False}),
    Case("DELETE", "/channels/{channel_id}", CONTROL, 200),
    # --- workspace files ---
    Case("GET", "/files", READ, 200, shows=lambda s: s.file),
    Case("GET", "/files/{path}", READ, 200),
    # --- the browser ---
    Case("GET", "/browser/views", READ, 200, shows=lambda s: s.task),
    Case("GET", "/browser/views/{task_id}/picture", READ, 200),
    Case("POST", "/browser/clear", CONTROL, 200),
    # --- the live stream ---
    Case(
        "GET",
        "/stream",
        READ,
        200,
        refused=(
            Refusal(400, "'seven'", headers={"Last-Event-ID": "seven"}),
            Refusal(400, "negative", headers={"Last-Event-ID": "-5"}),
        ),
    ),
    Case(
        "GET", "/stream", READ, 200, "of a goal", params=lambda s: {"goal_id": s.goal}, unknown=404
    ),
    # --- webhooks ---
    Case(
        "POST",
        "/triggers/{trigger_id}/webhook-secret",
        CONTROL,
        201,
        path_params={"trigger_id": lambda s: s.hook},
    ),
    Case("POST", "/hooks/{trigger_id}", SIGNED, 202, path_params={"trigger_id": lambda s: s.hook}),
    # --- code hosting ---
    Case(
        "POST",
        "/codehost/{kind}",
        CONTROL,
        201,
        path_params={"kind": _fixed("github")},
        body=lambda s: {"name": "more code", "repositories": ["octo/widgets"]},
        refused=(
            Refusal(400, "'octo' is not owner/name", {"name": "c", "repositories": ["octo"]}),
        ),
    ),
    Case(
        "POST",
        "/codehost/{account}/secret",
        CONTROL,
        201,
        path_params={"account": lambda s: s.codehost},
        unknown=404,
    ),
    Case(
        "POST",
        "/hooks/{kind}/{connection_id}",
        GITHUB,
        202,
        path_params={"kind": _fixed("github"), "connection_id": lambda s: s.codehost},
    ),
    # --- any facade method by name (the CLI's remote mode) ---
    Case(
        "POST",
        "/call/{method}",
        READ,
        200,
        "a read",
        path_params={"method": _fixed("get_task")},
        body=lambda s: {"task_id": s.task},
        unknown=404,
    ),
    Case(
        "POST",
        "/call/{method}",
        CONTROL,
        200,
        "a change",
        path_params={"method": _fixed("set_goal_status")},
        body=lambda s: {"goal_id": s.goal, "status": "paused"},
        unknown=404,
    ),
]

KNOWN_BUGS: dict[tuple[str, str], str] = {}
"""(test, case id) → why it fails: bugs found by these tests, kept visible until fixed."""
TESTS = ("credentials", "tenancy", "bad input", "refusals")
"""The tests over every case, as :data:`KNOWN_BUGS` names them."""


def cases(test: str, *, only: Callable[[Case], bool] = lambda c: True) -> list[Any]:
    assert test in TESTS, test
    chosen = []
    for case in CASES:
        if not only(case):
            continue
        bug = KNOWN_BUGS.get((test, case.id))
        marks = [pytest.mark.xfail(strict=True, reason=bug)] if bug else []
        chosen.append(pytest.param(case, id=case.id, marks=marks))
    return chosen


# --- the routes ------------------------------------------------------------------------------


def api_routes() -> dict[tuple[str, str], APIRoute]:
    """Every (method, path) the app serves under the API prefix, path without the prefix and
    as documented (``{path:path}`` is ``{path}``)."""
    app = create_app(cast(Service, None))  # routes reach the service only when called
    found: dict[tuple[str, str], APIRoute] = {}
    for context in iter_route_contexts(app.routes):  # routes of included routers too
        route, path = context.original_route, context.path or ""
        if not isinstance(route, APIRoute) or not path.startswith(API_PREFIX + "/"):
            continue
        for method in context.methods or ():
            documented = re.sub(r"{(\w+):\w+}", r"{\1}", path.removeprefix(API_PREFIX))
            found[method, documented] = route
    return found


ROUTES = api_routes()


def body_model(case: Case) -> type[BaseModel] | None:
    route = ROUTES[case.method, case.route]
    if route.body_field is None:
        return None
    return cast(type[BaseModel], route.body_field.field_info.annotation)


def takes_query(case: Case, name: str) -> bool:
    return any(q.name == name for q in ROUTES[case.method, case.route].dependant.query_params)


def test_every_route_has_a_case() -> None:
    assert ROUTES, "no routes found: has FastAPI changed how it lists them?"
    covered = {(c.method, c.route) for c in CASES}
    assert set(ROUTES) - covered == set(), "add a contract case for each new route"
    assert covered - set(ROUTES) == set(), "a case for a route that no longer exists"
    assert len({c.id for c in CASES}) == len(CASES), "two cases with one id"
    for case in CASES:
        assert (body_model(case) is not None) == (case.body is not None), (
            f"{case.id}: a route with a JSON body needs a valid body in its case, and only it"
        )
        assert set(case.placeholders) <= set(ID_PARAMS) | set(case.path_params), case.id
    for test, case_id in KNOWN_BUGS:
        assert test in TESTS, test
        assert case_id in {c.id for c in CASES}, case_id


# --- the world: two tenants over a real socket --------------------------------------------------

# The API layer's own checks (credentials, validation, the routes' tenancy) do not depend on the
# backend: they run on SQLite only, to keep the suite's time in bounds. What they rest on, the
# facade's tenancy and the store, is tested on both backends (tests/test_tenancy.py).


@dataclass
class World:
    api: Api
    store: Store
    clock: SimulatedClock
    a: Side
    b: Side
    ghost: Side
    """Ids of the right kinds that name nothing."""

    def client(self, token: str | None) -> httpx.AsyncClient:
        return self.api.client(token)

    def token_for(self, scope: str) -> str | None:
        return {READ: self.api.a.read, CONTROL: self.api.a.control}.get(scope)

    async def states(self) -> tuple[Any, Any]:
        return (
            await state_of(self.store, self.clock, self.api.a),
            await state_of(self.store, self.clock, self.api.b),
        )

    def of_b(self) -> set[str]:
        """What A must never be shown: every id, name and secret of B's."""
        b = self.api.b
        return {getattr(self.b, f.name) for f in fields(Side)} | {b.person.name, b.control, b.read}


async def _side(owner: Service, t: Tenant) -> Side:
    pid, name = t.person.id, t.person.name
    hook = await owner.add_trigger(
        person_id=pid,
        kind=TriggerKind.EVENT,
        spec="delivery",
        task=TaskSpec(kind="noop"),
        name=f"{name}'s hook",
    )
    archived = (await owner.remember(person_id=pid, content=f"{name} once lived in Porto")).memory
    assert archived is not None
    await owner.archive_memory(archived.id)
    candidate = await owner.memory.write(
        person_id=pid,
        content=f"{name} may like jazz",
        kind=MemoryKind.PREFERENCE,
        source=Source(kind=SourceKind.CONNECTOR, ref=f"{t.connection.id}/m1", trusted=False),
        actor="agent:setup",
    )
    assert candidate.memory is not None
    proposed = await SkillLibrary(owner.store, owner.clock).propose(
        person_id=pid,
        name=f"{name}-taxi",
        content=SkillContent(description="How to get a taxi", procedure="Call the rank"),
        actor="agent:setup",
        trusted=False,
    )
    assert proposed.skill is not None
    assert owner.data_dir is not None  # what the tenant's browser last showed, as a picture
    record_look(owner.data_dir, pid, t.task.id, at=owner.clock.now(), picture=png())
    code = await owner.connect_codehost(
        person_id=pid, kind="github", name=f"{name}'s code", repositories=["octo/widgets"]
    )
    return Side(
        person=t.person.id,
        goal=t.goal.id,
        task=t.task.id,
        trigger=t.trigger.id,
        hook=hook.id,
        hook_secret=await owner.webhook_secret(hook.id),
        codehost=code.connection.id,
        codehost_secret=code.secret,
        event=t.event.id,
        effect=t.effect.id,
        approval=t.approval.id,
        notification=t.notification,
        connection=t.connection.id,
        grant=t.grant.id,
        rule=t.rule.id,
        skill=t.skill.id,
        skill_name=t.skill.name,
        memory=t.memory.id,
        archived=archived.id,
        candidate=candidate.memory.id,
        proposal=proposed.skill.id,
        memory_pass=t.memory_pass.id,
        watch=t.watch.id,
        channel=t.channel.id,
        report=t.report.id,
        file=t.file,
        token=t.token.id,
    )


def _ghost_of(side: Side) -> Side:
    def nothing(real: str) -> str:
        prefix, sep, _ = real.partition("_")
        return new_id(prefix if sep else "nobody")

    return Side(**{f.name: nothing(getattr(side, f.name)) for f in fields(Side)})


DB_FILE = "steward.db"


@dataclass(frozen=True)
class Snapshot:
    """The world's two tenants as built once: the data directory with their database (and
    the vault key their secrets are sealed with), and what names their objects."""

    data_dir: Path
    a: Tenant
    b: Tenant
    side_a: Side
    side_b: Side


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    """Built once per module: each test gets a copy of its data directory, so a fresh database
    in the same state as if built for it (building it, a few hundred writes, cost more than
    most tests), with the same ids and tokens in it."""
    data_dir = tmp_path_factory.mktemp("world")

    async def build() -> Snapshot:
        store = await Store.open(f"sqlite:///{data_dir / DB_FILE}")
        try:
            clock = SimulatedClock(START)
            a = await make_tenant(store, clock, "ann", data_dir)
            b = await make_tenant(store, clock, "bob", data_dir)
            for t in (a, b):
                take_picture(data_dir, t)  # the picture shown with its approval
            owner = Service(store, clock, data_dir=data_dir)
            side_a, side_b = await _side(owner, a), await _side(owner, b)
        finally:
            await store.close()
        return Snapshot(data_dir=data_dir, a=a, b=b, side_a=side_a, side_b=side_b)

    built = asyncio.run(build())
    files = sorted(p.name for p in data_dir.iterdir())
    assert files == ["browser", DB_FILE, "vault.key", "workspace"], (
        f"copy these too, or leave them out: {files}"
    )
    return built


@pytest.fixture
async def world(snapshot: Snapshot, clock: SimulatedClock, tmp_path: Path) -> AsyncIterator[World]:
    """The API served over a real loopback socket on a fresh copy of the snapshot (SQLite)."""
    data_dir = tmp_path / "world"
    shutil.copytree(snapshot.data_dir, data_dir)
    store = await Store.open(f"sqlite:///{data_dir / DB_FILE}")
    try:
        owner = Service(store, clock, data_dir=data_dir)
        async with serving(create_app(owner)) as url:
            api = Api(base=url + API_PREFIX, owner=owner, a=snapshot.a, b=snapshot.b)
            yield World(
                api=api,
                store=store,
                clock=clock,
                a=snapshot.side_a,
                b=snapshot.side_b,
                ghost=_ghost_of(snapshot.side_b),
            )
    finally:
        await store.close()


# --- sending and checking -----------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    status: int
    headers: httpx.Headers
    text: str
    """The body; of a stream that started (it never ends), its first event."""

    def json(self) -> Any:
        return json.loads(self.text)


async def send(client: httpx.AsyncClient, req: Request) -> Answer:
    extra: dict[str, Any] = {}
    if req.json is not None:
        extra["json"] = req.json
    if req.content is not None:
        extra["content"] = req.content
    async with client.stream(
        req.method, req.path, params=dict(req.params), headers=dict(req.headers), **extra
    ) as response:
        if req.stream and response.status_code == 200:
            event: list[str] = []
            async for line in response.aiter_lines():
                if not line and event:
                    break
                event.append(line)
            return Answer(response.status_code, response.headers, "\n".join(event))
        await response.aread()
        return Answer(response.status_code, response.headers, response.text)


def assert_problem(answer: Answer, status: int, *, naming: str | None = None) -> dict[str, Any]:
    """A problem document (RFC 9457) of ``status`` whose detail names ``naming``."""
    assert answer.status == status, answer.text
    assert answer.headers["content-type"].startswith(PROBLEM), answer.headers
    body: dict[str, Any] = answer.json()
    assert body["status"] == status, body
    assert body["title"], body
    assert body["detail"], body
    if naming is not None:
        assert naming in body["detail"], body
    if status == 401:
        assert answer.headers["www-authenticate"] == "Bearer", answer.headers
    return body


def assert_unknown(case: Case, answer: Answer, side: Side) -> None:
    """Answered as a call naming objects that do not exist: 404 names one of them."""
    status = case.status_for_unknown
    assert status is not None
    body = assert_problem(answer, status)
    if status == 404:
        named = {getattr(side, f.name) for f in fields(Side)}
        assert any(x in body["detail"] for x in named), body


async def assert_went_through(world: World, case: Case, req: Request, answer: Answer) -> None:
    """The call on A's own objects passed every check of who may do it (it may still be
    refused on its merits) and showed A nothing of B's."""
    assert answer.status not in (401, 403, 404), answer.text
    assert answer.status == case.ok, answer.text
    if case.shows is not None:
        assert case.shows(world.a) in answer.text, answer.text
    leaked = {x for x in world.of_b() if x in answer.text}
    assert not leaked, f"{case.id} showed A {leaked}: {answer.text}"
    kind = answer.headers.get("content-type", "")
    if answer.status >= 400:
        assert_problem(answer, answer.status)
    elif req.stream:  # the first event is A's first entry (under the goal asked for)
        assert kind.startswith("text/event-stream"), answer.headers
        goal = req.params.get("goal_id")
        first = (await world.api.owner.feed(person_id=world.a.person, goal_id=goal))[0]
        assert f"id: {first.seq}" in answer.text.splitlines(), answer.text
        assert f"event: {first.kind}" in answer.text.splitlines(), answer.text
    elif answer.status == 204:
        assert answer.text == "", answer.text
    else:
        served = ("application/json", "text/markdown", "application/octet-stream", "image/png")
        assert kind.startswith(served), kind
        if kind.startswith("application/json"):
            answer.json()


def anonymous(text: str, side: Side) -> str:
    """``text`` with the side's ids in it replaced by their names."""
    for name, value in sorted(
        ((f.name, getattr(side, f.name)) for f in fields(Side)), key=lambda nv: -len(nv[1])
    ):
        text = text.replace(value, f"<{name}>")
    return text


# --- credentials -------------------------------------------------------------------------------


@pytest.mark.parametrize("case", cases("credentials"))
async def test_every_route_needs_credentials(world: World, case: Case) -> None:
    request = case.request(world.a)
    if case.scope not in (SIGNED, GITHUB):  # a revoked token is as good as none
        await world.api.owner.revoke_token(world.api.a.token.id, person_id=world.a.person)
    before = await world.states()
    if case.scope == SIGNED:
        headers = dict(request.headers)
        token = world.api.a.control
        for refused in (
            {**headers, "webhook-signature": "v1," + "A" * 44},
            {**headers, "webhook-signature": "garbage"},
            delivery(world.b.hook_secret, DELIVERY, at=START, delivery_id="delivery-1"),
            # signed for another body, or another id: a replay under a new id
            {**delivery(world.a.hook_secret, b"{}", at=START), "webhook-id": "delivery-1"},
            {**headers, "webhook-id": "delivery-2"},
        ):
            async with world.client(token) as client:  # a token is no signature
                assert_problem(await send(client, replace(request, headers=refused)), 401)
    elif case.scope == GITHUB:
        headers = dict(request.headers)
        for refused in (
            {**headers, "X-Hub-Signature-256": "sha256=" + "0" * 64},
            {k: v for k, v in headers.items() if k != "X-Hub-Signature-256"},
            github_headers(world.b.codehost_secret, PING, "ping", "delivery-1"),
            github_headers(world.a.codehost_secret, b"{}", "ping", "delivery-1"),
        ):
            async with world.client(world.api.a.control) as client:  # a token is no signature
                assert_problem(await send(client, replace(request, headers=refused)), 401)
    else:
        a = world.api.a
        for authorization in (
            None,
            "Bearer",
            "Bearer stw_garbage",
            f"Bearer {a.read}x",
            f"Bearer {a.control}",  # revoked
            f"Basic {a.read}",
        ):
            headers = {"Authorization": authorization} if authorization else {}
            async with world.client(None) as client:
                assert_problem(await send(client, replace(request, headers=headers)), 401)
    assert await world.states() == before


async def test_a_delivery_without_a_signature_is_unauthorized(world: World) -> None:
    before = await world.states()
    async with world.client(None) as client:
        answer = await client.post(
            f"/hooks/{world.a.hook}",
            content=DELIVERY,
            headers={"webhook-id": "d-1", "webhook-timestamp": str(int(START.timestamp()))},
        )
    assert_problem(Answer(answer.status_code, answer.headers, answer.text), 401)
    assert await world.states() == before


# --- tenancy -----------------------------------------------------------------------------------


@pytest.mark.parametrize("case", cases("tenancy"))
async def test_a_token_acts_only_for_its_person_within_its_scopes(world: World, case: Case) -> None:
    before = await world.states()
    before_b = before[1]
    mine, theirs, nobodys = (case.request(s) for s in (world.a, world.b, world.ghost))
    if case.scope == CONTROL:  # a read token may not change anything, not even A's
        async with world.client(world.api.a.read) as client:
            assert_problem(await send(client, mine), 403, naming="control")
        assert await world.states() == before

    if theirs != mine:  # the call names objects: B's are answered as ones that do not exist
        if case.scope in (SIGNED, GITHUB):  # A signs a delivery to B's with A's own secret
            theirs = replace(theirs, headers=mine.headers)
            nobodys = replace(nobodys, headers=mine.headers)
        async with world.client(world.api.a.control) as client:
            to_nobody = await send(client, nobodys)
            to_b = await send(client, theirs)
        if case.status_for_unknown is not None:
            assert_unknown(case, to_nobody, world.ghost)
        assert to_b.status == to_nobody.status, to_b.text
        assert anonymous(to_b.text, world.b) == anonymous(to_nobody.text, world.ghost)
        assert (await world.states())[1] == before_b

    async with world.client(world.token_for(case.scope)) as client:
        own = await send(client, mine)
    await assert_went_through(world, case, mine, own)
    assert (await world.states())[1] == before_b


# --- bad input ---------------------------------------------------------------------------------


def wrong_type(value: Any) -> Any:
    """A value of another JSON type than ``value``'s."""
    return "not an object" if isinstance(value, dict) else {"not": "this"}


def bad_bodies(case: Case, side: Side) -> Iterator[tuple[Any, str]]:
    """Invalid bodies for ``case``, each with the field its answer must name: an unknown
    field, each field of the valid body with a value of the wrong type, each required field
    left out."""
    model = body_model(case)
    if model is None or case.body is None:
        return
    valid = case.body(side)
    yield {**valid, "surprise": 1}, "surprise"
    for name, value in valid.items():
        yield {**valid, name: wrong_type(value)}, name
    # a facade call's body is its method's arguments, all of them required in these cases
    required = (
        [n for n, spec in model.model_fields.items() if spec.is_required()]
        if isinstance(model, type) and issubclass(model, BaseModel)
        else list(valid)
    )
    for name in required:
        yield {k: v for k, v in valid.items() if k != name}, name


def refutable(case: Case) -> bool:
    return (
        case.body is not None
        or case.status_for_unknown is not None
        or takes_query(case, "limit")
        or "version" in case.placeholders
        or "action" in case.placeholders
    )


@pytest.mark.parametrize("case", cases("bad input", only=refutable))
async def test_bad_input_is_refused_and_changes_nothing(world: World, case: Case) -> None:
    before = await world.states()
    mine = case.request(world.a)
    refused: list[tuple[Request, int, str | None]] = [
        (case.request(world.a, body=body), 422, named) for body, named in bad_bodies(case, world.a)
    ]
    if case.body is not None:
        garbled = {"Content-Type": "application/json"}
        refused.append((replace(mine, json=None, content=b"{not json", headers=garbled), 422, None))
    if takes_query(case, "limit"):
        refused.append((replace(mine, params={**mine.params, "limit": "0"}), 422, "limit"))
    if "action" in case.placeholders:
        path = case.route.format(memory_id=world.a.memory, action="explode")
        refused.append((replace(mine, path=path), 422, "action"))
    if "version" in case.placeholders:
        for version in ("0", "first"):
            path = case.route.format(memory_id=world.a.memory, version=version)
            refused.append((replace(mine, path=path), 422, "version"))
    if case.scope == SIGNED:  # signed, but not a JSON object
        for content in (b"[1]", b"{not json"):
            headers = delivery(world.a.hook_secret, content, at=START, delivery_id="delivery-1")
            refused.append((replace(mine, content=content, headers=headers), 400, "JSON object"))
    if case.scope == GITHUB:
        for content in (b"[1]", b"{not json"):
            headers = github_headers(world.a.codehost_secret, content, "ping", "delivery-1")
            refused.append((replace(mine, content=content, headers=headers), 400, "JSON object"))
    async with world.client(world.api.a.control) as client:
        for request, status, named in refused:
            assert_problem(await send(client, request), status, naming=named)
        if case.status_for_unknown is not None:
            nobodys = case.request(world.ghost)
            if case.scope in (SIGNED, GITHUB):
                nobodys = replace(nobodys, headers=mine.headers)
            assert_unknown(case, await send(client, nobodys), world.ghost)
    assert refused or case.status_for_unknown is not None
    assert await world.states() == before


@pytest.mark.parametrize("case", cases("refusals", only=lambda c: bool(c.refused)))
async def test_a_refused_request_changes_nothing(world: World, case: Case) -> None:
    before = await world.states()
    mine = case.request(world.a)
    async with world.client(world.api.a.control) as client:
        for refusal in case.refused:
            request = replace(
                case.request(world.a, body=refusal.body) if refusal.body is not None else mine,
                params={**mine.params, **refusal.params},
                headers={**mine.headers, **refusal.headers},
            )
            assert_problem(await send(client, request), refusal.status, naming=refusal.naming)
            assert await world.states() == before, refusal


# --- the document ------------------------------------------------------------------------------


async def test_the_openapi_document_lists_the_bearer_scheme(world: World) -> None:
    # the document is made from the app's routes, whatever the database: SQLite only
    async with world.client(None) as client:
        answer = await client.get("/openapi.json")
    assert answer.status_code == 200, answer.text
    document = answer.json()
    schemes = document["components"]["securitySchemes"]
    assert {"type": "http", "scheme": "bearer"}.items() <= schemes["HTTPBearer"].items()
    for method, route in ROUTES:
        operation = document["paths"][API_PREFIX + route][method.lower()]
        signed = route in ("/hooks/{trigger_id}", "/hooks/{kind}/{connection_id}")
        expected: list[Any] = [] if signed else [{"HTTPBearer": []}]
        assert operation.get("security") == expected, (method, route)
