"""Any OpenAI-compatible chat completions endpoint: hosted OpenAI, Ollama, vLLM, llama.cpp...

Built on the official ``openai`` SDK, which retries rate limits, timeouts, 5xx answers and
connection errors with backoff (honouring ``Retry-After``). When its retries are spent the
adapter raises :class:`~steward.errors.RetryLater` and the runtime retries the step later.
A refused key, an unknown model and an overflowing context raise their specific errors at once.

Usage comes from the server; servers that report none get an estimate of four characters per
token (see :mod:`steward.models.common`), so budgets still apply.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import openai
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionAssistantMessageParam,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionMessageParam,
)

from steward.errors import RetryLater
from steward.models.base import Message, ModelResponse, OnDelta, Price, ToolCall, ToolSpec, Usage
from steward.models.common import (
    estimated_usage,
    is_context_overflow,
    priced_usage,
    retry_after_seconds,
    tls_context,
)
from steward.models.errors import ContextOverflow, ModelAuthError, ModelError, UnknownModel

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_TRANSIENT_STATUSES = {408, 409, 429}
"""Besides 5xx: what the SDK itself retries, so still transient once its retries are spent."""


class OpenAIModel:
    """A chat model behind an OpenAI-compatible endpoint."""

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
    ) -> None:
        self.name = name
        """Model name as the endpoint knows it."""
        self.base_url = base_url
        """Endpoint, e.g. ``http://localhost:11434/v1``; ``None`` is the SDK's default
        (``$OPENAI_BASE_URL`` or OpenAI's API)."""
        self.price = price
        """Prices each call; ``None`` costs nothing (e.g. a local model)."""
        self.max_retries = max_retries
        """Retries the SDK makes for transient trouble before :class:`RetryLater`."""
        self.timeout_seconds = timeout_seconds
        """Per-request timeout."""
        self.stream = stream
        """Stream answers even without ``on_delta`` (they stream whenever it is given)."""
        self._api_key = api_key

    @property
    def endpoint(self) -> str:
        """The base URL the SDK uses, for messages."""
        return self.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        on_delta: OnDelta | None = None,
    ) -> ModelResponse:
        try:
            # A client per call: nothing bound to one event loop outlives the call, and with the
            # shared TLS context a client costs about a millisecond.
            async with self._client() as client:
                if self.stream or on_delta is not None:
                    return await self._streamed(client, messages, tools, on_delta)
                completion = await client.chat.completions.create(
                    model=self.name,
                    messages=to_openai_messages(messages),
                    tools=to_openai_tools(tools) if tools else openai.omit,
                )
                return self._from_completion(completion, messages, tools)
        except openai.OpenAIError as exc:
            raise self._translate(exc) from exc

    async def _streamed(
        self,
        client: openai.AsyncOpenAI,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        on_delta: OnDelta | None,
    ) -> ModelResponse:
        content: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        finish_reason = ""
        model = self.name
        usage: Usage | None = None
        stream = await client.chat.completions.create(
            model=self.name,
            messages=to_openai_messages(messages),
            tools=to_openai_tools(tools) if tools else openai.omit,
            stream=True,
            stream_options={"include_usage": True},
        )
        async with stream:
            async for chunk in stream:
                model = chunk.model or model
                if chunk.usage is not None:
                    usage = priced_usage(
                        chunk.usage.prompt_tokens, chunk.usage.completion_tokens, self.price
                    )
                for choice in chunk.choices[:1]:
                    finish_reason = choice.finish_reason or finish_reason
                    delta = choice.delta
                    if delta.content:
                        content.append(delta.content)
                        if on_delta is not None:
                            await on_delta(delta.content)
                    # A call arrives in pieces keyed by index: id and name first, then the
                    # arguments text in fragments.
                    for piece in delta.tool_calls or ():
                        call = calls.setdefault(piece.index, {"id": "", "name": "", "args": ""})
                        call["id"] = piece.id or call["id"]
                        if piece.function is not None:
                            call["name"] += piece.function.name or ""
                            call["args"] += piece.function.arguments or ""
        tool_calls = tuple(
            ToolCall(id=c["id"], name=c["name"], arguments=c["args"])
            for _, c in sorted(calls.items())
        )
        text = "".join(content)
        return ModelResponse(
            content=text,
            tool_calls=tool_calls,
            usage=usage or estimated_usage(messages, tools, text, tool_calls, self.price),
            model=model,
            finish_reason=finish_reason,
        )

    def _from_completion(
        self, completion: ChatCompletion, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> ModelResponse:
        if not completion.choices:
            raise ModelError(f"model {self.name}: {self.endpoint} answered without a choice")
        choice = completion.choices[0]
        text = choice.message.content or ""
        tool_calls = tuple(
            ToolCall(id=c.id, name=c.function.name, arguments=c.function.arguments)
            for c in choice.message.tool_calls or ()
            if isinstance(c, ChatCompletionMessageFunctionToolCall)
        )
        if completion.usage is not None:
            usage = priced_usage(
                completion.usage.prompt_tokens, completion.usage.completion_tokens, self.price
            )
        else:
            usage = estimated_usage(messages, tools, text, tool_calls, self.price)
        return ModelResponse(
            content=text,
            tool_calls=tool_calls,
            usage=usage,
            model=completion.model or self.name,
            # typed as always set, yet some local servers send null
            finish_reason=getattr(choice, "finish_reason", None) or "",
        )

    async def list_models(self) -> list[str]:
        """The model names the endpoint serves (``GET /models``), for a live check."""
        try:
            async with self._client() as client:
                return [m.id async for m in client.models.list()]
        except openai.OpenAIError as exc:
            raise self._translate(exc) from exc

    def _client(self) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=self._api_key,
            max_retries=self.max_retries,
            timeout=self.timeout_seconds,
            http_client=openai.DefaultAsyncHttpxClient(verify=tls_context()),
        )

    def _translate(self, exc: openai.OpenAIError) -> Exception:
        """Map an SDK error onto Steward's (the SDK has already retried what was transient)."""
        prefix = f"model {self.name}"
        if isinstance(exc, openai.APIStatusError):
            status, detail = exc.status_code, _server_message(exc.body, exc.message)
            if status in (401, 403):
                return ModelAuthError(
                    f"{prefix}: {self.endpoint} refused the API key ({detail}); set "
                    "STEWARD_MODEL_API_KEY to a valid key for this endpoint"
                )
            if status == 404:
                return UnknownModel(
                    f"{prefix}: {self.endpoint} does not serve a model named {self.name!r} "
                    f"({detail}); check the model name, and that the base URL is the API root "
                    "(OpenAI-compatible servers usually end in /v1)"
                )
            if status in (400, 413) and is_context_overflow(exc.code, detail):
                return ContextOverflow(f"{prefix}: the prompt exceeds its context ({detail})")
            if status in _TRANSIENT_STATUSES or status >= 500:
                return RetryLater(
                    f"{prefix}: HTTP {status} from {self.endpoint}: {detail}",
                    delay_seconds=retry_after_seconds(exc.response.headers),
                )
            return ModelError(f"{prefix}: HTTP {status} from {self.endpoint}: {detail}")
        if isinstance(exc, openai.APITimeoutError):
            return RetryLater(f"{prefix}: {self.endpoint} timed out")
        if isinstance(exc, openai.APIConnectionError):
            return RetryLater(f"{prefix}: cannot reach {self.endpoint}: {exc.__cause__ or exc}")
        if isinstance(exc, openai.APIError):
            # An error event inside a stream: the server gave up after it had answered 200.
            detail = _server_message(exc.body, exc.message)
            if is_context_overflow(exc.code, detail):
                return ContextOverflow(f"{prefix}: the prompt exceeds its context ({detail})")
            return ModelError(f"{prefix}: {self.endpoint} failed mid-answer: {detail}")
        # Raised before any request, e.g. when no API key is configured at all.
        return ModelAuthError(f"{prefix}: {exc}; set STEWARD_MODEL_API_KEY")


