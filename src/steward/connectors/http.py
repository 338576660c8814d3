"""Calling web APIs with the person's credentials, through the egress broker.

The model writes ``{{secret:<name>}}`` where a credential goes; the broker substitutes the
secret at the network boundary, only for the hosts the secret is bound to, and redacts it from
the response, so the model, the journal and the logs only ever hold the placeholder.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from steward.domain.actions import EffectClass
from steward.domain.roles import Role
from steward.harness.tools import Tool, ToolContext, ToolError, tool
from steward.sentinel.egress import API_CALL as API_CALL  # the scope this tool needs
from steward.sentinel.egress import EgressBroker, EgressRefused


def http_tool(broker: EgressBroker) -> Tool:
    """The ``http_fetch`` tool over ``broker``.

    Any method may change something at the far end, and a request's URL can carry data out,
    so every call is an external effect: the sentinel decides it like sending mail, and a URL
    that came only from untrusted content is put to the person first. Responses are untrusted.
    """

    @tool(effect=EffectClass.EXTERNAL, scopes=[API_CALL], untrusted_output=True)
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
