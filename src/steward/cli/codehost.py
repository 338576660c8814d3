"""``steward codehost connect github|gitlab`` and ``steward codehost secret``: GitHub and GitLab
as sources of events, set up from a terminal.

Steward makes the webhook secret and shows it this once, with what to paste into the
provider's webhook settings: the payload URL, the content type and the events to tick.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer
from rich.text import Text

from steward.cli.common import DbOption, PersonOption, console, run, service

if TYPE_CHECKING:
    from steward.service.codehost import CodeHostSetup

codehost_app = typer.Typer(
    help="GitHub and GitLab as sources of events (pull requests, failed checks, comments).",
    no_args_is_help=True,
)

UrlOption = typer.Option(
    None,
    "--url",
    help="Steward's address as the code host reaches it (https://steward.example.com).",
)
WHERE = {
    "github": "In the repository's (or organisation's) Settings → Webhooks → Add webhook:",
    "gitlab": "In the project's (or group's) Settings → Webhooks → Add new webhook:",
}
"""Where the person pastes the setup, by kind."""
SECRET_FIELD = {"github": "Secret", "gitlab": "Secret token"}
"""What the provider calls the secret's field."""


@codehost_app.command("connect")
def connect(
    kind: str = typer.Argument(..., help="github or gitlab."),
    name: str = typer.Option(..., "--name", help="What you call this connection (work)."),
    repo: list[str] = typer.Option(
        ...,
        "--repo",
        help="A repository whose events are taken: owner/name (GitLab: group/project), or "
        "owner/* (repeatable).",
    ),
    url: str | None = UrlOption,
    person: str | None = PersonOption,
    db: str | None = DbOption,
) -> None:
    """Connect GitHub or GitLab: Steward makes the webhook secret and shows it once, with the
    address and the events to choose in the provider's settings."""

    async def main() -> CodeHostSetup:
        async with service(db) as svc:
            who = await svc.person(person)
            return await svc.connect_codehost(
                person_id=who.id, kind=kind, name=name, repositories=repo
            )

    done = run(main)
    console.print(Text(f"Connected {done.connection.name} ({kind}). {done.check}."))
    _show(done, url)


@codehost_app.command("secret")
def secret(
    name: str = typer.Argument(..., help="The connection's name."),
    url: str | None = UrlOption,
    person: str | None = PersonOption,
    db: str | None = DbOption,
) -> None:
    """Make a new webhook secret for a GitHub or GitLab connection: deliveries proving the old
    one are refused from now on, so paste the new one into the provider's settings."""

    async def main() -> CodeHostSetup:
        async with service(db) as svc:
            who = await svc.person(person)
            return await svc.rotate_codehost_secret(name, person_id=who.id)

    done = run(main)
    console.print(Text(f"New secret for {done.connection.name}: the old one no longer works."))
    _show(done, url)


def _show(done: CodeHostSetup, url: str | None) -> None:
    from steward.api.app import API_PREFIX
    from steward.api.routes.codehost import DELIVERY_ROUTE

    kind = done.connection.kind
    path = API_PREFIX + DELIVERY_ROUTE.format(kind=kind, connection_id=done.connection.id)
    base = url.rstrip("/") if url else "https://<steward-address>"
    console.print(Text(WHERE[kind]))
    console.print(Text(f"  URL:           {base}{path}"))
    if kind == "github":
        console.print(Text(f"  Content type:  {done.content_type}"))
    console.print(Text(f"  {SECRET_FIELD[kind] + ':':<15}{done.secret}"))
    console.print(Text(f"  Events:        {', '.join(done.events)}"))
    console.print(Text("The secret is shown this once: Steward keeps it only in its vault."))