def _server_message(body: object, fallback: str) -> str:
    """The server's own words: ``error.message`` of an OpenAI-style body, or the raw body."""
    if isinstance(body, dict):
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
    if isinstance(body, str) and body:
        return body
    return fallback


def to_openai_messages(messages: Sequence[Message]) -> list[ChatCompletionMessageParam]:
    """Our messages as chat completions messages."""
    result: list[ChatCompletionMessageParam] = []
    for m in messages:
        if m.role == "system":
            result.append({"role": "system", "content": m.content})
        elif m.role == "user":
            result.append({"role": "user", "content": m.content})
        elif m.role == "tool":
            result.append(
                {"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.content}
            )
        else:
            result.append(_assistant_message(m))
    return result


def _assistant_message(m: Message) -> ChatCompletionAssistantMessageParam:
    # A tool-calling turn without text sends null content: some servers reject "" with calls.
    param: ChatCompletionAssistantMessageParam = {
        "role": "assistant",
        "content": m.content if m.content or not m.tool_calls else None,
    }
    if m.tool_calls:
        calls: list[ChatCompletionMessageFunctionToolCallParam] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in m.tool_calls
        ]
        param["tool_calls"] = calls
    return param


def to_openai_tools(tools: Sequence[ToolSpec]) -> list[ChatCompletionFunctionToolParam]:
    """Our tool specs as function tools."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
            },
        }
        for t in tools
    ]
