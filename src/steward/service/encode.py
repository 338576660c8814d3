"""Domain objects as JSON-ready values, the same for every interface (CLI ``--json``, the API,
the dashboard, MCP)."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from enum import Enum
from typing import Any

from steward.domain.audience import Audience


def to_jsonable(value: Any) -> Any:
    """Dataclasses as objects, times as ISO 8601, enums as their values, audiences as spelled
    (``private``, ``group:family``)."""
    if isinstance(value, Audience):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    return value
