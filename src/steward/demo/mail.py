"""The demo office's mail as a connector offers it: one typed tool, ``office_mail_send``,
whose proposed call reads as the person would say it ("Send Dana Park (dana.park@…) an email:
“Hi Dana, Thursday at 10:00 works.”").

It is what a mail connector contributes (see :mod:`steward.connectors.base`): an external
effect with the ``mail.send`` scope, bound to the person's e-mail connection (the policy holds
it to that connection's scopes and recipients), with a one-line summary for the approval. The
request itself goes through the egress broker, so the office's secret stays in the vault and
is put on the wire only for the office's host; the office dedupes by the call's idempotency
key, so a retry after a crash sends once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import Field

from steward.demo.office import CONTACTS, SEND_PATH
from steward.domain.actions import EffectClass
from steward.domain.roles import Role
from steward.domain.secrets import placeholder
from steward.harness.tools import Tool, ToolContext, ToolError, tool
from steward.sentinel.egress import API_CALL, EgressBroker, EgressRefused

KIND = "email"
"""The connection kind the tool goes through (the demo's "Demo mail")."""
SEND = "mail.send"
"""The scope sending needs (the same as a real mail connector's)."""
BODY_CHARS = 80
"""How much of the text the one-line summary quotes."""


def describe_office_send(args: Mapping[str, Any]) -> str:
    """``Send Dana Park (dana.park@acme.example) an email: “Hi Dana, Thursday…”``: the
    recipient by name when the office knows them, always with the address."""
    to = str(args.get("to", ""))
    name = CONTACTS.get(to)
    whom = f"{name} ({to})" if name else to
    text = " ".join(str(args.get("text", "")).split())
    if len(text) > BODY_CHARS:
        text = text[: BODY_CHARS - 1].rsplit(" ", 1)[0] + "…"
    return f"Send {whom} an email: “{text}”" if text else f"Send {whom} an email"


def office_mail_tool(broker: EgressBroker, office: str, secret_name: str) -> Tool:
    """``office_mail_send`` for the office at ``office`` (its base URL), authenticated with the
    vault secret ``secret_name``."""

    @tool(
        connector=KIND,
        effect=EffectClass.EXTERNAL,
        idempotent=True,
        scopes=[SEND],
        summarize=describe_office_send,
    )
    async def office_mail_send(
        ctx: ToolContext,
        to: Annotated[str, Role.RECIPIENT, Field(description="the recipient's plain address")],
        subject: Annotated[str, Role.FREE_TEXT, Field(description="the subject")],
        text: Annotated[str, Role.CONTENT, Field(description="the text of the message")],
    ) -> dict[str, Any]:
        """Send an email from the person's demo mailbox."""
        headers = {"Authorization": f"Bearer {placeholder(secret_name)}"}
        if ctx.idempotency_key:
            headers["Idempotency-Key"] = ctx.idempotency_key
        try:
            response = await broker.request(
                person_id=ctx.person_id,
                method="POST",
                url=f"{office}{SEND_PATH}",
                headers=headers,
                json={"to": to, "subject": subject, "text": text},
                actor=f"agent:{ctx.task_id}",
                scope=API_CALL,
            )
        except EgressRefused as exc:  # nothing was sent
            raise ToolError(str(exc)) from None
        if response.status != 200:
            raise ToolError(f"the mail service refused it ({response.status}): {response.text}")
        return {"sent": True, "to": to, "subject": subject}

    return office_mail_send
