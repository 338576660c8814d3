"""Untrusted data cannot steer actions: where the values of a proposed action first came from.

Data flow, not a pattern list. Text enters a task from two kinds of source: the person (the
task's instructions, the goal, their answers, the memories they keep) and others (mail bodies,
web pages, shared files, webhook payloads: tools marked ``untrusted_output`` and events). Every
untrusted text is remembered, per source and in order, as the normalised word sequences it
contains; the person's text is read from the task itself when an action is checked.

An argument in a *controlling* role (recipient, host, payee, amount, identifier, time; see
:class:`~steward.domain.roles.Role`) is **tainted** when its value, normalised, appears in
untrusted content as a whole value and not in the person's text as a whole value. Whatever the
value looks like: ``file_id="13"`` or ``hotel="Riverside View Hotel"`` copied from an injected
mail are tainted just like an address. The harness then asks the person, unless a grant of
theirs names that exact value.

Normalisation: Unicode NFKC, case-folded, whitespace collapsed; dates (``2024-05-01``,
``May 1, 2024``, ``1st May 2024``, ``2024/05/01``) become ISO dates; numbers become canonical
decimals (``4,500.00`` is ``4500``). A *whole value* is a run of whole tokens, and a token is a
word with its inner punctuation (``attacker@evil.example``, ``2024-05-01``, ``4,500.00``): so
"2024" said by the person does not vouch for an attacker's ``2024-05-01``, and a year seen in a
mail does not taint a date the model worked out.

Bounded: each untrusted source is remembered as a fixed-size Bloom filter of its word sequences
(one to four words; a longer value must have every four-word window in one source), zlib-packed
in the task state; past :data:`MAX_SOURCES` the oldest are merged into one, and a text too long
for a filter (:data:`FULL_AT`) counts as containing everything. A filter never forgets, and its
false positives only make an action ask.

Confidentiality (:func:`data_classes`): the person's card numbers (Luhn-checked), identity
numbers and health terms in an argument whose value leaves (content, free text) are named on the
request; the policy requires a grant naming each data class.

Limits, by construction: this catches values copied from untrusted text, not decisions the text
talked the model into with values of its own (those still meet the sentinel's rules and grants),
nor values the model transformed beyond recognition (an address spelled out in words).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import unicodedata
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from functools import partial
from typing import Any

from steward.domain.roles import DataClass, Role
from steward.domain.trail import Seen, Trail
from steward.sentinel.urls import UrlRefused, authority_of, host_key, parse_url

FILTER_BITS = 1 << 15
"""Bits per source filter (4 KiB): about 3,000 word sequences at a 1% false-positive rate."""
HASHES = 4
"""Bit positions per word sequence."""
LONGEST = 4
"""Longest word sequence remembered; longer values are checked window by window."""
FULL_AT = FILTER_BITS // 2
"""A text with more distinct word sequences than this (about 4,000 words) would fill its filter
past use: it is recorded as containing every value, so each controlling value the person did
not give asks. Hashing it would cost more and tell nothing."""
MAX_SOURCES = 8
"""Untrusted sources remembered separately; older ones are merged into one filter."""
EARLIER = "earlier untrusted content"
"""The label of the merged filter."""

# --- normalisation --------------------------------------------------------------------------

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_DATES = (
    # 2024-05-01, 2024/05/01, 2024.05.01, with an optional time of day (kept as its own token)
    (
        re.compile(
            r"\b(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?:[t ](\d{1,2}:\d{2})(?::\d{2}(?:\.\d+)?)?"
            r"(?:z|[+-]\d{2}:?\d{2})?)?\b"
        ),
        (1, 2, 3, 4),
    ),
    (re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+(\d{{4}})\b"), (3, 1, 2, None)),  # may 1st, 2024
    (re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+(\d{{4}})\b"), (3, 2, 1, None)),  # 1 may 2024
)
_TOKEN = re.compile(r"\w+(?:[.@+\-/:,'&%?=#~]+\w+)*")
_LIST = re.compile(r"[;\n|]+|,(?!\d)")
"""Where a controlling value is a list of values (``ada@x.example, mallory@evil.example``):
each is judged alone (a comma between digits is a thousands separator)."""
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_NUMBER = re.compile(r"^(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?$")


def _iso(match: re.Match[str], *, groups: tuple[int, int, int, int | None]) -> str:
    """The date ``match`` found, as ``YYYY-MM-DD`` (and ``HH:MM`` when it had a time)."""
    year, month, day, clock = groups
    raw_month = match.group(month)
    month_number = int(raw_month) if raw_month.isdigit() else _MONTHS[raw_month.rstrip(".")]
    day_number = int(match.group(day))
    if not (1 <= month_number <= 12 and 1 <= day_number <= 31):
        return match.group(0)
    iso = f"{int(match.group(year)):04d}-{month_number:02d}-{day_number:02d}"
    if clock is not None and match.group(clock):
        hours, minutes = match.group(clock).split(":")
        iso += f" {int(hours):02d}:{minutes}"
    return iso


def _canonical(token: str) -> str:
    """A number as its canonical decimal (``4,500.00`` → ``4500``); other tokens as they are."""
    if not _NUMBER.match(token):
        return token
    return format(Decimal(token.replace(",", "")).normalize(), "f")


def tokens(text: str) -> list[str]:
    """The normalised whole tokens of ``text``, in order."""
    folded = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    for pattern, groups in _DATES:
        folded = pattern.sub(partial(_iso, groups=groups), folded)
    return [_canonical(token) for token in _TOKEN.findall(folded)]


def _phrases(words: Sequence[str]) -> Iterator[str]:
    """Every run of one to :data:`LONGEST` consecutive tokens."""
    for start in range(len(words)):
        for size in range(1, LONGEST + 1):
            if start + size > len(words):
                break
            yield " ".join(words[start : start + size])


def _hosts(words: Iterable[str]) -> Iterator[str]:
    """The hosts of the URLs and host names among ``words``, read the one way the sentinel and
    the broker read them (IDNA A-labels, no trailing dot): a host the model respells
    (``bücher.example`` as ``xn--bcher-kva.example.``) is still the host it saw."""
    for word in words:
        if "://" in word:
            authority = authority_of(word)
            if "@" in authority:  # refused where it would be sent; its host follows the last @
                word = word.replace(authority, authority.rpartition("@")[2], 1)
            try:
                yield parse_url(word).host
            except UrlRefused:
                continue
        elif "." in word and (host := host_key(word)):
            yield host


def _windows(words: Sequence[str]) -> list[str]:
    """What must all be in one source for the whole value to be there."""
    if len(words) <= LONGEST:
        return [" ".join(words)]
    return [" ".join(words[i : i + LONGEST]) for i in range(len(words) - LONGEST + 1)]


def _contains(text: Sequence[str], value: Sequence[str]) -> bool:
    size = len(value)
    return size > 0 and any(
        list(text[i : i + size]) == list(value) for i in range(len(text) - size + 1)
    )


# --- the untrusted record -------------------------------------------------------------------


class _Filter:
    """A Bloom filter of word sequences, packed for the task state."""

    def __init__(self, packed: str | None = None, *, full: bool = False) -> None:
        if packed:
            self.bits = bytearray(zlib.decompress(base64.b64decode(packed)))
        else:
            self.bits = bytearray((b"\xff" if full else b"\x00") * (FILTER_BITS // 8))

    @staticmethod
    def _positions(phrase: str) -> Iterator[int]:
        digest = hashlib.blake2b(phrase.encode(), digest_size=4 * HASHES).digest()
        for i in range(HASHES):
            yield int.from_bytes(digest[4 * i : 4 * i + 4], "big") % FILTER_BITS

    def add(self, phrase: str) -> None:
        for bit in self._positions(phrase):
            self.bits[bit // 8] |= 1 << (bit % 8)

    def __contains__(self, phrase: object) -> bool:
        return isinstance(phrase, str) and all(
            self.bits[bit // 8] & (1 << (bit % 8)) for bit in self._positions(phrase)
        )

    def merge(self, other: _Filter) -> None:
        for i, byte in enumerate(other.bits):
            self.bits[i] |= byte

    def pack(self) -> str:
        return base64.b64encode(zlib.compress(bytes(self.bits), 9)).decode()


@dataclass(kw_only=True, frozen=True)
class Taint:
    """A controlling argument whose value first came from others' text."""

    value: str
    """The argument's value, as the model gave it."""
    source: str
    """Where it was first seen: the tool (or ``event:<type>``)."""
    step: int
    """The step that read it."""
    guessed: bool = False
    """The tool declares no argument roles, so the argument was judged controlling by what its
    value looks like."""

    def describe(self) -> str:
        how = " (judged by its shape: the tool declares no argument roles)" if self.guessed else ""
        return (
            f"{self.value!r} only in untrusted content from {self.source} (step {self.step}){how}"
        )


