"""OpenAIModel against the scripted OpenAI-compatible server, over a real socket."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from steward.errors import RetryLater
from steward.models import (
    ContextOverflow,
    Message,
    ModelAuthError,
    ModelError,
    OpenAIModel,
    Price,
    ScriptedModel,
    ToolSpec,
    UnknownModel,
    Usage,
    call_tool,
    call_tools,
    say,
)
from steward.testing.model_server import ModelServer, run_model_server
from support.startup import scaled

SYSTEM = Message(role="system", content="You are terse.")
USER = Message(role="user", content="x" * 40)
SEARCH = ToolSpec(
    name="search",
    description="Search the web.",
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["query"],
    },
)
PRICE = Price(input_per_mtok=2.0, output_per_mtok=8.0)


@pytest.fixture
def server() -> Iterator[ModelServer]:
    """Serves an empty script; tests load theirs into ``server.model``."""
    with run_model_server(ScriptedModel([])) as running:
        yield running


def script(server: ModelServer, *answers: Any, **options: Any) -> None:
    server.model = ScriptedModel(list(answers), **options)


def client(server: ModelServer, **options: Any) -> OpenAIModel:
    options.setdefault("api_key", server.api_key)
    return OpenAIModel(name="scripted", base_url=server.url, **options)


async def test_plain_text_answer(server: ModelServer) -> None:
    script(server, say("Hello."))
    answer = await client(server).complete([SYSTEM, USER])
    assert (answer.content, answer.tool_calls) == ("Hello.", ())
    assert (answer.model, answer.finish_reason) == ("scripted", "stop")
    assert server.model.requests == [([SYSTEM, USER], [])]


async def test_tool_call_and_its_result_round_trip(server: ModelServer) -> None:
    script(server, call_tool("search", query="settlement bug", limit=3), say("Two reports."))
    model = client(server)
    first = await model.complete([USER], [SEARCH])
    (call,) = first.tool_calls
    assert (call.id, call.name) == ("call_1", "search")
    assert json.loads(call.arguments) == {"query": "settlement bug", "limit": 3}
    assert first.finish_reason == "tool_calls"

    conversation = [
        USER,
        first.message,
        Message(role="tool", content="report 1, report 2", tool_call_id="call_1"),
    ]
    second = await model.complete(conversation, [SEARCH])
    assert second.content == "Two reports."
    # what the server decoded is exactly what was sent: messages, calls and tool schemas
    assert server.model.requests[1] == (conversation, [SEARCH])


async def test_streaming_passes_text_deltas_on(server: ModelServer) -> None:
    script(server, say("A streamed answer, in pieces."))
    pieces: list[str] = []

    async def collect(text: str) -> None:
        pieces.append(text)

    answer = await client(server).complete([USER], on_delta=collect)
    assert len(pieces) > 1
    assert "".join(pieces) == answer.content == "A streamed answer, in pieces."
    assert answer.finish_reason == "stop"


async def test_streamed_tool_calls_are_assembled(server: ModelServer) -> None:
    script(server, call_tools(("search", {"query": "a" * 30}), ("search", {"query": "b"})))
    answer = await client(server, stream=True).complete([USER], [SEARCH])
    assert [(c.id, c.name, json.loads(c.arguments)) for c in answer.tool_calls] == [
        ("call_1", "search", {"query": "a" * 30}),
        ("call_2", "search", {"query": "b"}),
    ]
    assert answer.finish_reason == "tool_calls"


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("report_usage", [True, False], ids=["reported", "estimated"])
async def test_usage_and_cost(server: ModelServer, stream: bool, report_usage: bool) -> None:
    """Reported usage is priced; without it the adapter estimates the same 4 chars/token."""
    script(server, say("y" * 9))
    server.report_usage = report_usage
    answer = await client(server, price=PRICE, stream=stream).complete([USER])
    # 40 prompt chars -> 10 tokens, 9 answer chars -> 3 tokens
    assert answer.usage == Usage(input_tokens=10, output_tokens=3, cost_usd=(20 + 24) / 1e6)


async def test_no_price_costs_nothing(server: ModelServer) -> None:
    script(server, say("free"))
    answer = await client(server).complete([USER])
    assert answer.usage.cost_usd == 0.0
    assert answer.usage.input_tokens == 10


async def test_bad_key_is_an_auth_error_naming_the_endpoint(server: ModelServer) -> None:
    script(server, say("never"))
    with pytest.raises(ModelAuthError) as caught:
        await client(server, api_key="wrong").complete([USER])
    assert server.url in str(caught.value)
    assert "STEWARD_MODEL_API_KEY" in str(caught.value)
    assert server.requests == 1  # not retried
    assert server.model.calls == 0


async def test_unknown_model_names_model_and_endpoint(server: ModelServer) -> None:
    model = OpenAIModel(name="no-such-model", base_url=server.url, api_key=server.api_key)
    with pytest.raises(UnknownModel) as caught:
        await model.complete([USER])
    assert "'no-such-model'" in str(caught.value)
    assert server.url in str(caught.value)


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("context_length_exceeded", "Too long."),
        (None, "This model's maximum context length is 8192 tokens, you requested 9000."),
    ],
)
async def test_context_overflow(server: ModelServer, code: str | None, message: str) -> None:
    server.fail_next(400, code=code, message=message)
    with pytest.raises(ContextOverflow):
        await client(server).complete([USER])
    assert server.requests == 1


async def test_other_client_errors_carry_the_servers_message(server: ModelServer) -> None:
    server.fail_next(422, message="tools[0].parameters is not a valid schema")
    with pytest.raises(ModelError, match="not a valid schema"):
        await client(server).complete([USER])


async def test_rate_limit_once_is_retried_by_the_sdk(server: ModelServer) -> None:
    script(server, say("after the wait"))
    server.fail_next(429, retry_after=0.01)
    answer = await client(server, max_retries=2).complete([USER])
    assert answer.content == "after the wait"
    assert server.requests == 2


@pytest.mark.parametrize("status", [429, 503])
async def test_persistent_trouble_becomes_retry_later(server: ModelServer, status: int) -> None:
    server.fail_next(status, retry_after=0.01, times=10)
    with pytest.raises(RetryLater) as caught:
        await client(server, max_retries=2).complete([USER])
    assert caught.value.delay_seconds == pytest.approx(0.01)
    assert f"HTTP {status}" in caught.value.reason
    assert server.requests == 3  # the first try and two retries


async def test_unreachable_endpoint_becomes_retry_later() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    model = OpenAIModel(name="m", base_url=url, api_key="k", max_retries=0)
    with pytest.raises(RetryLater, match="cannot reach"):
        await model.complete([USER])


async def test_exhausted_script_is_a_model_error(server: ModelServer) -> None:
    with pytest.raises(ModelError, match="script exhausted after 0 calls"):
        await client(server).complete([USER])


async def test_models_endpoint_lists_served_models() -> None:
    with run_model_server(ScriptedModel([]), served_models=["a", "b"]) as server:
        async with httpx.AsyncClient() as http:
            listing = (await http.get(f"{server.url}/models")).json()
    assert [m["id"] for m in listing["data"]] == ["a", "b"]


CHILD = """
import asyncio, sys
from steward.models import Message, OpenAIModel
model = OpenAIModel(name="scripted", base_url=sys.argv[1], api_key="test-key")
print(asyncio.run(model.complete([Message(role="user", content="hi")])).content)
"""


def test_serves_other_processes() -> None:
    with run_model_server(ScriptedModel([say("from the thread")])) as server:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, server.url],
            capture_output=True,
            text=True,
            timeout=scaled(30),
        )
        assert done.stdout.strip() == "from the thread", done.stderr
        assert server.requests == 1


def test_cli_serves_a_script_until_interrupted(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps([{"say": "scripted hello"}]))
    command = [sys.executable, "-m", "steward.testing.model_server", "--script", str(path)]
    command += ["--port", "0", "--api-key", "demo"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as cli:
        try:
            assert cli.stdout is not None
            url = cli.stdout.readline().split(" at ")[1].split()[0]
            reply = httpx.post(
                f"{url}/chat/completions",
                headers={"Authorization": "Bearer demo"},
                json={"model": "scripted", "messages": [{"role": "user", "content": "hi"}]},
            )
            assert reply.json()["choices"][0]["message"]["content"] == "scripted hello"
        finally:
            cli.send_signal(signal.SIGINT)
            _, errors = cli.communicate(timeout=scaled(10))
    assert cli.returncode == 0, errors
