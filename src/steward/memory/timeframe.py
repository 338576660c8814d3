"""The time a question names — "last May", "two months ago", "in 2025", 去年五月, 上周, "at the
start", "before the move" — as a window of time, relative to the moment asked and in the
person's time zone.

Hand-written rather than taken from dateparser (1.5, checked offline): it answers with a single
moment where recall needs a window ("in 2025" gives 1 July 2025, "上个月" the 1st of last month
at the current hour), and has no reading of "last May", "last December", 去年五月 or 一开始.
What is recognised here is a small closed set of phrases; anything else is no time at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

_MONTHS: tuple[str, ...] = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
)
_MONTHS += ("september", "october", "november", "december")
_MONTH_OF = {name: number for number, name in enumerate(_MONTHS, start=1)}
_MONTH_OF |= {name[:3]: number for name, number in _MONTH_OF.items()} | {"sept": 9}
_MONTH_WORD = "(?:" + "|".join(sorted(_MONTH_OF, key=len, reverse=True)) + ")"
_NUMBER_WORDS: tuple[str, ...] = (
    "a",
    "an",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
)
_NUMBER_WORDS += ("nine", "ten", "eleven", "twelve")
_NUMBER_OF = {word: max(1, n) for n, word in enumerate(_NUMBER_WORDS, start=-1)}
_CJK_DIGITS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8}
_CJK_DIGITS |= {"九": 9, "十": 10}
_CJK_NUMBER = r"(?:\d{1,2}|十[一二]?|[一二两三四五六七八九十])"
_UNIT = {"day": "day", "week": "week", "month": "month", "year": "year"}
_CJK_UNIT = {"天": "day", "周": "week", "星期": "week", "礼拜": "week", "月": "month"}
_CJK_UNIT |= {"个月": "month", "年": "year"}


@dataclass(kw_only=True, frozen=True)
class TimeFrame:
    """The window of time a question is about."""

    phrase: str
    """The words that named it, as they stand in the question."""
    start: datetime | None = None
    """Its first moment (None: open, as far back as memory goes)."""
    end: datetime | None = None
    """The moment after it (None: open, up to now)."""
    anchor: str | None = None
    """An event the window is relative to ("the move" in "before the move"), to be found in
    memory: the window then ends (``before``) or starts (``after``) where that event did."""
    before_anchor: bool = True
    """Whether the window lies before the anchor (else after it)."""
    earliest: bool = False
    """The question is about the beginning ("at the start", 一开始): the earliest of what is
    remembered, wherever that falls."""

    def contains(self, moment: datetime) -> bool:
        return (self.start is None or moment >= self.start) and (
            self.end is None or moment < self.end
        )

    def overlaps(self, start: datetime | None, end: datetime | None) -> bool:
        """Whether the interval from ``start`` to ``end`` (None: open) shares time with it."""
        return (self.end is None or start is None or start < self.end) and (
            self.start is None or end is None or end > self.start
        )

    def remainder(self, question: str) -> str:
        """The question without the words that named the time (the question itself when
        nothing else is left)."""
        rest = " ".join(question.replace(self.phrase, " ").split())
        return rest if re.search(r"\w", rest) else question


def parse_timeframe(question: str, at: datetime, timezone: str | None = None) -> TimeFrame | None:
    """The window of time ``question`` names, relative to ``at`` in ``timezone`` (an IANA name;
    None: UTC), or None when it names none."""
    zone = ZoneInfo(timezone) if timezone else UTC
    local = at.astimezone(zone)
    for parse in (_chinese, _english):
        frame = parse(question, local)
        if frame is not None:
            return frame
    return None


# --- calendar arithmetic, in the person's zone ---------------------------------------------------


def _day(local: datetime) -> datetime:
    return local.replace(hour=0, minute=0, second=0, microsecond=0)


def _month(year: int, month: int, zone: datetime) -> datetime:
    year += (month - 1) // 12
    month = (month - 1) % 12 + 1
    return datetime(year, month, 1, tzinfo=zone.tzinfo)


def _window(local: datetime, unit: str, back: int) -> tuple[datetime, datetime]:
    """The calendar ``unit`` (day, week from Monday, month, year) ``back`` units before the
    one holding ``local``."""
    if unit == "day":
        start = _day(local) - timedelta(days=back)
        return start, start + timedelta(days=1)
    if unit == "week":
        start = _day(local) - timedelta(days=local.weekday() + 7 * back)
        return start, start + timedelta(days=7)
    if unit == "month":
        start = _month(local.year, local.month - back, local)
        return start, _month(start.year, start.month + 1, local)
    start = datetime(local.year - back, 1, 1, tzinfo=local.tzinfo)
    return start, datetime(local.year - back + 1, 1, 1, tzinfo=local.tzinfo)


def _named_month(
    local: datetime,
    month: int,
    *,
    last: bool,
    year: int | None,
    ahead: bool = False,
    next_one: bool = False,
) -> tuple[datetime, datetime]:
    """The month named: of ``year`` if given; else the latest one before the current month
    (``last``: "last May" asked in May is a year ago) or not after it ("in May"); with
    ``ahead`` (a question about plans), the next one (``next_one``: after the current month)."""
    if year is None:
        if ahead:
            later = month > local.month or (month == local.month and not next_one)
            year = local.year if later else local.year + 1
        elif month < local.month or (month == local.month and not last):
            year = local.year
        else:
            year = local.year - 1
    start = datetime(year, month, 1, tzinfo=local.tzinfo)
    return start, _month(year, month + 1, local)


def _frame(phrase: str, window: tuple[datetime, datetime]) -> TimeFrame:
    start, end = window
    return TimeFrame(phrase=phrase, start=start.astimezone(UTC), end=end.astimezone(UTC))


# --- English --------------------------------------------------------------------------------------

_EN_EARLIEST = re.compile(
    r"\b(?:at|in) the (?:very )?(?:start|beginning)\b|\bin the first place\b|\bat first\b", re.I
)
_EN_RELATIVE_DAY = re.compile(r"\b(yesterday|today|the day before yesterday)\b", re.I)
_EN_THIS_LAST = re.compile(r"\b(this|last|past|previous) (week|month|year)\b", re.I)
_EN_AGO = re.compile(
    r"\b(\d{1,2}|" + "|".join(_NUMBER_WORDS) + r") (day|week|month|year)s? ago\b", re.I
)
_EN_MONTH = re.compile(
    r"\b(?:(last|next|this|in|during|since|of|for|early|late|mid|by)[ -])?(" + _MONTH_WORD + r")\.?"
    r"(?:,? (\d{4}))?\b",
    re.I,
)
_EN_AHEAD = re.compile(r"\b(?:will|plans?|planning|going to|upcoming|next)\b", re.I)
"""Words of a question about what is to come: a month it names is the next one."""
_EN_YEAR = re.compile(r"\b(?:in|during|of|since) ((?:19|20)\d{2})\b", re.I)
_EN_ANCHOR = re.compile(
    r"\b(before|after) (?:the |my |our |we |i )?([\w' -]{2,40}?)(?=[?.!,]|$)", re.I
)


def _english(question: str, local: datetime) -> TimeFrame | None:
    if found := _EN_EARLIEST.search(question):
        return TimeFrame(phrase=found.group(0), earliest=True)
    if found := _EN_RELATIVE_DAY.search(question):
        word = found.group(1).lower()
        back = {"today": 0, "yesterday": 1}.get(word, 2)
        return _frame(found.group(0), _window(local, "day", back))
    if found := _EN_AGO.search(question):
        count = found.group(1).lower()
        back = int(count) if count.isdigit() else _NUMBER_OF[count]
        return _frame(found.group(0), _window(local, found.group(2).lower(), back))
    if found := _EN_THIS_LAST.search(question):
        back = 0 if found.group(1).lower() == "this" else 1
        return _frame(found.group(0), _window(local, found.group(2).lower(), back))
    for found in _EN_MONTH.finditer(question):
        word, lead, year = found.group(2), (found.group(1) or "").lower(), found.group(3)
        # "may" is a month only when it reads as one: capitalised mid-sentence, or led in
        if word.lower() == "may" and not (lead or year or (word == "May" and found.start(2))):
            continue
        month = _MONTH_OF[word.lower()]
        ahead = lead == "next" or (lead != "last" and bool(_EN_AHEAD.search(question)))
        window = _named_month(
            local,
            month,
            last=lead == "last",
            year=int(year) if year else None,
            ahead=ahead,
            next_one=lead == "next",
        )
        return _frame(found.group(0), window)
    if found := _EN_YEAR.search(question):
        year = int(found.group(1))
        return _frame(found.group(0), _window(local.replace(year=year, month=1, day=1), "year", 0))
    if found := _EN_ANCHOR.search(question):
        return TimeFrame(
            phrase=found.group(0),
            anchor=found.group(2).strip(),
            before_anchor=found.group(1).lower() == "before",
        )
    return None


# --- Chinese --------------------------------------------------------------------------------------

_ZH_EARLIEST = re.compile(r"一开始|刚开始|最开始|起初|最初|当初")
_ZH_DAY = re.compile(r"大前天|前天|昨天|今天")
_ZH_LAST = re.compile(r"(上上|上|这|本)(?:个)?(周|星期|礼拜|月)")
_ZH_YEAR_WORD = re.compile(r"(前年|去年|今年)(?:的)?(?:(" + _CJK_NUMBER + r")月(?:份)?)?")
_ZH_AGO = re.compile(r"(" + _CJK_NUMBER + r")(个月|天|周|星期|礼拜|年)(?:之|以)?前")
_ZH_DATE = re.compile(r"((?:19|20)\d{2})年(?:(" + _CJK_NUMBER + r")月(?:份)?)?")
_ZH_MONTH = re.compile(r"(?<![\d一二两三四五六七八九十个])(" + _CJK_NUMBER + r")月(?:份)?(?!前)")
_ZH_ANCHOR = re.compile(r"(?:在)?([\u4e00-\u9fff]{2,8}?)(之前|以前|之后|以后)")


def _cjk_number(text: str) -> int:
    if text.isdigit():
        return int(text)
    if len(text) == 2:  # 十一, 十二
        return 10 + _CJK_DIGITS[text[1]]
    return _CJK_DIGITS[text]


def _chinese(question: str, local: datetime) -> TimeFrame | None:
    if found := _ZH_EARLIEST.search(question):
        return TimeFrame(phrase=found.group(0), earliest=True)
    if found := _ZH_DAY.search(question):
        back = {"今天": 0, "昨天": 1, "前天": 2, "大前天": 3}[found.group(0)]
        return _frame(found.group(0), _window(local, "day", back))
    if found := _ZH_AGO.search(question):
        unit = _CJK_UNIT[found.group(2)]
        return _frame(found.group(0), _window(local, unit, _cjk_number(found.group(1))))
    if found := _ZH_LAST.search(question):
        back = {"上上": 2, "上": 1}.get(found.group(1), 0)
        return _frame(found.group(0), _window(local, _CJK_UNIT[found.group(2)], back))
    if found := _ZH_YEAR_WORD.search(question):
        year = local.year - {"前年": 2, "去年": 1, "今年": 0}[found.group(1)]
        if found.group(2):
            window = _named_month(local, _cjk_number(found.group(2)), last=False, year=year)
            return _frame(found.group(0), window)
        return _frame(found.group(0), _window(local.replace(year=year, month=1, day=1), "year", 0))
    if found := _ZH_DATE.search(question):
        year = int(found.group(1))
        if found.group(2):
            window = _named_month(local, _cjk_number(found.group(2)), last=False, year=year)
            return _frame(found.group(0), window)
        return _frame(found.group(0), _window(local.replace(year=year, month=1, day=1), "year", 0))
    if found := _ZH_MONTH.search(question):
        month = _cjk_number(found.group(1))
        if 1 <= month <= 12:
            return _frame(found.group(0), _named_month(local, month, last=False, year=None))
    if found := _ZH_ANCHOR.search(question):
        return TimeFrame(
            phrase=found.group(0),
            anchor=found.group(1),
            before_anchor=found.group(2) in ("之前", "以前"),
        )
    return None


__all__ = ["TimeFrame", "parse_timeframe"]
