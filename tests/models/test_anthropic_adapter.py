"""AnthropicModel against a small fake Messages endpoint, over a real socket."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from steward.models import (
    ContextOverflow,
    Message,
    ModelAuthError,
    Price,
    ToolCall,
    ToolSpec,
    Usage,
)
from steward.models.anthropic import AnthropicModel
from steward.testing.model_server import serve_in_thread

KEY = "sk-ant-test"
LOOKUP = ToolSpec(
    name="lookup",
    description="Look a word up.",
    parameters={"type": "object", "properties": {"word": {"type": "string"}}},
)


class FakeMessagesAPI:
    """Answers text, or a tool_use block when tools are offered; records request bodies."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.app = FastAPI()
        self.app.post("/v1/messages")(self.messages)

    async def messages(self, request: Request) -> Response:
        # the SDK sends the key as a bearer token; older versions used x-api-key
        sent = {request.headers.get("x-api-key"), request.headers.get("authorization")}
        if not sent & {KEY, f"Bearer {KEY}"}:
            return _error(401, "authentication_error", "invalid x-api-key")
        body = await request.json()
        self.bodies.append(body)
        if body["messages"][-1]["content"] == "overflow":
            return _error(400, "invalid_request_error", "prompt is too long: 300000 tokens")
        if body.get("stream"):
            return StreamingResponse(
                _text_events("Streamed reply."), media_type="text/event-stream"
            )
        if body.get("tools"):
            block = {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"word": "x"}}
            return JSONResponse(_message([block], "tool_use"))
        return JSONResponse(_message([{"type": "text", "text": "Plain reply."}], "end_turn"))


def _error(status: int, kind: str, message: str) -> JSONResponse:
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return JSONResponse(body, status_code=status)


def _message(content: list[dict[str, Any]], stop_reason: str) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 20},
    }


async def _text_events(text: str) -> AsyncIterator[str]:
    start = _message([], "end_turn") | {"stop_reason": None}
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
    ]
    for piece in (text[:8], text[8:]):
        delta = {"type": "text_delta", "text": piece}
        events.append(
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
        )
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 20},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    for name, data in events:
        yield f"event: {name}\ndata: {json.dumps(data)}\n\n"


@pytest.fixture
def api() -> Iterator[tuple[FakeMessagesAPI, str]]:
    fake = FakeMessagesAPI()
    with serve_in_thread(fake.app) as url:
        yield fake, url


def model(url: str, **options: Any) -> AnthropicModel:
    options.setdefault("api_key", KEY)
    return AnthropicModel(name="claude-test", base_url=url, max_retries=0, **options)


async def test_text_answer_with_system_prompt(api: tuple[FakeMessagesAPI, str]) -> None:
    fake, url = api
    price = Price(input_per_mtok=3.0, output_per_mtok=15.0)
    conversation = [
        Message(role="system", content="Be brief."),
        Message(role="system", content="Answer in English."),
        Message(role="user", content="hello"),
    ]
    answer = await model(url, price=price, max_tokens=256).complete(conversation)
    assert (answer.content, answer.finish_reason, answer.model) == (
        "Plain reply.",
        "end_turn",
        "claude-test",
    )
    assert answer.usage == Usage(input_tokens=100, output_tokens=20, cost_usd=600 / 1e6)
    body = fake.bodies[0]
    assert body["system"] == "Be brief.\n\nAnswer in English."
    assert body["messages"] == [{"role": "user", "content": "hello"}]
    assert body["max_tokens"] == 256


async def test_tool_use_and_merged_tool_results(api: tuple[FakeMessagesAPI, str]) -> None:
    fake, url = api
    answer = await model(url).complete([Message(role="user", content="define x")], [LOOKUP])
    assert answer.tool_calls == (ToolCall(id="toolu_1", name="lookup", arguments='{"word": "x"}'),)
    assert fake.bodies[0]["tools"] == [
        {"name": "lookup", "description": "Look a word up.", "input_schema": LOOKUP.parameters}
    ]

    calls = (answer.tool_calls[0], ToolCall(id="toolu_2", name="lookup", arguments="{bad"))
    conversation = [
        Message(role="user", content="define x and y"),
        Message(role="assistant", tool_calls=calls),
        Message(role="tool", content="x: a letter", tool_call_id="toolu_1"),
        Message(role="tool", content="error: bad arguments", tool_call_id="toolu_2"),
    ]
    await model(url).complete(conversation)
    sent = fake.bodies[1]["messages"]
    assert sent[1] == {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"word": "x"}},
            {
                "type": "tool_use",
                "id": "toolu_2",
                "name": "lookup",
                "input": {"unparsed_arguments": "{bad"},
            },
        ],
    }
    assert sent[2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x: a letter"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "error: bad arguments"},
        ],
    }
    assert len(sent) == 3


async def test_streaming_passes_text_deltas_on(api: tuple[FakeMessagesAPI, str]) -> None:
    _, url = api
    pieces: list[str] = []

    async def collect(text: str) -> None:
        pieces.append(text)

    answer = await model(url).complete([Message(role="user", content="hi")], on_delta=collect)
    assert pieces == ["Streamed", " reply."]
    assert answer.content == "Streamed reply."
    assert answer.usage.output_tokens == 20


async def test_bad_key_is_an_auth_error(api: tuple[FakeMessagesAPI, str]) -> None:
    _, url = api
    with pytest.raises(ModelAuthError, match="STEWARD_MODEL_API_KEY"):
        await model(url, api_key="wrong").complete([Message(role="user", content="hi")])


async def test_prompt_too_long_is_a_context_overflow(api: tuple[FakeMessagesAPI, str]) -> None:
    _, url = api
    with pytest.raises(ContextOverflow, match="prompt is too long"):
        await model(url).complete([Message(role="user", content="overflow")])
