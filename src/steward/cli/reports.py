"""``steward report`` (what Steward told you) and ``steward reach`` (when it may reach you:
quiet hours and the daily digest's time)."""

from __future__ import annotations

import json
from zoneinfo import ZoneInfo

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
from steward.domain import Person
from steward.domain.report import Report, local_words

report_app = typer.Typer(help="What Steward told you, newest first.", no_args_is_help=True)
reach_app = typer.Typer(
    help="When Steward may reach you: quiet hours and the daily digest.", no_args_is_help=True
)

STATES = {
    "pending": "sending",
    "held": "held for quiet hours",
    "digest": "in the next digest",
    "digested": "sent in a digest",
    "delivered": "delivered",
    "dropped": "on the dashboard only",
}


@report_app.command("list")
def report_list(
    limit: int = typer.Option(20, "--limit", min=1, max=200, help="How many."),
    unread: bool = typer.Option(False, "--unread", help="Only those not read yet."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Reports from the agent and the runtime, with where each went."""

    async def main() -> tuple[list[Report], ZoneInfo]:
        async with service(db) as svc:
            who = await svc.person(person)
            found = await svc.list_reports(person_id=who.id, limit=limit, unread=unread)
            return found, ZoneInfo(who.timezone)

    reports, zone = run(main)
    if as_json:
        print(json.dumps(to_jsonable(reports), indent=2))
        return
    if not reports:
        console.print(Text("Nothing reported yet."))
        return
    table = Table(show_header=True, header_style="bold")
    for column in ("when", "what", "importance", "where it went"):
        table.add_column(column)
    for r in reports:
        what = r.what + (f"\nWhat to do: {r.todo}" if r.todo else "")
        table.add_row(local_words(r.created_at, zone), what, r.importance, STATES[r.state])
    console.print(table)


@reach_app.command("quiet")
def reach_quiet(
    hours: str = typer.Argument(..., help="22:00-07:00 in your time zone, or 'off'."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
) -> None:
    """Set quiet hours: only urgent messages reach you then; the rest wait until they end."""

    async def main() -> Person:
        async with service(db) as svc:
            who = await svc.person(person)
            return await svc.set_quiet_hours(hours, person_id=who.id)

    console.print(Text(_reach_words(run(main))))


@reach_app.command("digest")
def reach_digest(
    at: str = typer.Argument(..., help="18:00 in your time zone."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
) -> None:
    """Set when the daily digest of what needs no action goes."""

    async def main() -> Person:
        async with service(db) as svc:
            who = await svc.person(person)
            return await svc.set_digest_time(at, person_id=who.id)

    console.print(Text(_reach_words(run(main))))


def _reach_words(person: Person) -> str:
    quiet = (
        "no quiet hours"
        if person.quiet_start is None or person.quiet_end is None
        else f"quiet from {person.quiet_start:%H:%M} to {person.quiet_end:%H:%M}"
    )
    return f"{quiet}; daily digest at {person.digest_at:%H:%M} ({person.timezone})."
