"""``steward channel add email``: talking to the agent by e-mail (registered by
:mod:`steward.cli.channels`)."""

from __future__ import annotations

import json

import typer
from rich.text import Text

from steward.cli.common import DbOption, JsonOption, PersonOption, console, run, service
from steward.domain.channel import Channel
from steward.service.encode import to_jsonable


def add_email(
    name: str = typer.Argument(..., help="What you call it (email, work mail)."),
    connection: str = typer.Option(
        ..., "--connection", help="The connected mail account the agent writes from."
    ),
    address: str = typer.Option(..., "--address", help="Your own address (ana@example.com)."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Talk to the agent by e-mail: it writes to your address from the connected mail account
    (its mailbox), you answer approvals by replying "approve" or "deny", and what you write to
    that mailbox from your address is a conversation with it."""

    async def main() -> Channel:
        async with service(db) as svc:
            who = await svc.person(person)
            return await svc.add_email_channel(
                person_id=who.id, name=name, connection=connection, address=address
            )

    channel = run(main)
    if as_json:
        print(json.dumps(to_jsonable(channel), indent=2))
        return
    console.print(
        Text(
            f"Added the e-mail channel {channel.name}: the agent writes to "
            f"{channel.config['address']} from {connection}, and mail from that address to "
            "its mailbox reaches it."
        )
    )
