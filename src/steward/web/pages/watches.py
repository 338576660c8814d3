"""``/watches``: watched pages and prices in plain words, each with a small plot of its
values over time; a form to add one; pause, resume, remove."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation
from zoneinfo import ZoneInfo

from fastapi import Request, Response

from steward.domain.goal import GoalStatus
from steward.domain.webwatch import (
    Condition,
    ConditionKind,
    Extract,
    Extractor,
    Reading,
    WebWatch,
    money,
    parse_interval,
    status_in_words,
)
from steward.errors import UsageError
from steward.web.forms import Form, done, posted
from steward.web.render import page
from steward.web.routing import pages
from steward.web.session import Viewer

router = pages()

WIDTH, HEIGHT, PAD = 320.0, 80.0, 4.0
"""The plot's size in SVG units, and its margin."""


@dataclass(kw_only=True, frozen=True)
class Plot:
    """A step line of a watch's numbers over time, ready for an inline SVG."""

    points: str
    """The polyline's points (numbers only)."""
    low: str
    """The lowest value, in words (``€979``)."""
    high: str
    """The highest."""
    since: str
    """The first reading's day (``4 Dec``)."""


@dataclass(kw_only=True, frozen=True)
class Shown:
    """One watch as the page shows it."""

    watch: WebWatch
    summary: str
    """The sentence: what it reads, what it last read, when it tells."""
    status: str
    """How checking goes, in the person's zone."""
    plot: Plot | None
    """None until it has read two numbers."""


@router.get("/watches")
async def watches(request: Request, svc: Viewer) -> Response:
    person = await svc.person(None)
    zone = ZoneInfo(person.timezone)
    shown = []
    for watch in await svc.list_watches():
        readings = await svc.watch_history(watch.id, limit=200)
        shown.append(
            Shown(
                watch=watch,
                summary=watch.describe(),
                status=status_in_words(watch, zone),
                plot=plot(readings, now=svc.clock.now(), zone=zone),
            )
        )
    goals = await svc.list_goals(person_id=person.id, status=GoalStatus.ACTIVE)
    return page(request, "watches.html", title="Watches", watches=shown, goals=goals)


@router.post("/watches")
async def add(request: Request, svc: Viewer) -> Response:
    form = await posted(request)
    how = form.choice("how", {e.value: e for e in Extractor})
    select = form.text("select", "").strip()
    watch = await svc.add_watch(
        person_id="",
        url=form.text("url"),
        extract=Extract(how=how, expr=None if how is Extractor.TEXT else select),
        conditions=_conditions(form),
        every_seconds=_interval(form.text("every", "1h")),
        name=form.text("name", ""),
        goal_id=form.text("goal", "") or None,
    )
    return done(request, "/watches", f"Watching {watch.name}: first check now.")


@router.post("/watches/{watch_id}")
async def change(request: Request, svc: Viewer, watch_id: str) -> Response:
    form = await posted(request)
    action = form.choice("action", {"pause": "pause", "resume": "resume", "remove": "remove"})
    if action == "remove":
        watch = await svc.remove_watch(watch_id)
        return done(request, "/watches", f"Removed {watch.name}.")
    watch = await svc.set_watch_enabled(watch_id, action == "resume")
    return done(request, "/watches", f"{'Resumed' if watch.enabled else 'Paused'} {watch.name}.")


def plot(readings: list[Reading], *, now: datetime, zone: ZoneInfo) -> Plot | None:
    """A step line through the readings' numbers up to ``now``: a value holds until the next
    reading changes it. None with fewer than two numbers."""
    numbered = [(r.at, r.value.number, r.value.currency) for r in readings]
    values = [(at, n) for at, n, _ in numbered if n is not None]
    if len(values) < 2:
        return None
    currency = next((c for _, n, c in reversed(numbered) if n is not None), None)
    start, end = values[0][0].timestamp(), max(now.timestamp(), values[-1][0].timestamp())
    low, high = min(n for _, n in values), max(n for _, n in values)
    span_x, span_y = (end - start) or 1.0, float(high - low) or 1.0

    def x(at: float) -> float:
        return PAD + (at - start) / span_x * (WIDTH - 2 * PAD)

    def y(n: Decimal) -> float:
        return HEIGHT - PAD - float(n - low) / span_y * (HEIGHT - 2 * PAD)

    points: list[tuple[float, float]] = []
    for at, n in values:
        if points:
            points.append((x(at.timestamp()), points[-1][1]))
        points.append((x(at.timestamp()), y(n)))
    points.append((x(end), points[-1][1]))
    first = values[0][0].astimezone(zone)
    return Plot(
        points=" ".join(f"{px:.1f},{py:.1f}" for px, py in points),
        low=money(low, currency),
        high=money(high, currency),
        since=f"{first.day} {first:%b}",
    )


def _conditions(form: Form) -> list[Condition]:
    found = []
    for kind in (ConditionKind.BELOW, ConditionKind.ABOVE):
        given = form.text(kind.value, "").strip()
        if given:
            found.append(Condition(kind=kind, threshold=_number(given, kind.value)))
    contains = form.text("contains", "").strip()
    if contains:
        found.append(Condition(kind=ConditionKind.CONTAINS, text=contains))
    if form.text("changed", "") == "yes":
        found.insert(0, Condition(kind=ConditionKind.CHANGED))
    return found


def _number(text: str, what: str) -> Decimal:
    try:
        number = Decimal(text.replace(",", "").replace(" ", ""))
    except InvalidOperation:
        number = Decimal("NaN")
    if not number.is_finite():
        raise UsageError(f"{what} must be a number, not {text!r}")
    return number


def _interval(text: str) -> float:
    try:
        return parse_interval(text)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
