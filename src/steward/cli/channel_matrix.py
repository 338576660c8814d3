"""``steward channel add matrix``: talking to the agent in Matrix (registered by
:mod:`steward.cli.channels`)."""

from __future__ import annotations

import json
import sys

import typer
from rich.text import Text

from steward.cli.common import (
    DbOption,
    JsonOption,
    console,
    run,
    service,
    to_jsonable,
)
from steward.domain.channel import Channel


def add_matrix(
    name: str = typer.Argument(..., help="What you call it (matrix, chat)."),
    homeserver: str = typer.Option(
        ..., "--homeserver", help="The bot account's homeserver (https://matrix.example.org)."
    ),
    user: str = typer.Option(..., "--user", help="The bot's user id (@steward:example.org)."),
    me: str = typer.Option(..., "--person", help="Your own user id (@ana:example.org)."),
    room: str | None = typer.Option(
        None, "--room", help="A room you and the bot are in (default: a new direct room)."
    ),
    person: str | None = typer.Option(
        None,
        "--for",
        envvar="STEWARD_PERSON",
        help="Person id (Steward's; --person is your Matrix user id here).",
    ),
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Talk to the agent in Matrix through a bot account of its own: the bot's access token is
    read from standard input (its first line) and kept in the vault. Without --room the bot
    opens a direct room and invites you; in a room with other people too, the agent keeps
    what is private to you to itself."""

    async def main() -> Channel:
        async with service(db) as svc:
            who = await svc.person(person)  # looked up before the token is read
            token = (
                typer.prompt("The bot's access token", hide_input=True)
                if sys.stdin.isatty()
                else sys.stdin.readline().strip()
            )
            return await svc.add_matrix_channel(
                person_id=who.id,
                name=name,
                homeserver=homeserver,
                user=user,
                person=me,
                token=token,
                room=room,
            )

    channel = run(main)
    if as_json:
        print(json.dumps(to_jsonable(channel), indent=2))
        return
    invited = "" if room else " It opened a direct room with you: accept its invitation."
    console.print(
        Text(
            f"Added the Matrix channel {channel.name}: {channel.config['user']} writes to "
            f"{channel.config['person']}.{invited}"
        )
    )
