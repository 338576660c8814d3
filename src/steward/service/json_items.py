"""Items a script hands over in bulk (memories to import, tasks to create): a JSON array of
objects, or JSON lines (one object a line), each checked by a pydantic model; the first bad
one refuses them all, named by its place, in the words of a person fixing their file."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from steward.errors import UsageError

M = TypeVar("M", bound=BaseModel)


def json_values(text: str) -> Iterator[tuple[str, Any]]:
    """Each value of a JSON array (``item <n>``, counted from 0) or of JSON lines (``line <n>``,
    counted from 1; blank lines skipped), with where it was."""
    if text.lstrip().startswith("["):
        try:
            values = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(f"not a JSON array: {exc}") from None
        yield from ((f"item {n}", value) for n, value in enumerate(values))
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield f"line {number}", json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"line {number}: not a JSON object: {exc.msg}") from None


def checked(
    where: str, value: Any, model: type[M], *, what: str, said: Mapping[str, str] = {}
) -> M:
    """``value`` as ``model``, or :class:`UsageError` saying ``where`` and why. ``what`` names
    one item (``a statement``); ``said`` gives the words for a field that is missing, empty or
    out of range (one too long still says its limit)."""
    if not isinstance(value, dict):
        raise UsageError(f"{where}: {what} is a JSON object")
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        problems = "; ".join(plain(error, what=what, said=said) for error in exc.errors())
        raise UsageError(f"{where}: {problems}") from None


def plain(error: ErrorDetails, *, what: str, said: Mapping[str, str] = {}) -> str:
    """One of pydantic's findings in plain words."""
    field = ".".join(map(str, error["loc"])) or what
    context = error.get("ctx", {})
    kind = error["type"]
    if field in said and kind not in ("string_too_long", "too_long"):
        return said[field]
    if kind == "missing":
        return f"{field} is missing"
    if kind == "extra_forbidden":
        return f"“{field}” is not a field of {what}"
    if kind == "string_too_short":
        return f"{field} is empty"
    if kind == "string_too_long":
        return f"{field} is longer than {context.get('max_length')} characters"
    if kind == "too_long":
        return f"{field} has more than {context.get('max_length')} entries"
    if kind in ("greater_than_equal", "greater_than"):
        return f"{field} is at least {context.get('ge', context.get('gt'))}"
    if kind in ("less_than_equal", "less_than"):
        return f"{field} is at most {context.get('le', context.get('lt'))}"
    if kind == "enum":
        return f"{field} is one of {context.get('expected')}"
    if kind == "timezone_aware":
        return f"{field} needs a time zone, as in 2026-05-01T09:00:00+02:00"
    if kind.startswith(("datetime", "date")):
        return f"{field} is not a date and time, as in 2026-05-01T09:00:00+02:00"
    return f"{field}: {error['msg'][:1].lower()}{error['msg'][1:]}"
