"""CLI commands for channels: the ways Steward reaches you away from the dashboard.

An Apprise URL carries the service's tokens, so it is read with a hidden prompt or from
standard input (``--url-stdin``), never from the command line, where it would stay in the
shell's history; it goes to the vault and is shown afterwards only as its service and server.
Web Push is enabled from the dashboard's Channels page, on the device itself.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import typer

from steward.cli.channel_email import add_email
from steward.cli.channel_matrix import add_matrix
from steward.cli.common import (
    DbOption,
    JsonOption,
    PersonOption,
    console,
    emit,
    emit_one,
    run,
    service,
)
from steward.errors import UsageError

if TYPE_CHECKING:
    from steward.service import Service

channel_app = typer.Typer(
    help="Channels: how Steward reaches you (Apprise services, Web Push, e-mail).",
    no_args_is_help=True,
)
add_app = typer.Typer(help="Add a channel.", no_args_is_help=True)
channel_app.add_typer(add_app, name="add")
add_app.command("email")(add_email)
add_app.command("matrix")(add_matrix)

ChannelArgument = typer.Argument(..., help="The channel's name or id (chn_…).")
_COLUMNS = ["name", "kind", "summary", "enabled", "created_at"]


async def _whose(svc: Service, channel: str, person: str | None) -> str | None:
    if person is None and channel.startswith("chn_"):
        return None
    return (await svc.person(person)).id


@add_app.command("apprise")
def add_apprise(
    name: str = typer.Argument(..., help="Your label: 'phone', 'work Slack'."),
    url_stdin: bool = typer.Option(
        False, "--url-stdin", help="Read the Apprise URL from standard input."
    ),
    private_network: bool = typer.Option(
        False,
        "--private-network",
        help="Confirm the service is on your own network (a self-hosted ntfy at home).",
    ),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Add a service Apprise reaches (ntfy, Telegram, Slack, e-mail…); the URL is asked for."""

    async def main() -> None:
        async with service(db) as svc:
            who = (await svc.person(person)).id
            url = _read_url(url_stdin)
            added = await svc.add_apprise_channel(
                name, url, private_network=private_network, person_id=who
            )
        if as_json:
            emit_one(added, as_json=True)
            return
        console.print(
            f"Added '{added.name}': {added.summary}. Try it: steward channel test {added.name!r}",
            markup=False,
        )

    run(main)


def _read_url(from_stdin: bool) -> str:
    """The Apprise URL from standard input (its first line) or a hidden prompt."""
    if from_stdin:
        url = sys.stdin.readline().strip()
    else:
        url = typer.prompt("Apprise URL (not shown)", hide_input=True).strip()
    if not url:
        raise UsageError("the Apprise URL is empty")
    return url


@channel_app.command("list")
def channel_list(
    person: str | None = PersonOption, db: str | None = DbOption, as_json: bool = JsonOption
) -> None:
    """Your channels (nothing secret)."""

    async def main() -> None:
        async with service(db) as svc:
            who = (await svc.person(person)).id
            emit(
                await svc.list_channels(person_id=who), _COLUMNS, as_json=as_json, title="channels"
            )

    run(main)


@channel_app.command("test")
def channel_test(
    channel: str = ChannelArgument,
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Send a test message through a channel now."""

    async def main() -> None:
        async with service(db) as svc:
            tested = await svc.test_channel(channel, person_id=await _whose(svc, channel, person))
        if as_json:
            emit_one(tested, as_json=True)
        else:
            console.print(f"{tested.channel.name}: {tested.said}", markup=False)
        if not tested.ok:
            raise typer.Exit(1)

    run(main)


def _switch(channel: str, person: str | None, db: str | None, *, enabled: bool) -> None:
    async def main() -> None:
        async with service(db) as svc:
            who = await _whose(svc, channel, person)
            changed = await svc.set_channel_enabled(channel, enabled, person_id=who)
        state = "on: messages go through it" if changed.enabled else "off: nothing goes through it"
        console.print(f"'{changed.name}' is {state}.", markup=False)

    run(main)


@channel_app.command("disable")
def channel_disable(
    channel: str = ChannelArgument, person: str | None = PersonOption, db: str | None = DbOption
) -> None:
    """Turn a channel off (nothing is sent through it)."""
    _switch(channel, person, db, enabled=False)


@channel_app.command("enable")
def channel_enable(
    channel: str = ChannelArgument, person: str | None = PersonOption, db: str | None = DbOption
) -> None:
    """Turn a channel on again."""
    _switch(channel, person, db, enabled=True)


@channel_app.command("remove")
def channel_remove(
    channel: str = ChannelArgument, person: str | None = PersonOption, db: str | None = DbOption
) -> None:
    """Remove a channel and its secret."""

    async def main() -> None:
        async with service(db) as svc:
            removed = await svc.remove_channel(
                channel, person_id=await _whose(svc, channel, person)
            )
        console.print(f"Removed '{removed.name}'.", markup=False)

    run(main)
