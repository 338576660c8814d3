"""Anthropic's Messages API, on the official ``anthropic`` SDK (an optional extra).

Install with ``pip install 'steward[anthropic]'``; the SDK is imported only when this adapter is
used. The mapping: system messages go to ``system=``, tool calls become ``tool_use`` blocks,
and consecutive tool results one user message of ``tool_result`` blocks. Errors map as for
:mod:`steward.models.openai_compat`: the SDK retries what is transient, then
:class:`~steward.errors.RetryLater`. Cache reads and writes count as input tokens (priced at the
input rate, which overstates the cost of cache hits).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from steward.errors import ConfigError, RetryLater
from steward.models.base import Message, ModelResponse, OnDelta, Price, ToolCall, ToolSpec
from steward.models.common import (
    is_context_overflow,
    priced_usage,
    retry_after_seconds,
    tls_context,
)
from steward.models.errors import ContextOverflow, ModelAuthError, ModelError, UnknownModel

if TYPE_CHECKING:
    import anthropic
    from anthropic.types import (
        MessageParam,
        TextBlockParam,
        ToolParam,
        ToolResultBlockParam,
        ToolUseBlockParam,
    )

DEFAULT_BASE_URL = "https://api.anthropic.com"
_TRANSIENT_TYPES = {"rate_limit_error", "overloaded_error", "api_error", "timeout_error"}
"""Error types that are worth retrying later (also sent as error events inside a stream)."""


def _require_sdk() -> None:
    try:
        import anthropic  # noqa: F401
    except ImportError as exc:
        raise ConfigError(
            "the anthropic provider needs the anthropic SDK: pip install 'steward[anthropic]'"
        ) from exc


class AnthropicModel:
    """A Claude model behind the Anthropic Messages API."""

    def __init__(
        self,
        *,
        name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        price: Price | None = None,
        max_retries: int = 3,
        timeout_seconds: float = 120.0,
        stream: bool = False,
        max_tokens: int = 4096,
    ) -> None:
        _require_sdk()
        self.name = name
        """Model name, e.g. ``claude-sonnet-4-5``."""
        self.base_url = base_url
        """Endpoint; ``None`` is the SDK's default (``$ANTHROPIC_BASE_URL`` or Anthropic's)."""
        self.price = price
        """Prices each call; ``None`` costs nothing."""
        self.max_retries = max_retries
        """Retries the SDK makes for transient trouble before :class:`RetryLater`."""
        self.timeout_seconds = timeout_seconds
        """Per-request timeout."""
        self.stream = stream
        """Stream answers even without ``on_delta`` (they stream whenever it is given)."""
        self.max_tokens = max_tokens
        """Upper bound of one answer's length (the API requires one)."""
        self._api_key = api_key

    @property
    def endpoint(self) -> str:
        """The base URL the SDK uses, for messages."""
        return self.base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        on_delta: OnDelta | None = None,
    ) -> ModelResponse:
        import anthropic

        system, conversation = to_anthropic_messages(messages)
        answer: anthropic.types.Message
        try:
            # A client per call, as in the OpenAI adapter: no state bound to an event loop.
            async with self._client() as client:
                if self.stream or on_delta is not None:
                    async with client.messages.stream(
                        model=self.name,
                        max_tokens=self.max_tokens,
                        messages=conversation,
                        system=system or anthropic.omit,
                        tools=to_anthropic_tools(tools) if tools else anthropic.omit,
                    ) as stream:
                        async for text in stream.text_stream:
                            if on_delta is not None:
                                await on_delta(text)
                        answer = await stream.get_final_message()
                else:
                    answer = await client.messages.create(
                        model=self.name,
                        max_tokens=self.max_tokens,
                        messages=conversation,
                        system=system or anthropic.omit,
                        tools=to_anthropic_tools(tools) if tools else anthropic.omit,
                    )
        except anthropic.AnthropicError as exc:
            raise self._translate(exc) from exc
        return self._from_message(answer)

    async def list_models(self) -> list[str]:
        """The model names the endpoint serves (``GET /v1/models``), for a live check."""
        import anthropic

        try:
            async with self._client() as client:
                return [m.id async for m in client.models.list()]
        except anthropic.AnthropicError as exc:
            raise self._translate(exc) from exc

    def _client(self) -> anthropic.AsyncAnthropic:
        import anthropic

        return anthropic.AsyncAnthropic(
            base_url=self.base_url,
            api_key=self._api_key,
            max_retries=self.max_retries,
            timeout=self.timeout_seconds,
            http_client=anthropic.DefaultAsyncHttpxClient(verify=tls_context()),
        )

    def _from_message(self, answer: anthropic.types.Message) -> ModelResponse:
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in answer.content:
            if block.type == "text":
                texts.append(block.text)
            elif block.type == "tool_use":
                calls.append(
                    ToolCall(id=block.id, name=block.name, arguments=json.dumps(block.input))
                )
        usage = answer.usage
        input_tokens = (
            usage.input_tokens
            + (usage.cache_creation_input_tokens or 0)
            + (usage.cache_read_input_tokens or 0)
        )
        return ModelResponse(
            content="".join(texts),
            tool_calls=tuple(calls),
            usage=priced_usage(input_tokens, usage.output_tokens, self.price),
            model=answer.model or self.name,
            finish_reason=answer.stop_reason or "",
        )

    def _translate(self, exc: anthropic.AnthropicError) -> Exception:
        """Map an SDK error onto Steward's (the SDK has already retried what was transient)."""
        import anthropic

        prefix = f"model {self.name}"
        if isinstance(exc, anthropic.APIStatusError):
            status, kind = exc.status_code, exc.type
            detail = exc.api_message or exc.message
            if status in (401, 403) or kind in ("authentication_error", "permission_error"):
                return ModelAuthError(
                    f"{prefix}: {self.endpoint} refused the API key ({detail}); set "
                    "STEWARD_MODEL_API_KEY to a valid Anthropic API key"
                )
            if status == 404 or kind == "not_found_error":
                return UnknownModel(
                    f"{prefix}: {self.endpoint} does not serve a model named {self.name!r} "
                    f"({detail}); check the model name"
                )
            if kind == "invalid_request_error" and is_context_overflow(exc.error_code, detail):
                return ContextOverflow(f"{prefix}: the prompt exceeds its context ({detail})")
            if status in (408, 409, 429) or status >= 500 or kind in _TRANSIENT_TYPES:
                return RetryLater(
                    f"{prefix}: {kind or f'HTTP {status}'} from {self.endpoint}: {detail}",
                    delay_seconds=retry_after_seconds(exc.response.headers),
                )
            return ModelError(f"{prefix}: HTTP {status} from {self.endpoint}: {detail}")
        if isinstance(exc, anthropic.APITimeoutError):
            return RetryLater(f"{prefix}: {self.endpoint} timed out")
        if isinstance(exc, anthropic.APIConnectionError):
            return RetryLater(f"{prefix}: cannot reach {self.endpoint}: {exc.__cause__ or exc}")
        if isinstance(exc, anthropic.CredentialsError):
            return ModelAuthError(f"{prefix}: {exc}; set STEWARD_MODEL_API_KEY")
        return ModelError(f"{prefix}: {exc}")


