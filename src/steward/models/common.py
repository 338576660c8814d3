"""Helpers the model adapters share: token estimates, error classification, TLS set-up.

Token estimates use the rough rule of four characters per token. They are used when a server
reports no usage (some local servers do not) and by :class:`~steward.models.scripted.ScriptedModel`,
so budgets still bite; they are deterministic, not accurate.
"""

from __future__ import annotations

import json
import math
import ssl
from collections.abc import Mapping, Sequence
from functools import cache

from steward.models.base import Message, Price, ToolCall, ToolSpec, Usage

CHARS_PER_TOKEN = 4
"""The estimate's ratio; close enough for English text and JSON to keep budgets meaningful."""

_OVERFLOW_CODES = {"context_length_exceeded", "exceed_context_size_error"}
_OVERFLOW_PHRASES = (
    "context length",
    "maximum context",
    "context window",
    "context size",
    "too many tokens",
    "prompt is too long",
)


def estimate_tokens(chars: int) -> int:
    """Tokens in ``chars`` characters of text: ``ceil(chars / 4)``."""
    return math.ceil(chars / CHARS_PER_TOKEN)


def _calls_chars(calls: Sequence[ToolCall]) -> int:
    return sum(len(c.name) + len(c.arguments) for c in calls)


def prompt_chars(messages: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> int:
    """Characters a prompt sends: message texts, earlier tool calls and the tool schemas."""
    chars = sum(len(m.content) + _calls_chars(m.tool_calls) for m in messages)
    for spec in tools:
        chars += len(spec.name) + len(spec.description)
        chars += len(json.dumps(spec.parameters, sort_keys=True))
    return chars


def completion_chars(content: str, tool_calls: Sequence[ToolCall] = ()) -> int:
    """Characters of an answer: its text and its tool calls."""
    return len(content) + _calls_chars(tool_calls)


def priced_usage(input_tokens: int, output_tokens: int, price: Price | None) -> Usage:
    """Usage with its cost from ``price`` (0 without a price)."""
    cost = price.cost(input_tokens, output_tokens) if price is not None else 0.0
    return Usage(input_tokens=input_tokens, output_tokens=output_tokens, cost_usd=cost)


def estimated_usage(
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    content: str,
    tool_calls: Sequence[ToolCall],
    price: Price | None,
) -> Usage:
    """Usage estimated from the characters of the prompt and of the answer."""
    return priced_usage(
        estimate_tokens(prompt_chars(messages, tools)),
        estimate_tokens(completion_chars(content, tool_calls)),
        price,
    )


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The server's requested delay, from ``retry-after-ms`` or a numeric ``retry-after``."""
    for header, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(header)
        if value is None:
            continue
        try:
            delay = float(value) / divisor
        except ValueError:
            continue  # an HTTP date: rare from model servers, and the runtime backs off anyway
        if math.isfinite(delay) and delay >= 0:
            return delay
    return None


def is_context_overflow(code: str | None, message: str) -> bool:
    """Whether a rejected request says the prompt does not fit the context window.

    Servers word it differently: OpenAI sends code ``context_length_exceeded``, vLLM "maximum
    context length", llama.cpp ``exceed_context_size_error``, Anthropic "prompt is too long".
    """
    if code in _OVERFLOW_CODES:
        return True
    lowered = message.lower()
    return any(phrase in lowered for phrase in _OVERFLOW_PHRASES)


@cache
def tls_context() -> ssl.SSLContext:
    """One TLS context for every client: loading the CA bundle costs ~40 ms, a client per call
    (what keeps adapters free of event-loop-bound state) then costs ~1 ms."""
    import httpx2  # the SDKs' HTTP client; imported here to keep this module light

    return httpx2.create_ssl_context()
