"""``steward login`` and ``steward logout``: point the CLI at a running server, or back at the
local database (:mod:`steward.cli.remote`)."""

from __future__ import annotations

import typer

from steward.cli.common import console, err_console, run
from steward.cli.remote import Login, login_path, remote_service, save_login


def login(
    server: str = typer.Argument(
        ..., help="The address 'steward up' printed, e.g. http://host:8470."
    ),
    token: str = typer.Option(
        ...,
        envvar="STEWARD_TOKEN",
        prompt="API token (from 'steward token create' on the server)",
        hide_input=True,
        help="An API token for that server ($STEWARD_TOKEN; asked for when not given).",
    ),
) -> None:
    """Act through a running server from now on: every command goes over its API, as the
    token's person, within the token's scopes."""
    if not server.startswith(("http://", "https://")):
        raise typer.BadParameter("give the server as http://host:port or https://host")
    attempt = Login(server=server.rstrip("/"), token=token.strip())

    async def main() -> None:
        async with remote_service(attempt) as svc:
            person = await svc.person(None)  # proves the address and the token before saving
        path = save_login(attempt)
        console.print(
            f"logged in to {attempt.server} as {person.name} ({person.id}); saved in {path}"
        )

    run(main)


def logout() -> None:
    """Forget the saved login: commands act on the local database again."""
    path = login_path()
    try:
        path.unlink()
    except FileNotFoundError:
        err_console.print("[red]error:[/red] not logged in")
        raise typer.Exit(1) from None
    console.print(f"logged out; commands act on the local database (removed {path})")
