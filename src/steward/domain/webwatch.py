"""Web page and price watches: a URL, what to read on it, and when that matters.

A :class:`WebWatch` is checked every :attr:`~WebWatch.interval_seconds` (± jitter) without a
model: the page is fetched, a value is extracted (:class:`Extract`), and the watch's
:class:`Condition` s are evaluated on it. Only when they say so does the check become one
``web.changed`` inbox event carrying the old and the new value: that is what wakes a goal.

When an event fires is *edge-triggered*:

- a watch whose conditions are all states (``contains``, ``lacks``, ``below``, ``above``,
  ``present``, ``absent``) fires when they **become** true together — on the first check
  if they already hold — and is re-armed when they stop holding, so a price that stays low
  wakes nobody again an hour later;
- a watch with ``changed`` fires on every check whose value differs from the last one while
  its other conditions hold (the first check only learns the value);
- a watch with no condition at all is a ``changed`` watch.

A value that is missing (the selector matches nothing) is a value too: ``None``, which makes
``present``/``absent`` conditions and ``changed`` see an element appear and disappear.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, tzinfo
from decimal import Decimal
from enum import StrEnum
from urllib.parse import urlsplit

WEB_CHANGED = "web.changed"
"""The type of the event a watch's check produces."""
WEB_READ = "web.read"
"""The scope a watch's fetches are made under (a private host needs a connection offering it)."""
MIN_INTERVAL_SECONDS = 60.0
"""The shortest interval a watch may have: a site's owner would not call more often polite."""
MAX_INTERVAL_SECONDS = 30 * 86400.0
"""The longest interval (a month)."""
MAX_READINGS = 1000
"""Readings kept per watch (the oldest go first): enough for a price-over-time plot."""


class Extractor(StrEnum):
    """How a value is read off a page."""

    CSS = "css"
    """A CSS selector: the text of the first element it matches."""
    XPATH = "xpath"
    """An XPath expression: the first node, attribute or string it selects."""
    JSON = "json"
    """A JSON path (``$.offers[0].price``) into a JSON document: the first match."""
    TEXT = "text"
    """The page's readable text, whole."""


@dataclass(kw_only=True, frozen=True)
class Extract:
    """What to read on the page."""

    how: Extractor
    """Selector language, or the readable text."""
    expr: str | None = None
    """The selector, XPath or JSON path; None for :attr:`Extractor.TEXT`."""

    def describe(self) -> str:
        """In words: ``the text of .price``."""
        if self.how is Extractor.TEXT:
            return "the page's text"
        return f"{_HOW[self.how]} {self.expr}"


_HOW = {Extractor.CSS: "the element", Extractor.XPATH: "the XPath", Extractor.JSON: "the JSON at"}


class ConditionKind(StrEnum):
    """What makes a check matter."""

    CHANGED = "changed"
    """The value differs from the last check's (an event, not a state)."""
    CONTAINS = "contains"
    """The page's readable text contains :attr:`Condition.text` (case-insensitive)."""
    LACKS = "lacks"
    """The page's readable text does not contain :attr:`Condition.text`."""
    BELOW = "below"
    """The value, read as a number (currency allowed), is below :attr:`Condition.threshold`."""
    ABOVE = "above"
    """The value, read as a number, is above :attr:`Condition.threshold`."""
    PRESENT = "present"
    """The selector matches something (it appeared)."""
    ABSENT = "absent"
    """The selector matches nothing (it disappeared)."""


@dataclass(kw_only=True, frozen=True)
class Condition:
    """One condition; a watch's conditions must all hold."""

    kind: ConditionKind
    """What is tested."""
    text: str | None = None
    """For ``contains``/``lacks``: the text looked for on the page."""
    threshold: Decimal | None = None
    """For ``below``/``above``: the number compared with (in the page's currency)."""

    def describe(self) -> str:
        """In words: ``below 1,000``, ``the page says "In stock"``."""
        match self.kind:
            case ConditionKind.CHANGED:
                return "it changes"
            case ConditionKind.CONTAINS:
                return f'the page says "{self.text}"'
            case ConditionKind.LACKS:
                return f'the page no longer says "{self.text}"'
            case ConditionKind.BELOW:
                return f"below {format_number(self.threshold)}"
            case ConditionKind.ABOVE:
                return f"above {format_number(self.threshold)}"
            case ConditionKind.PRESENT:
                return "it appears"
            case ConditionKind.ABSENT:
                return "it disappears"

    def to_json(self) -> dict[str, str]:
        data = {"kind": self.kind.value}
        if self.text is not None:
            data["text"] = self.text
        if self.threshold is not None:
            data["threshold"] = str(self.threshold)
        return data

    @classmethod
    def from_json(cls, data: dict[str, str]) -> Condition:
        threshold = data.get("threshold")
        return cls(
            kind=ConditionKind(data["kind"]),
            text=data.get("text"),
            threshold=None if threshold is None else Decimal(threshold),
        )


@dataclass(kw_only=True, frozen=True)
class Value:
    """What one check read off the page."""

    text: str | None
    """The extracted text, whitespace collapsed; None when nothing matched."""
    number: Decimal | None = None
    """The text read as a number or price, when it is one."""
    currency: str | None = None
    """The currency symbol or code next to the number (``€``, ``CHF``), if any."""

    def describe(self) -> str:
        """In words: ``€1,049``, ``"Sold out"``, ``nothing``."""
        if self.text is None:
            return "nothing"
        if self.number is not None:
            return money(self.number, self.currency)
        return f'"{_clip(self.text, 80)}"'


MISSING = Value(text=None)
"""The value of a selector that matches nothing."""