def read_untrusted(trail: Trail) -> bool:
    """Whether the task has read others' text (or inherited that from its parent)."""
    return trail.read_untrusted


def remember(trail: Trail, text: str, *, source: str, step: int) -> None:
    """Record that the task read an untrusted text: its word sequences, under ``source``."""
    trail.read_untrusted = True
    words = tokens(text)
    phrases = {*_phrases(words), *_hosts(words)}
    record = _Filter(full=len(phrases) > FULL_AT)
    if len(phrases) <= FULL_AT:
        for phrase in phrases:
            record.add(phrase)
    _append(trail, Seen(source=source, step=step, filter=record.pack()))


def remember_event(trail: Trail, event: dict[str, Any], *, step: int) -> str:
    """Record that the task read an event (others' text); one a connection's watch delivered
    is also an item of that connection, so what the task learns from it is forgotten with
    the connection. Returns the event as the text the task is shown."""
    text: str = json.dumps(event, sort_keys=True, default=str)
    remember(trail, text, source=f"event:{event.get('type')}", step=step)
    origin = str(event.get("source") or "")
    if origin.startswith("connection:") and event.get("id"):
        trail.read_items([f"{origin.removeprefix('connection:')}/{event['id']}"])
    return text


def _append(trail: Trail, entry: Seen) -> None:
    seen = trail.seen
    seen.append(entry)
    if len(seen) > MAX_SOURCES:
        # the two oldest become one: nothing is forgotten, only where it came from blurs
        first, second = seen[0], seen[1]
        merged = _Filter(first.filter)
        merged.merge(_Filter(second.filter))
        seen[:2] = [Seen(source=EARLIER, step=first.step, filter=merged.pack())]


