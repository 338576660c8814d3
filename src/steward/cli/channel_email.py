"""``steward channel add email``: talking to the agent by e-mail (registered by
:mod:`steward.cli.channels`)."""

from __future__ import annotations

import json

import typer
from rich.text import Text

from steward.cli.common import (
    DbOption,
    JsonOption,
    PersonOption,
    console,
    run,
    service,
    to_jsonable,
)
from steward.domain.channel import Channel


def add_email(
    name: str = typer.Argument(..., help="What you call it (email, work mail)."),
    connection: str = typer.Option(
        ..., "--connection", help="The connected mail account the agent writes from."
    ),
    address: str = typer.Option(..., "--address", help="Your own address (ana@example.com)."),
    verify: str = typer.Option(
        "dkim",
        "--verify",
        help=(
            "How the agent knows mail from your address is yours: dkim (your mail provider's "
            "signature, the default), authserv:<id> (what your agent mailbox's server wrote in "
            "its Authentication-Results header under <id>, e.g. authserv:mx.example.com), or "
            "none (nothing: anyone who can put mail in this mailbox with your address as From "
            "can speak as you)."
        ),
    ),
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
                person_id=who.id,
                name=name,
                connection=connection,
                address=address,
                verify=verify,
            )

    channel = run(main)
    if as_json:
        print(json.dumps(to_jsonable(channel), indent=2))
        return
    console.print(
        Text(
            f"Added the e-mail channel {channel.name}: the agent writes to "
            f"{channel.config['address']} from {connection}, and mail from that address to "
            "its mailbox reaches it when " + proven_by(str(channel.config["verify"]))
        )
    )


def proven_by(verify: str) -> str:
    """What makes mail from the person's address theirs, in words (ends the sentence), for the
    channel's stored check (``dkim``, ``authserv:<id>``, ``none``)."""
    how, _, server = verify.partition(":")
    if how == "authserv":
        return (
            f"{server}, the server that received it, says it passed DMARC or DKIM; other mail "
            "from your address is not acted on."
        )
    if how == "none":
        return (
            "nothing more is checked: anyone who can put mail in this mailbox with your "
            "address as From can speak as you."
        )
    return (
        "it carries your mail provider's signature (DKIM); other mail from your address is "
        "not acted on."
    )
