"""ScriptedModel: order, exhaustion, looping, function scripts, ids, usage, JSON scripts."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from steward.errors import ConfigError
from steward.models import (
    Message,
    ModelError,
    ModelResponse,
    Price,
    ScriptedModel,
    ToolSpec,
    Usage,
    call_tool,
    call_tools,
    load_script,
    raw_call,
    say,
)

USER = Message(role="user", content="x" * 40)  # 10 estimated tokens
SEARCH = ToolSpec(
    name="search",
    description="Search the web.",
    parameters={"type": "object", "properties": {"query": {"type": "string"}}},
)


async def test_list_script_answers_in_order_then_fails() -> None:
    model = ScriptedModel([say("one"), say("two")])
    assert (await model.complete([USER])).content == "one"
    assert (await model.complete([USER], [SEARCH])).content == "two"
    with pytest.raises(ModelError, match="script exhausted after 2 calls"):
        await model.complete([USER])
    assert model.calls == 3
    assert model.requests[1] == ([USER], [SEARCH])


async def test_loop_last_repeats_the_last_answer_forever() -> None:
    model = ScriptedModel([say("first"), call_tool("search", query="again")], loop_last=True)
    answers = [await model.complete([USER]) for _ in range(5)]
    assert answers[0].content == "first"
    assert {a.tool_calls[0].arguments for a in answers[1:]} == {'{"query": "again"}'}


async def test_function_script_sees_the_conversation() -> None:
    def echo(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
        return say(f"{len(messages)} messages, tools: {[t.name for t in tools]}")

    model = ScriptedModel(echo)
    answer = await model.complete([USER, USER], [SEARCH])
    assert answer.content == "2 messages, tools: ['search']"
    assert model.calls == 1


async def test_items_may_be_async_functions() -> None:
    async def last_word(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
        return say(messages[-1].content.split()[-1])

    model = ScriptedModel([say("hi"), last_word])
    await model.complete([USER])
    answer = await model.complete([Message(role="user", content="say the last word")])
    assert answer.content == "word"


async def test_call_ids_follow_the_calls_already_in_the_conversation() -> None:
    model = ScriptedModel(
        [call_tool("search", query="a"), call_tools(("search", {}), ("read", {"url": "u"}))]
    )
    first = await model.complete([USER])
    assert [c.id for c in first.tool_calls] == ["call_1"]
    observation = Message(role="tool", content="found", tool_call_id="call_1")
    second = await model.complete([USER, first.message, observation])
    assert [(c.id, c.name) for c in second.tool_calls] == [("call_2", "search"), ("call_3", "read")]
    assert second.finish_reason == "tool_calls"


def test_call_tool_arguments_may_be_named_like_its_parameters() -> None:
    answer = call_tool("rename", "fixed-id", name="new name", _id="x")
    (call,) = answer.tool_calls
    assert call.id == "fixed-id"
    assert json.loads(call.arguments) == {"name": "new name", "_id": "x"}


async def test_raw_call_keeps_malformed_arguments() -> None:
    answer = await ScriptedModel([raw_call("search", '{"query": ')]).complete([USER])
    assert answer.tool_calls[0].arguments == '{"query": '


async def test_usage_is_estimated_and_priced_deterministically() -> None:
    price = Price(input_per_mtok=3.0, output_per_mtok=15.0)
    model = ScriptedModel([say("y" * 9), say("z")], price=price)
    answer = await model.complete([USER])
    # 40 prompt chars -> 10 tokens; 9 answer chars -> ceil(9/4) = 3 tokens
    assert answer.usage == Usage(input_tokens=10, output_tokens=3, cost_usd=(30 + 45) / 1e6)
    with_tools = await model.complete([USER], [SEARCH])
    schema_chars = len("search") + len("Search the web.")
    schema_chars += len(json.dumps(SEARCH.parameters, sort_keys=True))
    assert with_tools.usage.input_tokens == -(-(40 + schema_chars) // 4)
    assert answer.model == "scripted"


async def test_given_usage_is_kept_and_priced() -> None:
    given = ModelResponse(content="ok", usage=Usage(input_tokens=1000, output_tokens=10))
    price = Price(input_per_mtok=1.0, output_per_mtok=2.0)
    answer = await ScriptedModel([given], price=price, name="m").complete([USER])
    assert answer.usage == Usage(input_tokens=1000, output_tokens=10, cost_usd=1020 / 1e6)
    assert (answer.model, answer.finish_reason) == ("m", "stop")


async def test_on_delta_gets_the_text_in_pieces() -> None:
    pieces: list[str] = []

    async def collect(text: str) -> None:
        pieces.append(text)

    await ScriptedModel([say("a streamed answer")]).complete([USER], on_delta=collect)
    assert len(pieces) > 1
    assert "".join(pieces) == "a streamed answer"


def test_load_script_reads_all_three_forms(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    items = [
        {"say": "hello"},
        {"call": "search", "arguments": {"query": "q"}},
        {"call": "now"},
        {"calls": [["a", {"x": 1}], ["b", {}]]},
    ]
    path.write_text(json.dumps(items))
    script = load_script(path)
    assert script[0] == say("hello")
    assert [(c.name, json.loads(c.arguments)) for c in script[1].tool_calls] == [
        ("search", {"query": "q"})
    ]
    assert script[2].tool_calls[0].arguments == "{}"
    assert [c.name for c in script[3].tool_calls] == ["a", "b"]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"say": "not a list"}', "expected a JSON list"),
        ('[{"say": "ok"}, {"shout": "no"}]', "item 1: expected an object with one of"),
        ('[{"say": "x", "call": "y"}]', "item 0: expected an object with one of"),
        ('[{"call": "t", "arguments": [1]}]', '"arguments" an object'),
        ('[{"calls": [["t"]]}]', "pairs"),
        ("[{", "cannot read script"),
    ],
)
def test_load_script_says_what_is_wrong(tmp_path: Path, content: str, problem: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ConfigError, match=problem):
        load_script(path)