def absorb(trail: Trail, child: Trail, *, child_id: str) -> None:
    """Take in what a finished subtask read: its report to this task may carry others'
    values, which must not steer this task's actions either."""
    known = {entry.filter for entry in trail.seen}
    for entry in child.seen:
        if entry.filter not in known:
            _append(trail, replace(entry, source=f"{entry.source} in subtask {child_id}"))
    if child.read_untrusted:
        trail.read_untrusted = True


def trust(trail: Trail, text: str) -> None:
    """Record text from a trusted source met during the task (the person's answers)."""
    trusted = trail.trusted
    trusted.append(text[:2000])
    if len(trusted) > 50:
        del trusted[: len(trusted) - 50]


def sources(trail: Trail) -> list[str]:
    """The untrusted sources the task read, oldest first: ``read_inbox (step 3)``."""
    return [f"{s.source} (step {s.step})" for s in trail.seen]


def inherit(trail: Trail) -> Trail:
    """What a subtask takes over of its parent's record (it still cannot be steered by what
    the parent read); the parent's trusted text goes with it separately."""
    return Trail(read_untrusted=trail.read_untrusted, seen=list(trail.seen))


def adopt(trail: Trail, inherited: Trail) -> None:
    """Take over a parent's record (:func:`inherit`)."""
    trail.seen = list(inherited.seen)
    if inherited.read_untrusted:
        trail.read_untrusted = True


# --- checking an action ----------------------------------------------------------------------

_SHAPES = (
    re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),  # e-mail addresses
    re.compile(r"https?://\S+", re.IGNORECASE),  # URLs
    re.compile(r"^(?:[\w-]+\.)+[a-z]{2,}$", re.IGNORECASE),  # host names
    re.compile(r"^[A-Z]{2}\d{2}[A-Z0-9]{10,30}$"),  # IBAN-like account numbers
    re.compile(r"^[\d\s,.+()/-]{4,}$"),  # numbers: amounts, accounts, phones, dates
)


def _looks_controlling(value: str) -> bool:
    """For tools that declare no roles only: a value shaped like an address, a URL, a host,
    an account or a number."""
    text = value.strip()
    return any(pattern.search(text) for pattern in _SHAPES)


def untrusted_arguments(
    args: Mapping[str, Any],
    trail: Trail,
    trusted_text: str,
    roles: Mapping[str, Role] | None,
) -> dict[str, Taint]:
    """Controlling arguments whose values first came from untrusted content: ``{path: Taint}``.

    ``roles`` are the tool's declared argument roles; ``None`` means the tool declares none, and
    then every argument whose value looks consequential is checked (labelled as a guess)."""
    seen = [(s.source, s.step, _Filter(s.filter)) for s in trail.seen]
    if not seen:
        return {}
    trusted = tokens(trusted_text)
    trusted_hosts = set(_hosts(trusted))
    flagged: dict[str, Taint] = {}
    for path, role, leaf in _leaves(args, roles):
        if role is not None and not role.controlling:
            continue
        for part in _LIST.split(leaf):
            if role is None and not _looks_controlling(part):
                continue
            found = _first_seen(tokens(part), role, trusted, trusted_hosts, seen)
            if found is not None:
                source, step = found
                flagged[path] = Taint(value=leaf, source=source, step=step, guessed=role is None)
                break
    return flagged


