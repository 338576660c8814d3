"""The bounds on what a person, a token or an outside service may hand Steward to keep: how
deep and how large a JSON value may be, how long a text, how far ahead a time. Every door of the
facade checks its input here, so every interface (API, webhooks, CLI, MCP, dashboard) refuses
the same things with the same words, before anything walks the value recursively, stores it or
turns it into a time.

The walk is iterative: a value nested far deeper than the limit is refused after looking at the
first ``MAX_DEPTH + 1`` levels, never by exhausting the interpreter's stack.
"""

from __future__ import annotations

import math
from datetime import timedelta

from steward.errors import TooLarge, UsageError

MAX_DEPTH = 32
"""Levels of nesting in a stored JSON value (an object in an object is two)."""
MAX_JSON_CHARS = 1_000_000
"""Characters a stored JSON value may take, counted as its compact JSON text would, roughly."""
MAX_TEXT = 100_000
"""Characters in one free text (a memory, an instruction, an answer)."""
MAX_NAME = 128
"""Characters in a name things are looked up by: an event's type or source, a task's kind."""
MAX_KEY = 200
"""Characters in an event's dedupe key."""
MAX_KIND = 32
"""Characters in a connection's kind (``email``, ``http``)."""
MAX_INT = 2**63 - 1
"""The largest integer (by absolute value) a database integer or a JSON number here holds."""
MAX_SEQ = MAX_INT
"""The largest sequence number or version (a larger one is refused)."""
MAX_HOURS = 24 * 366 * 10
"""How far ahead a time given in hours (a grant's lifetime) may reach: ten years."""

_SCALAR = 8
"""What a number, a boolean or null counts towards :data:`MAX_JSON_CHARS`."""


def check_json(value: object, what: str) -> None:
    """Refuse ``value`` (:class:`TooLarge`, naming ``what`` and the limit) when it is nested
    deeper than :data:`MAX_DEPTH`, larger than :data:`MAX_JSON_CHARS`, or holds a number JSON
    cannot carry (infinite, NaN, or an integer beyond :data:`MAX_INT`)."""
    size = 0
    pending: list[tuple[object, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict | list | tuple):
            if depth > MAX_DEPTH:
                raise TooLarge(f"{what} is nested too deeply: at most {MAX_DEPTH} levels")
            size += 2 + len(item)
            if isinstance(item, dict):
                for key, inner in item.items():
                    size += len(key) + 3 if isinstance(key, str) else _SCALAR
                    pending.append((inner, depth + 1))
            else:
                pending.extend((inner, depth + 1) for inner in item)
        elif isinstance(item, str):
            size += len(item) + 2
        else:
            _check_number(item, what)
            size += _SCALAR
        if size > MAX_JSON_CHARS:
            raise TooLarge(f"{what} is too large: at most {MAX_JSON_CHARS} characters of JSON")


def check_text(value: str, what: str, *, most: int = MAX_TEXT) -> None:
    """Refuse a text longer than ``most`` characters."""
    if len(value) > most:
        raise TooLarge(f"{what} is too long: at most {most} characters, not {len(value)}")


def hours_ahead(hours: float, what: str) -> timedelta:
    """``hours`` as a span: more than zero and at most :data:`MAX_HOURS` (an absurd number
    would overflow a time, or never end)."""
    if not (isinstance(hours, int | float) and math.isfinite(hours) and 0 < hours <= MAX_HOURS):
        raise UsageError(f"{what} must be more than 0 and at most {MAX_HOURS} hours (ten years)")
    return timedelta(hours=hours)


def seconds_span(seconds: float, what: str) -> timedelta:
    """``seconds`` as a span: from zero to :data:`MAX_HOURS` (an absurd number would
    overflow a time wherever it is used later, in the scheduler say)."""
    most = MAX_HOURS * 3600
    if not (isinstance(seconds, int | float) and math.isfinite(seconds) and 0 <= seconds <= most):
        raise UsageError(f"{what} must be from 0 to {most} seconds (ten years)")
    return timedelta(seconds=seconds)


def check_seq(seq: int, what: str) -> None:
    """Refuse a position outside ``0..MAX_SEQ``."""
    if not 0 <= seq <= MAX_SEQ:
        raise UsageError(f"{what} must be from 0 to {MAX_SEQ}")


def _check_number(item: object, what: str) -> None:
    if isinstance(item, float) and not math.isfinite(item):
        raise UsageError(f"{what} holds a number JSON cannot carry ({item})")
    if isinstance(item, int) and not isinstance(item, bool) and abs(item) > MAX_INT:
        raise TooLarge(f"{what} holds an integer beyond {MAX_INT}")
