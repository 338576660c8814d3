"""``steward watch``: web pages and prices watched without a model, until something matters."""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from zoneinfo import ZoneInfo

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
from steward.domain.webwatch import (
    Condition,
    ConditionKind,
    Extract,
    Extractor,
    WebWatch,
    at_local,
    parse_interval,
    status_in_words,
)

watch_app = typer.Typer(
    help="Watch web pages and prices: checked without a model, you hear only when it matters.",
    no_args_is_help=True,
)


@watch_app.command("add")
def watch_add(
    url: str = typer.Argument(..., help="The page to watch."),
    select: str | None = typer.Option(None, "--select", help="CSS selector of the value."),
    xpath: str | None = typer.Option(None, "--xpath", help="XPath of the value."),
    json_path: str | None = typer.Option(
        None, "--jsonpath", help="JSON path of the value ($.offers[0].price)."
    ),
    text: bool = typer.Option(False, "--text", help="Watch the page's whole readable text."),
    below: str | None = typer.Option(None, "--below", help="Tell me when below this number."),
    above: str | None = typer.Option(None, "--above", help="Tell me when above this number."),
    contains: list[str] = typer.Option(
        [], "--contains", help="…and the page says this (repeatable)."
    ),
    lacks: list[str] = typer.Option([], "--lacks", help="…and the page no longer says this."),
    appears: bool = typer.Option(False, "--appears", help="Tell me when the element appears."),
    disappears: bool = typer.Option(False, "--disappears", help="…when it disappears."),
    changed: bool = typer.Option(False, "--changed", help="Tell me on every change."),
    every: str = typer.Option("1h", "--every", help="How often: 15m, 1h, 1d (at least 1m)."),
    goal: str | None = typer.Option(None, "--goal", help="Goal to wake when it matters."),
    name: str = typer.Option("", "--name", help="What you call it (default: the page)."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Watch a page. Without a condition, any change of the value tells you; with several,
    all must hold (e.g. --below 1000 --contains 'In stock'). You are told when they become
    true, not again while they stay true."""
    chosen = [
        (Extractor.CSS, select),
        (Extractor.XPATH, xpath),
        (Extractor.JSON, json_path),
        (Extractor.TEXT, "" if text else None),
    ]
    given = [(how, expr) for how, expr in chosen if expr is not None]
    if len(given) != 1:
        raise typer.BadParameter("say what to read: one of --select, --xpath, --jsonpath or --text")
    how, expr = given[0]
    try:
        seconds = parse_interval(every)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--every") from None
    conditions = [Condition(kind=ConditionKind.CHANGED)] if changed else []
    if below is not None:
        conditions.append(Condition(kind=ConditionKind.BELOW, threshold=_number(below, "--below")))
    if above is not None:
        conditions.append(Condition(kind=ConditionKind.ABOVE, threshold=_number(above, "--above")))
    conditions += [Condition(kind=ConditionKind.CONTAINS, text=t) for t in contains]
    conditions += [Condition(kind=ConditionKind.LACKS, text=t) for t in lacks]
    if appears:
        conditions.append(Condition(kind=ConditionKind.PRESENT))
    if disappears:
        conditions.append(Condition(kind=ConditionKind.ABSENT))

    async def main() -> tuple[WebWatch, ZoneInfo]:
        async with service(db) as svc:
            who = await svc.person(person)
            watch = await svc.add_watch(
                person_id=who.id,
                url=url,
                extract=Extract(how=how, expr=expr or None),
                conditions=conditions,
                every_seconds=seconds,
                name=name,
                goal_id=await svc.resolve_id(goal, "gol", person_id=who.id) if goal else None,
            )
            return watch, ZoneInfo(who.timezone)

    watch, zone = run(main)
    if as_json:
        print(json.dumps(to_jsonable(watch), indent=2))
        return
    console.print(Text(f"Watching {watch.describe()}."))
    if watch.goal_id:
        console.print(Text("When it matters, the goal is woken with the old and new value."))
    console.print(Text(f"First check {at_local(watch.next_check_at, zone)}."))


@watch_app.command("list")
def watch_list(
    person: str | None = PersonOption, db: str | None = DbOption, as_json: bool = JsonOption
) -> None:
    """Your watches, what they last read and how checking goes."""

    async def main() -> tuple[list[WebWatch], ZoneInfo]:
        async with service(db) as svc:
            who = await svc.person(person)
            return await svc.list_watches(person_id=who.id), ZoneInfo(who.timezone)

    watches, zone = run(main)
    if as_json:
        print(json.dumps([to_jsonable(w) for w in watches], indent=2))
        return
    if not watches:
        console.print("Nothing is watched. Add a watch with: steward watch add URL --select …")
    for watch in watches:
        console.print(Text(watch.describe(), style="bold"))
        console.print(
            Text(f"  {status_in_words(watch, zone)}", style="red" if watch.failures else "")
        )


@watch_app.command("show")
def watch_show(
    ref: str = typer.Argument(..., help="The watch's name or id."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """One watch: what it reads, when it tells you, how checking goes, its last values."""
    _show(ref, person, db, as_json, limit=10)


@watch_app.command("history")
def watch_history(
    ref: str = typer.Argument(..., help="The watch's name or id."),
    limit: int = typer.Option(100, help="Most values shown (the latest)."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """The values a watch read over time (one line per change)."""
    _show(ref, person, db, as_json, limit=limit)


def _show(ref: str, person: str | None, db: str | None, as_json: bool, *, limit: int) -> None:
    async def main() -> tuple[WebWatch, list[tuple[str, str]], ZoneInfo, list[object]]:
        async with service(db) as svc:
            who = await svc.person(person)
            watch = await svc.find_watch(ref, person_id=who.id)
            readings = await svc.watch_history(watch.id, limit=limit)
            zone = ZoneInfo(who.timezone)
            lines = [(at_local(r.at, zone), r.value.describe()) for r in readings]
            return watch, lines, zone, [to_jsonable(r) for r in readings]

    watch, lines, zone, raw = run(main)
    if as_json:
        print(json.dumps({"watch": to_jsonable(watch), "readings": raw}, indent=2))
        return
    console.print(Text(watch.describe(), style="bold"))
    console.print(Text(f"  {watch.url}"))
    console.print(Text(f"  reads {watch.extract.describe()}"))
    console.print(Text(f"  {status_in_words(watch, zone)}", style="red" if watch.failures else ""))
    if not lines:
        console.print("  no value read yet")
    for when, value in lines:
        console.print(Text(f"  {when}: {value}"))


def _enable_command(name: str, enabled: bool, said: str, doc: str) -> None:
    def command(
        ref: str = typer.Argument(..., help="The watch's name or id."),
        person: str | None = PersonOption,
        db: str | None = DbOption,
    ) -> None:
        async def main() -> WebWatch:
            async with service(db) as svc:
                who = await svc.person(person)
                watch = await svc.find_watch(ref, person_id=who.id)
                return await svc.set_watch_enabled(watch.id, enabled)

        console.print(Text(f"{said} {run(main).name}."))

    command.__doc__ = doc
    watch_app.command(name)(command)


_enable_command("pause", False, "Paused", "Stop checking a watch (and waking its goal).")
_enable_command("resume", True, "Resumed", "Check a paused watch again, at once.")


@watch_app.command("remove")
def watch_remove(
    ref: str = typer.Argument(..., help="The watch's name or id."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
) -> None:
    """Remove a watch and its history; its goal is no longer woken by it."""

    async def main() -> WebWatch:
        async with service(db) as svc:
            who = await svc.person(person)
            watch = await svc.find_watch(ref, person_id=who.id)
            return await svc.remove_watch(watch.id)

    console.print(Text(f"Removed {run(main).name}: it is no longer checked."))


def _number(value: str, flag: str) -> Decimal:
    try:
        number = Decimal(value.replace(",", "").replace("_", ""))
    except InvalidOperation:
        number = Decimal("NaN")
    if not number.is_finite():
        raise typer.BadParameter(f"{value!r} is not a number", param_hint=flag)
    return number
