"""Domain objects as JSON-ready values, the same for every interface (CLI ``--json``, the API,
the dashboard, MCP)."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from decimal import Decimal
from enum import Enum
from typing import Any

from steward.domain.audience import Audience

_PLAIN = (str, int, float, bool, type(None))
_FIELDS: dict[type, tuple[str, ...]] = {}
"""Field names of each dataclass met, looked up once (listings encode thousands of objects)."""


def to_jsonable(value: Any) -> Any:
    """Dataclasses as objects, times as ISO 8601, enums as their values, audiences as spelled
    (``private``, ``group:family``), decimals (prices) as exact strings."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, Audience | Decimal):
        return str(value)
    names = _FIELDS.get(kind)
    if names is None:
        if not (dataclasses.is_dataclass(value) and not isinstance(value, type)):
            return value
        names = _FIELDS[kind] = tuple(f.name for f in dataclasses.fields(value))
    return {name: to_jsonable(getattr(value, name)) for name in names}
