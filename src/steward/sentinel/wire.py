"""Secrets on the wire: which secrets a request's placeholders reference, the body with their
values substituted, and redaction of the HTTP libraries' log records while a request with
secrets is in flight (they print URLs and, at debug level, response headers). The
:class:`~steward.sentinel.egress.EgressBroker` decides where the values may go.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any

from steward.domain.secrets import placeholders_in, substitute
from steward.sentinel.vault import Redactor

HTTP_LOGGERS = tuple(
    f"{lib}.{part}" if part else lib
    for lib, parts in (("httpx", [""]), ("httpx2", [""]), ("httpcore", None), ("httpcore2", None))
    for part in parts or ("connection", "http11", "http2", "proxy", "socks")
)
"""Loggers whose records are redacted while a request with secrets is in flight."""


def referenced(
    url: str,
    headers: Mapping[str, str],
    content: str | bytes | None,
    body_json: Any,
    form: Mapping[str, str] | None,
) -> set[str]:
    """The names of the secrets a request's placeholders reference, wherever they are."""
    texts = [url, *headers.values(), *(form or {}).values()]
    if isinstance(content, bytes):
        texts.append(content.decode("utf-8", "surrogateescape"))
    elif content is not None:
        texts.append(content)
    texts += _strings(body_json)
    return {name for text in texts for name in placeholders_in(text)}


def _strings(value: Any) -> Iterator[str]:
    """Every string value in ``value`` (JSON-like)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _walk(value: Any, fn: Callable[[str], str]) -> Any:
    """``value`` (JSON-like) with ``fn`` applied to every string value."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, Mapping):
        return {k: _walk(v, fn) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_walk(v, fn) for v in value]
    return value


def filled_body(
    content: str | bytes | None,
    body_json: Any,
    form: Mapping[str, str] | None,
    values: Mapping[str, str],
) -> dict[str, Any]:
    """The request's body (at most one of ``content``, ``json`` and ``form``) with each secret's
    placeholder replaced by its value, as the HTTP client takes it."""
    if isinstance(content, bytes):
        text = content.decode("utf-8", "surrogateescape")
        return {"content": substitute(text, values).encode("utf-8", "surrogateescape")}
    if content is not None:
        return {"content": substitute(content, values)}
    if body_json is not None:
        return {"json": _walk(body_json, lambda s: substitute(s, values))}
    if form is not None:
        return {"data": {k: substitute(v, values) for k, v in form.items()}}
    return {}


IN_FLIGHT: ContextVar[Redactor | None] = ContextVar("steward_egress_redactor", default=None)
"""Redacts the secrets of the request in flight in this task, if one is."""


class _RedactingFilter(logging.Filter):
    """Redacts the records HTTP libraries log while a request with secrets is in flight in the
    same task (they log from the task that sends, so the context variable is visible)."""

    def filter(self, record: logging.LogRecord) -> bool:
        redactor = IN_FLIGHT.get()
        if redactor is not None:
            message = record.getMessage()
            clean = redactor.redact(message)
            if clean != message:
                record.msg, record.args = clean, None
        return True


_FILTER = _RedactingFilter()


def install_log_filter() -> None:
    """Redact :data:`HTTP_LOGGERS`' records while a request with secrets is in flight."""
    for name in HTTP_LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
