"""Steward as an MCP server, so other agents and desktop assistants can work with it: create
goals, ask the agent, list tasks, answer approvals, search and add memories.

The same tokens and policy as the HTTP API: every tool call acts through the owner's facade
bound to an API token (:meth:`~steward.service.Service.authenticate`), so the facade decides
tenancy and scopes — a ``read`` token lists and searches, a ``control`` token may also change
things, and anyone else's object is not found. A facade's refusal (a
:class:`~steward.errors.UsageError`) is the tool's error result, with its message.

Two transports:

* streamable HTTP at ``/mcp`` on the API's app (:func:`mount`), authenticated by the
  ``Authorization: Bearer <token>`` header of every request;
* stdio (:func:`run_stdio`), serving one token's person to a desktop assistant that launches
  Steward as a subprocess.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib.metadata import version
from typing import Annotated, Any, Final, Literal

from fastapi import FastAPI
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types import ToolAnnotations
from pydantic import Field
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from steward.api.common import bearer, problem, token_of
from steward.domain import GoalStatus, TaskStatus
from steward.domain.memory import MemoryKind
from steward.errors import Unauthorized, UsageError
from steward.service import Service
from steward.service.encode import to_jsonable

PATH: Final = "/mcp"
"""Where :func:`mount` serves MCP on the app."""

_CALLER: Final = "steward.caller"
"""The ASGI scope key under which the HTTP gate leaves the request's bound facade."""

Json = dict[str, Any]
_Call = Callable[[Service], Awaitable[object]]

_READS = ToolAnnotations(read_only_hint=True)
_ADDS = ToolAnnotations(read_only_hint=False, destructive_hint=False)

Id = Annotated[str, Field(min_length=1, max_length=160)]

INSTRUCTIONS = (
    "Steward is the person's self-hosted agent runtime: durable goals, tasks the agent works "
    "on, approvals it waits for, and what it remembers about the person. Every tool acts for "
    "the person of the API token you connected with: a 'read' token may list, show and "
    "search; a 'control' token may also create goals, ask the agent, remember and decide "
    "approvals."
)


def build_server(service: Service, *, token: str | None = None) -> MCPServer:
    """Steward's tools over ``service``, the owner's facade.

    With ``token``, every call acts through the facade bound to it (stdio: one person for the
    whole connection). Without, every call acts through the facade bound to the bearer token of
    the HTTP request it arrived in, which :func:`mount`'s gate checked and attached.
    Authenticating per call (stdio) or per request (HTTP) means a revoked token stops working
    at once, not when the connection ends.
    """
    server: MCPServer = MCPServer(
        "steward", version=version("steward"), instructions=INSTRUCTIONS, log_level="WARNING"
    )

    async def act(ctx: Context, call: _Call) -> Json:
        try:
            caller = await service.authenticate(token) if token is not None else _caller_of(ctx)
            value = to_jsonable(await call(caller))
        except UsageError as exc:
            # anticipated: the model reads the message (anything else stays a crash, whose
            # details the SDK logs here and keeps from the client)
            raise ToolError(str(exc)) from exc
        # a listing is an object too, as in the HTTP API: every result has one JSON schema
        return value if isinstance(value, dict) else {"items": value}

    @server.tool(annotations=_ADDS)
    async def create_goal(
        ctx: Context,
        title: Annotated[str, Field(min_length=1, max_length=500, description="What to achieve.")],
        instructions: Annotated[
            str, Field(max_length=20_000, description="How to go about it, in plain words.")
        ] = "",
    ) -> Json:
        """Create a goal: something Steward works toward over time (needs a control token)."""
        return await act(
            ctx,
            lambda svc: svc.create_goal(person_id="", title=title, instructions=instructions),
        )

    @server.tool(annotations=_READS)
    async def list_goals(
        ctx: Context,
        status: Annotated[
            GoalStatus | None, Field(description="Only goals in this status.")
        ] = None,
    ) -> Json:
        """The person's goals, newest first."""
        return await act(ctx, lambda svc: svc.list_goals(person_id="", status=status))

    @server.tool(annotations=_ADDS)
    async def ask(
        ctx: Context,
        instructions: Annotated[
            str, Field(min_length=1, max_length=20_000, description="What the agent should do.")
        ],
        goal_id: Annotated[Id | None, Field(description="The goal it serves, if any.")] = None,
    ) -> Json:
        """Ask Steward's agent to do something; returns the task it created, which runs in the
        background (follow it with `task`). Needs a control token."""
        return await act(
            ctx,
            lambda svc: svc.ask_agent(person_id="", instructions=instructions, goal_id=goal_id),
        )

    @server.tool(annotations=_READS)
    async def list_tasks(
        ctx: Context,
        status: Annotated[
            TaskStatus | None, Field(description="Only tasks in this status.")
        ] = None,
        goal_id: Annotated[Id | None, Field(description="Only tasks under this goal.")] = None,
    ) -> Json:
        """The person's tasks, newest first."""
        return await act(ctx, lambda svc: svc.list_tasks(status=status, goal_id=goal_id))

    @server.tool(annotations=_READS)
    async def task(
        ctx: Context, task_id: Annotated[Id, Field(description="The task's id.")]
    ) -> Json:
        """One task, with its activations (runs) and the effects (external actions) it made."""
        return await act(ctx, lambda svc: svc.task_detail(task_id))

    @server.tool(annotations=_READS)
    async def list_approvals(ctx: Context) -> Json:
        """Actions the agent waits to be allowed or refused: decide them with
        `decide_approval`."""
        return await act(ctx, lambda svc: svc.list_approvals(person_id=""))

    @server.tool(annotations=ToolAnnotations(read_only_hint=False))
    async def decide_approval(
        ctx: Context,
        approval_id: Annotated[Id, Field(description="The approval's id.")],
        approve: Annotated[bool, Field(description="True allows the action, false refuses it.")],
        scope: Annotated[
            Literal["once", "task", "hours", "always"],
            Field(
                description="What approving also allows: just this action (once), or the same "
                "tool for the same recipients and hosts (at most the same amount) for the rest "
                "of this task (task), for some hours (hours, with `hours`), or always (always)."
            ),
        ] = "once",
        hours: Annotated[
            float | None, Field(gt=0, le=24 * 365, description="How long, for scope hours.")
        ] = None,
        note: Annotated[
            str | None, Field(max_length=2000, description="Why, for the record.")
        ] = None,
    ) -> Json:
        """Allow or refuse exactly the action an approval asks about; the waiting task resumes.
        Recorded as decided by this token. Needs a control token."""
        return await act(
            ctx,
            lambda svc: svc.decide_approval(
                approval_id, approve=approve, scope=scope, hours=hours, note=note
            ),
        )

    @server.tool(annotations=_READS)
    async def search_memory(
        ctx: Context,
        query: Annotated[str, Field(min_length=1, max_length=2000, description="What to recall.")],
        audience: Annotated[
            str,
            Field(
                max_length=140,
                description="Who would hear the answer: private (the person alone), public, or "
                "group:<name>. Only memories that audience may hear are found.",
            ),
        ] = "private",
    ) -> Json:
        """What Steward remembers about the person that matches the query, best first."""
        return await act(
            ctx, lambda svc: svc.search_memories(person_id="", query=query, audience=audience)
        )

    @server.tool(annotations=_ADDS)
    async def remember(
        ctx: Context,
        content: Annotated[
            str, Field(min_length=1, max_length=2000, description="The statement to keep.")
        ],
        kind: Annotated[MemoryKind, Field(description="What sort of statement it is.")] = (
            MemoryKind.NOTE
        ),
    ) -> Json:
        """Remember something the person states (recorded as said through this token). Needs a
        control token."""
        return await act(ctx, lambda svc: svc.remember(person_id="", content=content, kind=kind))

    @server.tool(annotations=_READS)
    async def list_notifications(
        ctx: Context,
        unread: Annotated[bool, Field(description="Only those not read yet.")] = False,
    ) -> Json:
        """What Steward told the person (reports, questions, approvals), newest first."""
        return await act(ctx, lambda svc: svc.list_notifications(person_id="", unread=unread))

    return server


