"""``steward browser``: what the person's browser last showed each task, and logging it out of
every site."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer
from rich.table import Table
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

if TYPE_CHECKING:
    from steward.service.browser import BrowserView

browser_app = typer.Typer(
    help="Your browser: what it last showed each task; log it out everywhere.",
    no_args_is_help=True,
)


@browser_app.command("views")
def browser_views(
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """What the browser last showed each task, newest first, with its screenshot's place in
    your workspace."""

    async def main() -> list[BrowserView]:
        async with service(db) as svc:
            who = await svc.person(person)
            return await svc.browser_views(person_id=who.id)

    views = run(main)
    if as_json:
        print(json.dumps(to_jsonable(views), indent=2))
        return
    if not views:
        console.print(Text("The browser has not opened a page for you yet."))
        return
    table = Table(show_header=True, header_style="bold")
    for column in ("when", "task", "page", "screenshot"):
        table.add_column(column)
    for v in views:
        page = f"{v.title or 'a page without a title'}\n{v.host or 'a blank page'}"
        shot = v.picture or (f"none: {v.picture_note}" if v.picture_note else "none taken")
        # page titles are others' text: shown as text, never as Rich markup
        table.add_row(Text(v.when), Text(v.task), Text(page), Text(shot))
    console.print(table)


@browser_app.command("clear")
def browser_clear(
    yes: bool = typer.Option(False, "--yes", help="Do not ask first."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
) -> None:
    """Log the browser out of every site: it forgets its cookies and logins (what tasks saw,
    and the files, stay). Refused while a task is using the browser."""
    if not yes:
        typer.confirm(
            "Log the browser out of every site? Tasks will have to log in again", abort=True
        )

    async def main() -> str:
        async with service(db) as svc:
            who = await svc.person(person)
            return await svc.clear_browser(person_id=who.id)

    console.print(Text(run(main)))