def _first_seen(
    words: list[str],
    role: Role | None,
    trusted: Sequence[str],
    trusted_hosts: set[str],
    seen: Sequence[tuple[str, int, _Filter]],
) -> tuple[str, int] | None:
    """The first untrusted source (and step) where a value was seen, if the person's text does
    not have it."""
    if role is Role.TIME:
        dated = [w for w in words if _ISO_DATE.match(w)]
        words = dated or words  # the date selects; a time of day alone is too common
    if role in (Role.HOST, None) and len(words) == 1:
        # where a request goes is its host: a path or query the model added changes nothing
        words = list(_hosts(words)) or words
        if trusted_hosts.intersection(words):
            return None
    if not words or _contains(trusted, words):
        return None
    windows = _windows(words)
    for source, step, record in seen:
        if all(window in record for window in windows):
            return source, step
    return None


def _leaves(
    value: Any, roles: Mapping[str, Role] | None, path: str = "", role: Role | None = None
) -> Iterator[tuple[str, Role | None, str]]:
    """Every scalar under the arguments, with its path and the role of its top-level
    argument."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            here = f"{path}.{key}" if path else str(key)
            inner = role if path else (roles or {}).get(str(key))
            if not path and roles is not None and inner is None:
                continue  # an argument with no role neither steers nor carries data out
            yield from _leaves(item, roles, here, inner)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _leaves(item, roles, f"{path}[{index}]", role)
    elif isinstance(value, str | int | float | Decimal) and not isinstance(value, bool):
        yield path, role, str(value)


def describe(flagged: Mapping[str, Taint]) -> str:
    """For the person: which argument came from where."""
    return "; ".join(f"{path}: {taint.describe()}" for path, taint in sorted(flagged.items()))


# --- confidentiality -------------------------------------------------------------------------

_CARD = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")
_IDENTITY = (
    re.compile(r"\b\d{3}-\d{2}-\d{4}\b"),  # US social security numbers
    re.compile(
        r"\b(?:passport|national id|id card|identity card|personalausweis|social security|"
        r"ssn|tax id|tax number|nino|insurance number)\b(?:\s*(?:no\.?|number|#|nr\.?))?"
        r"\s*[:#]?\s*[a-z0-9]*\d[a-z0-9-]{4,}",
        re.IGNORECASE,
    ),
)
_HEALTH = re.compile(
    r"\b(?:diagnos[a-z]*|prescri(?:bed|ption)s?|medication|dosage|chemotherapy|"
    r"hiv|aids|cancer|tumou?r|diabetes|depression|anxiety disorder|bipolar|schizophreni[a-z]*|"
    r"pregnan(?:t|cy)|miscarriage|abortion|blood test|biopsy|mri scan|antidepressants?|"
    r"insulin|therapy sessions?|psychiatri[a-z]*|rehab)\b",
    re.IGNORECASE,
)


def _luhn(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        number = int(char)
        if index % 2:
            number = number * 2 - 9 if number > 4 else number * 2
        total += number
    return total % 10 == 0


def sensitive(text: str) -> set[DataClass]:
    """The kinds of sensitive personal data in ``text``."""
    found: set[DataClass] = set()
    for match in _CARD.finditer(text):
        digits = re.sub(r"\D", "", match.group(0))
        if 13 <= len(digits) <= 19 and _luhn(digits):
            found.add(DataClass.CARD)
            break
    if any(pattern.search(text) for pattern in _IDENTITY):
        found.add(DataClass.IDENTITY)
    if _HEALTH.search(text):
        found.add(DataClass.HEALTH)
    return found


def data_classes(
    args: Mapping[str, Any], roles: Mapping[str, Role] | None, private: Iterable[str] = ()
) -> tuple[DataClass, ...]:
    """The kinds of the person's sensitive data the arguments would carry out: in the
    arguments whose values leave (content, free text; every argument of a tool without roles).
    ``private`` are texts kept for the person alone (their private memories recalled in the
    task): four words of one in a row are private data."""
    found: set[DataClass] = set()
    private_phrases = {w for text in private for w in _grams(tokens(text))}
    for _, role, leaf in _leaves(args, roles):
        if role is not None and not role.outbound:
            continue
        found |= sensitive(leaf)
        if private_phrases and not private_phrases.isdisjoint(_grams(tokens(leaf))):
            found.add(DataClass.PRIVATE)
    return tuple(sorted(found))


def _grams(words: Sequence[str]) -> set[str]:
    """Every run of :data:`LONGEST` tokens (shorter texts are too common to be telling)."""
    return {" ".join(words[i : i + LONGEST]) for i in range(len(words) - LONGEST + 1)}
