"""Calling web APIs with the person's credentials, through the egress broker.

The model writes ``{{secret:<name>}}`` where a credential goes; the broker substitutes the
secret at the network boundary, only for the hosts the secret is bound to, and redacts it from
the response, so the model, the journal and the logs only ever hold the placeholder.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field

from steward.domain.actions import EffectClass
from steward.domain.roles import Role
from steward.harness.tools import Tool, ToolContext, ToolError, tool
from steward.sentinel.egress import API_CALL as API_CALL  # the scope this tool needs
from steward.sentinel.egress import EgressBroker, EgressRefused

_SECRET = re.compile(r"\{\{secret:([^}]+)\}\}")


VERBS = {
    "GET": "Read",
    "HEAD": "Check",
    "POST": "Send a request to",
    "PUT": "Replace something at",
    "PATCH": "Change something at",
    "DELETE": "Delete something at",
}


def describe(args: Mapping[str, Any]) -> str:
    """The call in one line for the person: what it does, where, with which of their secrets
    (by name; never a header's value), and what a JSON body says it is for (recipient,
    subject)."""
    method = str(args.get("method") or "GET")
    said = f"{VERBS.get(method, method)} {args.get('url', '')}"
    secrets = sorted(set(_SECRET.findall(json.dumps(args.get("headers") or {}))))
    if secrets:
        said += f" with your secret {', '.join(secrets)}"
    try:
        body = json.loads(str(args.get("body") or ""))
    except ValueError:
        body = None
    if isinstance(body, dict):
        about = [f"{key} {body[key]}" for key in ("to", "subject") if body.get(key)]
        if about:
            said += ": " + ", ".join(about)
    return said


def http_tool(broker: EgressBroker) -> Tool:
    """The ``http_fetch`` tool over ``broker``.

    Any method may change something at the far end, and a request's URL can carry data out,
    so every call is an external effect: the sentinel decides it like sending mail, and a URL
    that came only from untrusted content is put to the person first. Responses are untrusted.
    """

    @tool(effect=EffectClass.EXTERNAL, scopes=[API_CALL], untrusted_output=True, summarize=describe)
    async def http_fetch(
        ctx: ToolContext,
        url: Annotated[
            str, Role.HOST, Field(description="https URL (plain http only to localhost)")
        ],
        method: Literal["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"] = "GET",
        headers: Annotated[dict[str, str] | None, Role.CONTENT] = None,
        body: Annotated[str | None, Role.CONTENT] = None,
    ) -> dict[str, Any]:
        """Call a web API. Write {{secret:<name>}} where a credential goes (a header, the
        query); you never see its value."""
        try:
            response = await broker.request(
                person_id=ctx.person_id,
                method=method,
                url=url,
                headers=headers,
                content=body,
                actor=f"agent:{ctx.task_id}",
                scope=API_CALL,
            )
        except EgressRefused as exc:  # nothing was sent: a plain failure the model can read
            raise ToolError(str(exc)) from None
        return {"status": response.status, "headers": response.headers, "body": response.text}

    return http_fetch
