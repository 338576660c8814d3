"""Untrusted data cannot steer actions: provenance of the values in a proposed action.

Tool results from untrusted sources (email bodies, web pages, files from others, webhook
payloads) are labelled, and the consequential values in them — addresses, URLs and hosts,
account numbers and amounts — are remembered in the task state (bounded). When an argument of a
proposed external action carries such a value and the value does not also come from a trusted
source (the person's instructions and answers, the goal, an allowlist), the action is escalated
to "ask", and the person sees where the value came from.

Limits, by construction: this catches values copied from untrusted text, not decisions the text
talked the model into with values of its own (those still meet the sentinel's rules and grants),
nor values the model transformed beyond recognition (an address spelled out in words).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

MAX_TAINTS = 500
"""Values remembered per task; the oldest are forgotten first."""

_PATTERNS = (
    re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),  # e-mail addresses
    re.compile(r"https?://[^\s\"'<>)\]]+", re.IGNORECASE),  # URLs
    re.compile(r"\b(?:[a-z0-9-]+\.)+[a-z]{2,}\b", re.IGNORECASE),  # host names
    re.compile(r"\b[A-Z]{2}\d{2}[A-Z0-9]{10,30}\b"),  # IBAN-like account numbers
    re.compile(r"\b\d[\d,.]{2,}\d\b"),  # numbers of 4+ characters: amounts, accounts, phones
)


def extract(text: str) -> set[str]:
    """The consequential values in a text, normalised (lower case, no trailing dots)."""
    found: set[str] = set()
    for pattern in _PATTERNS:
        for match in pattern.findall(text):
            found.add(_norm(match))
    return found


def _norm(value: str) -> str:
    return value.strip().rstrip(".,;:").lower()


@dataclass(kw_only=True, frozen=True)
class Taint:
    """A value seen in untrusted content."""

    value: str
    """The normalised value."""
    source: str
    """Where it was seen: the tool (or ``event:<type>``)."""
    step: int
    """The step that recorded it."""


READ_UNTRUSTED = "read_untrusted"
"""Task-state key: the task has read others' text (whatever values it held). What it learns
from then on may be theirs: memories it proposes are candidates, skills it proposes wait."""


def read_untrusted(state: dict[str, Any]) -> bool:
    """Whether the task has read others' text (or inherited that from its parent)."""
    return bool(state.get(READ_UNTRUSTED))


def remember(state: dict[str, Any], text: str, *, source: str, step: int) -> None:
    """Record that the task read an untrusted text, and its consequential values."""
    state[READ_UNTRUSTED] = True
    taints: list[dict[str, Any]] = state.setdefault("taint", [])
    known = {t["value"] for t in taints}
    for value in sorted(extract(text)):
        if value not in known:
            taints.append({"value": value, "source": source, "step": step})
    if len(taints) > MAX_TAINTS:
        del taints[: len(taints) - MAX_TAINTS]


def trust(state: dict[str, Any], text: str) -> None:
    """Record text from a trusted source met during the task (the person's answers)."""
    trusted: list[str] = state.setdefault("trusted", [])
    trusted.append(text[:2000])
    if len(trusted) > 50:
        del trusted[: len(trusted) - 50]


def untrusted_arguments(
    args: dict[str, Any], taints: Iterable[dict[str, Any]], trusted_text: str
) -> dict[str, Taint]:
    """Arguments whose values come only from untrusted content: ``{"to": Taint(...)}``."""
    trusted = trusted_text.lower()
    index = {t["value"]: t for t in taints}
    if not index:
        return {}
    flagged: dict[str, Taint] = {}
    for path, leaf in _leaves(args):
        candidates = extract(leaf) | {_norm(leaf)}
        for value in sorted(candidates):
            taint = index.get(value)
            if taint is not None and value not in trusted:
                flagged[path] = Taint(value=value, source=taint["source"], step=taint["step"])
                break
    return flagged


def _leaves(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _leaves(item, f"{path}[{index}]")
    elif isinstance(value, str | int | float) and not isinstance(value, bool):
        yield path, str(value)


def describe(flagged: dict[str, Taint]) -> str:
    """For the person: which argument came from where."""
    return "; ".join(
        f"{path}={taint.value!r} appears only in untrusted content ({taint.source}, step "
        f"{taint.step})"
        for path, taint in sorted(flagged.items())
    )