@dataclass(kw_only=True, frozen=True)
class Verdict:
    """What the conditions say about one check."""

    matched: bool
    """All state conditions hold now (stored: the edge of the next check is measured from it)."""
    changed: bool
    """The value differs from the last one (False on the first check)."""
    fire: bool
    """This check becomes an event."""
    reasons: tuple[str, ...] = ()
    """What matched, in words, for the event and the person."""


@dataclass(kw_only=True, frozen=True)
class WebWatch:
    """One watched page: what to read and when it matters, and where its checks stand."""

    id: str
    """Stable id, ``wch_…``."""
    person_id: str
    """Whose watch: its fetches are made for this person, under their connections."""
    goal_id: str | None
    """The goal its events wake (through :attr:`trigger_id`), if any."""
    trigger_id: str | None
    """The event trigger made for the goal (disabled with the watch)."""
    name: str
    """What the person calls it (``Laptop``)."""
    url: str
    """The page."""
    extract: Extract
    """What is read on it."""
    conditions: tuple[Condition, ...]
    """All must hold for an event (empty: any change)."""
    interval_seconds: float
    """How often it is checked."""
    jitter_seconds: float
    """Each check is this much earlier or later at random, so watches do not come in waves."""
    enabled: bool
    """Paused watches are not checked."""
    created_at: datetime
    """When it was set up."""
    next_check_at: datetime
    """When it is next due (after failures: the backoff's retry time)."""
    checked_at: datetime | None = None
    """The last check that reached the page."""
    changed_at: datetime | None = None
    """When the value last changed."""
    value: Value | None = None
    """The last value read; None before the first successful check."""
    matched: bool = False
    """Whether the conditions held at the last check."""
    etag: str | None = None
    """The page's ETag at the last check (sent back: an unchanged page costs a 304)."""
    last_modified: str | None = None
    """The page's Last-Modified at the last check."""
    failures: int = 0
    """Failed checks in a row (the backoff grows with it); 0 after a success."""
    last_error: str | None = None
    """Why the last check failed, in plain words."""
    checks: int = 0
    """Claims so far: numbers each check (its event's dedupe key)."""

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or self.url

    @property
    def changed_mode(self) -> bool:
        """Fires on changes (not on conditions becoming true)."""
        return not self.conditions or any(c.kind is ConditionKind.CHANGED for c in self.conditions)

    def describe(self) -> str:
        """One sentence: ``Laptop at shop.example: €1,049 → checks hourly, tells you below
        1,000 and the page says "In stock"``."""
        now = "not checked yet" if self.value is None else self.value.describe()
        wanted = " and ".join(c.describe() for c in self.conditions) or "it changes"
        state = "" if self.enabled else " (paused)"
        return (
            f"{self.name} at {self.host}: {now} → checks {every(self.interval_seconds)}, "
            f"tells you when {wanted}{state}"
        )


@dataclass(kw_only=True, frozen=True)
class Reading:
    """One value in a watch's history (stored when it changed)."""

    watch_id: str
    """The watch."""
    at: datetime
    """When it was read."""
    value: Value
    """What was read."""


def status_in_words(watch: WebWatch, zone: tzinfo) -> str:
    """How checking it goes, in the person's zone: ``checked at 10:42 on Fri 4 Dec; next at
    11:40`` or ``could not read it 3 times in a row (the site answered 503); trying again at
    …``."""
    if not watch.enabled:
        return "paused"
    if watch.failures:
        times = "once" if watch.failures == 1 else f"{watch.failures} times in a row"
        said = f"could not read it {times}"
        if watch.last_error:
            said += f" ({watch.last_error})"
        return f"{said}; trying again {at_local(watch.next_check_at, zone)}"
    if watch.checked_at is None:
        return f"first check {at_local(watch.next_check_at, zone)}"
    return f"checked {at_local(watch.checked_at, zone)}; next {at_local(watch.next_check_at, zone)}"


def at_local(moment: datetime, zone: tzinfo) -> str:
    """``at 10:42 on Fri 4 Dec`` in ``zone``."""
    local = moment.astimezone(zone)
    return f"at {local:%H:%M} on {local:%a} {local.day} {local:%b}"


def format_number(number: Decimal | None) -> str:
    """``1000`` → ``1,000``; ``1299.5`` → ``1,299.50``."""
    if number is None:
        return "?"
    if number == number.to_integral_value():
        return f"{int(number):,}"
    return f"{number:,.2f}"


def money(number: Decimal, currency: str | None) -> str:
    """``€1,049``, ``1,049 CHF``: symbols before, codes after."""
    shown = format_number(number)
    if not currency:
        return shown
    return f"{currency}{shown}" if len(currency) == 1 else f"{shown} {currency}"


def every(seconds: float) -> str:
    """``hourly``, ``every 15 minutes``, ``every 2 days``."""
    for size, unit, adverb in ((86400, "day", "daily"), (3600, "hour", "hourly")):
        if seconds % size == 0:
            n = int(seconds // size)
            return adverb if n == 1 else f"every {n} {unit}s"
    if seconds % 60 == 0:
        n = int(seconds // 60)
        return "every minute" if n == 1 else f"every {n} minutes"
    return f"every {seconds:g} seconds"


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


_UNITS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_interval(text: str) -> float:
    """``90s``, ``15m``, ``1h``, ``2d``, ``1w`` or plain seconds, as seconds; ValueError in
    words otherwise."""
    cleaned = text.strip().lower().replace(" ", "")
    number = cleaned.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = cleaned[len(number) :] or "s"
    try:
        amount = float(number)
    except ValueError:
        amount = -1.0
    if unit not in _UNITS or not amount > 0 or amount == float("inf"):
        raise ValueError(f"{text!r} is not a duration: say 90s, 15m, 1h or 2d")
    return amount * _UNITS[unit]
