"""How every Steward process logs: one line per record, and for a failure a short traceback of
frames — never the frames' local variables (rendering them took seconds to minutes for a large
or deeply nested value, and showed tokens and secrets), never an API token, a webhook secret or
a bearer credential, and never more than :data:`MAX_CHARS` characters per value."""

from __future__ import annotations

import logging
import re
import reprlib
import sys
import traceback
from collections.abc import MutableMapping
from typing import Any

import structlog

MAX_FRAMES = 12
"""Frames of a traceback kept (the innermost ones, where it failed)."""
MAX_CHARS = 4000
"""Characters of one logged value (a traceback included)."""

_SECRET = re.compile(r"(stw_|whsec_|Bearer\s+)[A-Za-z0-9+/=_.~-]+", re.IGNORECASE)
"""API tokens, webhook secrets and bearer credentials, wherever they appear in a message."""
_REPR = reprlib.Repr()
"""Shows a value that is not text briefly, at any size or depth."""
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 4, 200, 200


def redact(text: str) -> str:
    """``text`` cut to :data:`MAX_CHARS`, with every credential in it replaced by its kind."""
    if len(text) > MAX_CHARS:
        text = text[:MAX_CHARS] + f"... ({len(text) - MAX_CHARS} more characters)"
    return _SECRET.sub(lambda m: m.group(1) + "<redacted>", text)


def short_traceback(exc: BaseException) -> str:
    """``exc`` with the innermost :data:`MAX_FRAMES` frames of each exception in its chain (file,
    line, code: no locals), redacted and bounded."""
    return redact("".join(traceback.format_exception(exc, limit=-MAX_FRAMES)).rstrip())


def _bounded(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> Any:
    """A structlog processor: ``exc_info`` becomes a short traceback, every value bounded and
    redacted text."""
    exc_info = event.pop("exc_info", None)
    if exc_info:
        exc = sys.exc_info()[1] if exc_info is True else exc_info
        if isinstance(exc, tuple):
            exc = exc[1]
        if isinstance(exc, BaseException):
            event["exception"] = short_traceback(exc)
    for key, value in event.items():
        event[key] = redact(value if isinstance(value, str) else _REPR.repr(value))
    return event


def configure(level: str = "info") -> None:
    """Log records at ``level`` and above to whatever ``sys.stderr`` is at write time."""
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.dev.set_exc_info,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            _bounded,
            structlog.dev.ConsoleRenderer(colors=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.PrintLoggerFactory(_Stderr()),  # type: ignore[arg-type]
    )


class _Stderr:
    """Whatever ``sys.stderr`` is at write time (test runners swap and close it)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()