def to_anthropic_messages(messages: Sequence[Message]) -> tuple[str, list[MessageParam]]:
    """Our messages as ``(system, messages)`` for the Messages API."""
    system: list[str] = []
    result: list[MessageParam] = []
    results: list[ToolResultBlockParam] | None = None  # the open user turn of tool results
    for m in messages:
        if m.role == "system":
            system.append(m.content)
            continue
        if m.role == "tool":
            if results is None:
                results = []
                result.append({"role": "user", "content": results})
            results.append(
                {"type": "tool_result", "tool_use_id": m.tool_call_id or "", "content": m.content}
            )
            continue
        results = None
        if m.role == "user":
            result.append({"role": "user", "content": m.content})
        else:
            result.append({"role": "assistant", "content": _assistant_blocks(m) or m.content})
    return "\n\n".join(s for s in system if s), result


def _assistant_blocks(m: Message) -> list[TextBlockParam | ToolUseBlockParam]:
    # The API rejects empty text blocks, so a call-only turn has just its tool_use blocks.
    blocks: list[TextBlockParam | ToolUseBlockParam] = []
    if m.content:
        blocks.append({"type": "text", "text": m.content})
    for call in m.tool_calls:
        blocks.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": _call_input(call)}
        )
    return blocks


def _call_input(call: ToolCall) -> dict[str, object]:
    """A call's arguments as the object the API requires; text that is not a JSON object (a
    malformed call, which the harness already answered with an error) is kept under a key."""
    try:
        value: Any = json.loads(call.arguments)
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {"unparsed_arguments": call.arguments}


def to_anthropic_tools(tools: Sequence[ToolSpec]) -> list[ToolParam]:
    """Our tool specs as Anthropic tools."""
    return [
        {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
    ]
