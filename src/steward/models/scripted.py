"""A deterministic model for tests, demos and simulations.

A :class:`ScriptedModel` answers from a script instead of a provider::

    model = ScriptedModel([
        call_tool("search", query="settlement bug"),
        say("Found two new reports."),
    ])

A list script answers in order (and fails loudly when exhausted, unless ``loop_last`` repeats
the last answer forever, for runaway-loop budget tests). An item may be a function of the
conversation; a whole script may be one function. Answers without usage get an estimate of four
characters per token, priced with ``price``, so budget tests are deterministic.

Tool calls made with :func:`call_tool` and friends get their ids when the model answers:
``call_<n>``, numbered after the tool calls already in the conversation, so ids are stable
across processes (a restarted worker replaying a conversation sees the same ids) and unique
within a conversation.

Scripts can also live in JSON files (see :func:`load_script`), e.g. for
``python -m steward.testing.model_server --script script.json``.
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from steward.errors import ConfigError
from steward.models.base import Message, ModelResponse, OnDelta, Price, ToolCall, ToolSpec
from steward.models.common import estimated_usage, priced_usage
from steward.models.errors import ModelError

ScriptFunction = Callable[
    [Sequence[Message], Sequence[ToolSpec]], ModelResponse | Awaitable[ModelResponse]
]
"""Computes an answer from the conversation and the offered tools."""

ScriptItem = ModelResponse | ScriptFunction
"""One answer of a list script: fixed, or computed from the conversation."""

_DELTA_CHUNKS = 3
"""Streamed text arrives in this many pieces (enough to show streaming works)."""


class ScriptedModel:
    """A :class:`~steward.models.base.Model` that answers from a script."""

    def __init__(
        self,
        script: Sequence[ScriptItem] | ScriptFunction,
        *,
        name: str = "scripted",
        price: Price | None = None,
        loop_last: bool = False,
    ) -> None:
        self.name = name
        """The model name, reported in every answer."""
        self.price = price
        """Prices the (estimated) usage; ``None`` costs nothing."""
        self.loop_last = loop_last
        """Repeat the last item forever instead of failing when the script runs out."""
        self.calls = 0
        """``complete()`` calls so far."""
        self.requests: list[tuple[list[Message], list[ToolSpec]]] = []
        """What it was asked, call by call."""
        self._function: ScriptFunction | None = None
        self._items: tuple[ScriptItem, ...] = ()
        if callable(script):
            self._function = script
        else:
            self._items = tuple(script)
        self._position = 0

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        on_delta: OnDelta | None = None,
    ) -> ModelResponse:
        self.calls += 1
        conversation, specs = list(messages), list(tools)
        self.requests.append((conversation, specs))
        item = self._next_item()
        if isinstance(item, ModelResponse):
            response = item
        else:
            answer = item(conversation, specs)
            response = await answer if inspect.isawaitable(answer) else answer
        response = self._complete_response(response, conversation, specs)
        if on_delta is not None:
            for chunk in text_chunks(response.content, _DELTA_CHUNKS):
                await on_delta(chunk)
        return response

    def _next_item(self) -> ScriptItem:
        if self._function is not None:
            return self._function
        if self._position < len(self._items):
            self._position += 1
            return self._items[self._position - 1]
        if self.loop_last and self._items:
            return self._items[-1]
        raise ModelError(f"scripted model: script exhausted after {len(self._items)} calls")

    def _complete_response(
        self, response: ModelResponse, messages: list[Message], tools: list[ToolSpec]
    ) -> ModelResponse:
        """Fill in what a script leaves out: call ids, usage, model name, finish reason."""
        earlier = sum(len(m.tool_calls) for m in messages)
        calls = tuple(
            call if call.id else replace(call, id=f"call_{earlier + i + 1}")
            for i, call in enumerate(response.tool_calls)
        )
        usage = response.usage
        if usage.total_tokens == 0:
            usage = estimated_usage(messages, tools, response.content, calls, self.price)
        elif usage.cost_usd == 0.0 and self.price is not None:
            usage = priced_usage(usage.input_tokens, usage.output_tokens, self.price)
        return replace(
            response,
            tool_calls=calls,
            usage=usage,
            model=response.model or self.name,
            finish_reason=response.finish_reason or ("tool_calls" if calls else "stop"),
        )


def text_chunks(text: str, pieces: int) -> list[str]:
    """``text`` cut into at most ``pieces`` consecutive non-empty parts."""
    if not text:
        return []
    size = math.ceil(len(text) / pieces)
    return [text[i : i + size] for i in range(0, len(text), size)]


# --- building answers ----------------------------------------------------------------------


def say(text: str) -> ModelResponse:
    """An answer that is only text."""
    return ModelResponse(content=text, finish_reason="stop")


def call_tool(name: str, _id: str | None = None, /, **arguments: Any) -> ModelResponse:
    """An answer calling one tool with ``arguments`` (JSON-encoded). Without ``_id`` the model
    numbers the call when it answers (``call_<n>``). ``name`` and ``_id`` are positional, so a
    tool may have an argument called ``name``."""
    call = ToolCall(id=_id or "", name=name, arguments=json.dumps(arguments))
    return ModelResponse(tool_calls=(call,), finish_reason="tool_calls")


def call_tools(*calls: tuple[str, dict[str, Any]]) -> ModelResponse:
    """An answer calling several tools at once, given as ``(name, arguments)`` pairs."""
    return ModelResponse(
        tool_calls=tuple(
            ToolCall(id="", name=name, arguments=json.dumps(arguments)) for name, arguments in calls
        ),
        finish_reason="tool_calls",
    )


def raw_call(name: str, arguments_text: str) -> ModelResponse:
    """An answer calling a tool with arguments exactly as given (e.g. malformed JSON)."""
    call = ToolCall(id="", name=name, arguments=arguments_text)
    return ModelResponse(tool_calls=(call,), finish_reason="tool_calls")


def load_script(path: str | Path) -> list[ModelResponse]:
    """Read a script from a JSON file: a list of answers, each one of

    * ``{"say": "text"}``
    * ``{"call": "tool_name", "arguments": {...}}`` (``arguments`` optional)
    * ``{"calls": [["tool_name", {...}], ...]}``
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read script {path}: {exc}") from exc
    if not isinstance(data, list):
        raise ConfigError(f"script {path}: expected a JSON list of answers")
    return [_script_item(path, i, item) for i, item in enumerate(data)]


def _script_item(path: Path, index: int, item: Any) -> ModelResponse:
    where = f"script {path}, item {index}"
    kinds = {"say", "call", "calls"} & set(item) if isinstance(item, dict) else set()
    if len(kinds) != 1:
        raise ConfigError(f'{where}: expected an object with one of "say", "call" or "calls"')
    if "say" in kinds:
        if not isinstance(item["say"], str):
            raise ConfigError(f'{where}: "say" must be a string')
        return say(item["say"])
    if "call" in kinds:
        arguments = item.get("arguments", {})
        if not isinstance(item["call"], str) or not isinstance(arguments, dict):
            raise ConfigError(f'{where}: "call" must be a tool name, "arguments" an object')
        return call_tools((item["call"], arguments))
    calls = item["calls"]
    if not isinstance(calls, list) or not all(_is_call_pair(c) for c in calls):
        raise ConfigError(f'{where}: "calls" must be a list of [tool_name, {{arguments}}] pairs')
    return call_tools(*((name, arguments) for name, arguments in calls))


def _is_call_pair(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and isinstance(value[0], str)
        and isinstance(value[1], dict)
    )