def _caller_of(ctx: Context) -> Service:
    """The facade :class:`_Gate` bound to the HTTP request this call arrived in."""
    request = ctx.request_context.request
    caller = request.scope.get(_CALLER) if isinstance(request, Request) else None
    if not isinstance(caller, Service):
        # served without the gate: refuse rather than act for nobody in particular
        raise Unauthorized("this MCP endpoint is served without authentication")
    return caller


class _Gate:
    """The ASGI app at :data:`PATH`: refuses a request without a live token (401, exactly as
    the API does: the same check, the same problem document), then serves it as MCP, bound to
    that token.

    Each request runs in its own stateless session manager, entered and left within the
    request. The SDK's manager needs its ``run()`` task group entered before it serves, which
    a Starlette app does in its lifespan; but Steward serves with ``lifespan="off"`` (next to
    the runtime, and in tests), and a mounted app's lifespan never runs anyway. Stateless, the
    manager keeps nothing between requests, so nothing outlives a request and there is no
    background task to start lazily or to stop. Nothing is lost: every request is
    authenticated on its own, and these tools neither call back into the client nor stream,
    so each answer is one JSON body (``json_response``) rather than an event stream.
    """

    def __init__(self, service: Service) -> None:
        self.service = service
        # the low-level server a session manager drives: MCPServer has no public accessor for
        # it (the SDK's own in-process Client reads this attribute too)
        self.server = build_server(service)._lowlevel_server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope)
        try:
            token = token_of(request, await bearer(request))
            scope[_CALLER] = await self.service.authenticate(token)
        except Unauthorized as exc:
            await problem(401, "Unauthorized", str(exc))(scope, receive, send)
            return
        # No Host/Origin (DNS rebinding) checks: they guard servers that trust whoever can
        # reach them, and this one trusts only the bearer token, which no other site can send.
        manager = StreamableHTTPSessionManager(self.server, stateless=True, json_response=True)
        async with manager.run():
            await manager.handle_request(scope, receive, send)


def mount(app: FastAPI) -> None:
    """Serve MCP (streamable HTTP) at :data:`PATH` on ``app``, for its ``app.state.service``.

    A route, not a Starlette mount: a mount matches only ``/mcp/...`` and redirects ``/mcp``,
    the endpoint MCP clients are given. POST only: without sessions there is no stream to
    open with GET and no session to end with DELETE, and the transport answers those with 405
    (a GET would otherwise hang open, waiting for messages nothing can send)."""
    gate = _Gate(app.state.service)
    app.router.routes.append(Route(PATH, gate, methods=["POST"], include_in_schema=False))


async def run_stdio(service: Service, token: str) -> None:
    """Serve MCP over stdin/stdout for ``token``'s person until the client hangs up.

    A bad or revoked token is refused at once (:class:`~steward.errors.Unauthorized`), before
    anything is served. Nothing else may write to stdout meanwhile, it is the wire: the caller
    sends logs to stderr (as the CLI's ``configure_logging`` does)."""
    await service.authenticate(token)
    await build_server(service, token=token).run_stdio_async()
