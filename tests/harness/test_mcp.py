"""MCP servers as tool sources, against the real test server over stdio and streamable HTTP.

Every operation spawns (stdio) or connects (HTTP) anew, so each test that calls a tool over
stdio pays one server start-up (about a second); the tool listing is shared by the module.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import mcp_types
import psutil
import pytest
from structlog.testing import capture_logs

from steward.domain.actions import EffectClass
from steward.errors import ConfigError, StewardRuntimeError
from steward.harness.mcp import (
    IDEMPOTENCY_META_KEY,
    McpServerConfig,
    McpToolError,
    McpToolPolicy,
    McpToolSource,
    McpUnavailable,
    _validator,
    exposed_name,
    load_mcp_tools,
    render_result,
)
from steward.harness.tools import Tool, ToolArgumentError, ToolContext
from steward.testing.mcp_server import serve_http
from support.startup import scaled
from support.waiting import eventually

SERVER_ARGS = ("-m", "steward.testing.mcp_server")
POLICIES = {
    "add": McpToolPolicy(effect=EffectClass.READ),
    "fail": McpToolPolicy(effect=EffectClass.EXTERNAL, scopes=("demo.fail",), idempotent=True),
}


def stdio_config(**changes: Any) -> McpServerConfig:
    settings: dict[str, Any] = {
        "name": "test",
        "transport": "stdio",
        "command": sys.executable,
        "args": SERVER_ARGS,
        "tools": POLICIES,
    }
    return McpServerConfig(**(settings | changes))


def context(key: str | None = None) -> ToolContext:
    return ToolContext(
        person_id="p1",
        task_id="t1",
        goal_id=None,
        idempotency_key=key,
        workspace=Path("/nonexistent"),
        now=datetime(2025, 1, 1, tzinfo=UTC),
    )


def live_servers() -> list[psutil.Process]:
    """Test-server processes this test process started and that are still alive."""
    alive = []
    for child in psutil.Process().children(recursive=True):
        try:
            if "steward.testing.mcp_server" in " ".join(child.cmdline()):
                alive.append(child)
        except psutil.NoSuchProcess:
            continue
    return alive


@pytest.fixture(autouse=True)
def no_server_left_behind() -> Iterator[None]:
    yield
    assert live_servers() == [], "an MCP server process outlived its call"


@pytest.fixture(scope="module")
def source() -> McpToolSource:
    """A source over the stdio server whose tools were listed once for the module (in an event
    loop of its own: calls connect anew in each test's loop)."""
    listed = McpToolSource(stdio_config())
    asyncio.run(listed.list_tools())
    return listed


@pytest.fixture
async def tools(source: McpToolSource) -> dict[str, Tool]:
    return {t.name: t for t in await source.list_tools()}


# --- listing ---------------------------------------------------------------------------------


def test_tools_are_listed_with_the_server_prefix(tools: dict[str, Tool]) -> None:
    assert sorted(tools) == [
        "test__add",
        "test__echo",
        "test__env",
        "test__fail",
        "test__record",
        "test__request_info",
        "test__slow",
    ]
    assert all(t.source == "mcp:test" for t in tools.values())
    assert tools["test__add"].description == "Add two integers."


def test_the_input_schema_is_passed_through(tools: dict[str, Tool]) -> None:
    schema = tools["test__add"].parameters
    assert schema["type"] == "object"
    assert schema["required"] == ["a", "b"]
    assert schema["properties"]["a"]["type"] == "integer"
    assert schema["properties"]["a"]["description"] == "First addend"
    assert tools["test__add"].spec.parameters == schema


def test_policy_comes_from_config_and_unlisted_tools_are_unknown(tools: dict[str, Tool]) -> None:
    add, fail, echo = tools["test__add"], tools["test__fail"], tools["test__echo"]
    assert (add.effect, add.scopes, add.idempotent) == (EffectClass.READ, (), False)
    assert (fail.effect, fail.scopes, fail.idempotent) == (
        EffectClass.EXTERNAL,
        ("demo.fail",),
        True,
    )
    assert (echo.effect, echo.scopes, echo.idempotent) == (EffectClass.UNKNOWN, (), False)
    assert echo.effect.journalled


def test_the_tool_deadline_leaves_room_for_the_servers_shutdown(tools: dict[str, Tool]) -> None:
    assert tools["test__add"].timeout_seconds > stdio_config().timeout_seconds


def test_the_default_policy_applies_to_unlisted_tools() -> None:
    source = McpToolSource(stdio_config(default=McpToolPolicy(effect=EffectClass.LOCAL)))
    converted = source._convert(
        [mcp_types.Tool(name="note", input_schema={"type": "object"}, title="Take a note")]
    )
    assert [(t.name, t.effect, t.description) for t in converted] == [
        ("test__note", EffectClass.LOCAL, "Take a note")
    ]


async def test_the_listing_is_cached(
    source: McpToolSource, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = await source.list_tools()
    # A reconnect would fail now.
    monkeypatch.setattr(source, "config", stdio_config(command="/nonexistent/mcp-server"))
    assert [t.name for t in await source.list_tools()] == [t.name for t in first]


# --- calls -----------------------------------------------------------------------------------


async def test_calling_a_tool_returns_its_text(tools: dict[str, Tool]) -> None:
    add = tools["test__add"]
    assert await add.invoke(add.parse_arguments('{"a": 2, "b": 3}'), context()) == "5"


async def test_an_error_result_raises_with_the_servers_message(tools: dict[str, Tool]) -> None:
    fail = tools["test__fail"]
    with pytest.raises(McpToolError, match="card declined") as info:
        await fail.invoke({"message": "card declined"}, context())
    assert isinstance(info.value, StewardRuntimeError)
    assert not isinstance(info.value, McpUnavailable)


async def test_a_slow_call_times_out_and_the_server_is_stopped() -> None:
    # Long enough for the server to start on a busy machine, far short of the sleep.
    source = McpToolSource(stdio_config(timeout_seconds=4.0))
    call = asyncio.create_task(source.call_tool("slow", {"seconds": 60}))

    async def started() -> bool:  # the process is polled: nothing signals its start
        return bool(live_servers()) or call.done()

    await eventually(started, "the server to start", seconds=scaled(4), every=0.02)
    assert live_servers(), "the leak check must see a running server"
    with pytest.raises(TimeoutError, match=r"'test': call 'slow' did not finish within 4 seconds"):
        await call
    # no_server_left_behind checks that the server process is gone


async def test_env_and_cwd_reach_the_server_process(tmp_path: Path) -> None:
    source = McpToolSource(stdio_config(env={"STEWARD_MCP_TEST": "on"}, cwd=str(tmp_path)))
    answer = json.loads(await source.call_tool("env", {"name": "STEWARD_MCP_TEST"}))
    assert answer == {"value": "on", "cwd": str(tmp_path)}


async def test_arguments_are_checked_before_anything_is_sent(tools: dict[str, Tool]) -> None:
    add = tools["test__add"]
    with pytest.raises(ToolArgumentError, match=r"^invalid arguments: b: required$"):
        add.parse_arguments('{"a": 1}')
    with pytest.raises(ToolArgumentError, match=r"a: expected integer; b: expected integer"):
        add.parse_arguments('{"a": "one", "b": true}')
    with pytest.raises(ToolArgumentError, match="must be a JSON object"):
        add.parse_arguments("[1, 2]")
    with pytest.raises(ToolArgumentError, match="must be a JSON object"):
        add.validate([1, 2])  # type: ignore[arg-type]
    # The server's schema allows extra keys, so they pass (and the server ignores them).
    assert add.parse_arguments('{"a": 1, "b": 2, "c": 3}') == {"a": 1, "b": 2, "c": 3}


def test_a_closed_schema_rejects_unknown_keys() -> None:
    validate = _validator(
        {
            "type": "object",
            "properties": {"q": {"type": ["string", "null"]}, "n": {"type": "number"}},
            "additionalProperties": False,
        }
    )
    assert validate({"q": None, "n": 1}) == {"q": None, "n": 1}
    assert validate({"q": "x", "n": 1.5}) == {"q": "x", "n": 1.5}
    with pytest.raises(ToolArgumentError, match=r"^invalid arguments: z: not an argument"):
        validate({"z": 1})
    with pytest.raises(ToolArgumentError, match=r"q: expected string or null"):
        validate({"q": 3})


# --- unreachable servers ---------------------------------------------------------------------


async def test_a_missing_command_is_a_clear_error() -> None:
    source = McpToolSource(stdio_config(command="/nonexistent/mcp-server"))
    with pytest.raises(
        McpUnavailable,
        match=r"'test': cannot start '/nonexistent/mcp-server': No such file or directory",
    ):
        await source.list_tools()


async def test_a_command_that_is_no_mcp_server_is_a_clear_error() -> None:
    source = McpToolSource(stdio_config(args=("-c", "pass")))
    with pytest.raises(McpUnavailable, match=r"connection closed during list tools; is '.*python"):
        await source.list_tools()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def test_a_refused_connection_is_a_clear_error() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    source = McpToolSource(McpServerConfig(name="web", transport="http", url=url))
    with pytest.raises(McpUnavailable, match=rf"'web': cannot reach {url}"):
        await source.list_tools()


async def test_a_failing_server_is_skipped_when_loading_all() -> None:
    bad = stdio_config(name="broken", command="/nonexistent/mcp-server")
    with serve_http() as url, capture_logs() as logs:
        good = McpServerConfig(name="web", transport="http", url=url)
        loaded = await load_mcp_tools([bad, good])
    assert {t.source for t in loaded} == {"mcp:web"}
    assert "web__add" in {t.name for t in loaded}
    skipped = [e for e in logs if e["event"] == "mcp server skipped"]
    assert [(e["server"], e["log_level"]) for e in skipped] == [("broken", "warning")]
    assert "cannot start" in skipped[0]["error"]


async def test_server_names_must_be_unique_when_loading_all() -> None:
    with pytest.raises(ConfigError, match="repeated: test"):
        await load_mcp_tools([stdio_config(), stdio_config(command="other")])


# --- streamable HTTP -------------------------------------------------------------------------


async def test_streamable_http_works_the_same() -> None:
    with serve_http() as url:
        config = McpServerConfig(
            name="web",
            transport="http",
            url=url,
            headers={"Authorization": "Bearer t0ken"},
            tools={"request_info": McpToolPolicy(effect=EffectClass.READ)},
        )
        listed = {t.name: t for t in await McpToolSource(config).list_tools()}
        assert "web__add" in listed
        assert listed["web__request_info"].effect is EffectClass.READ
        assert listed["web__add"].effect is EffectClass.UNKNOWN
        add = listed["web__add"]
        assert await add.invoke({"a": 2, "b": 3}, context()) == "5"
        info = json.loads(await listed["web__request_info"].invoke({}, context("key-7")))
    assert info["authorization"] == "Bearer t0ken"
    assert info["meta"][IDEMPOTENCY_META_KEY] == "key-7"


async def test_http_timeout() -> None:
    with serve_http() as url:
        source = McpToolSource(
            McpServerConfig(name="web", transport="http", url=url, timeout_seconds=0.5)
        )
        with pytest.raises(TimeoutError, match=r"did not finish within 0\.5 seconds"):
            await source.call_tool("slow", {"seconds": 30})


async def test_a_wrong_http_path_names_the_servers_answer() -> None:
    with serve_http() as url:
        config = McpServerConfig(name="web", transport="http", url=url + "/nope")
        with pytest.raises(McpToolError, match=r"'web': list tools failed: Not Found"):
            await McpToolSource(config).list_tools()


# --- names and rendering ---------------------------------------------------------------------


def test_exposed_names_are_sanitised_and_bounded() -> None:
    assert exposed_name("files", "read_file") == "files__read_file"
    assert exposed_name("files", "read.file/v2") == "files__read_file_v2"
    long_a, long_b = exposed_name("s", "x" * 80 + "a"), exposed_name("s", "x" * 80 + "b")
    assert len(long_a) == len(long_b) == 64
    assert long_a != long_b
    assert Tool(name=long_a, description="", parameters={}, invoke=_never).name == long_a


async def _never(args: dict[str, Any], ctx: ToolContext) -> None:
    raise AssertionError("not called")


def test_colliding_names_keep_the_first_tool() -> None:
    source = McpToolSource(stdio_config())
    schema: dict[str, Any] = {"type": "object"}
    with capture_logs() as logs:
        converted = source._convert(
            [
                mcp_types.Tool(name="a.b", input_schema=schema, description="first"),
                mcp_types.Tool(name="a_b", input_schema=schema, description="second"),
            ]
        )
    assert [(t.name, t.description) for t in converted] == [("test__a_b", "first")]
    assert [e["event"] for e in logs] == [
        "mcp tool name collision; tool skipped",
        "mcp config classifies tools the server does not offer",
    ]


def test_rendering_results() -> None:
    text = mcp_types.TextContent(text="line one")
    image = mcp_types.ImageContent(data="AAAA", mime_type="image/png")
    embedded = mcp_types.EmbeddedResource(
        resource=mcp_types.TextResourceContents(uri="file:///notes.txt", text="note body")
    )
    blob = mcp_types.EmbeddedResource(
        resource=mcp_types.BlobResourceContents(uri="file:///x.bin", blob="AAAA")
    )
    link = mcp_types.ResourceLink(name="report", uri="file:///report.pdf")
    result = mcp_types.CallToolResult(
        content=[text, image, embedded, blob, link], structured_content={"ignored": True}
    )
    assert render_result(result).split("\n") == [
        "line one",
        "[image (image/png) not shown]",
        "note body",
        "[binary resource file:///x.bin not shown]",
        "[resource report: file:///report.pdf]",
    ]
    structured = mcp_types.CallToolResult(content=[], structured_content={"answer": 42})
    assert render_result(structured) == '{"answer": 42}'
    assert render_result(mcp_types.CallToolResult(content=[])) == ""


# --- configuration ---------------------------------------------------------------------------


def test_config_from_a_table() -> None:
    config = McpServerConfig.from_dict(
        {
            "name": "files",
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
            "env": {"DEBUG": "1"},
            "timeout_seconds": 30,
            "tools": {
                "read_file": {"effect": "read"},
                "write_file": {"effect": "local", "scopes": ["files.write"]},
            },
            "default": {"effect": "external", "idempotent": True},
        }
    )
    assert config == McpServerConfig(
        name="files",
        transport="stdio",
        command="npx",
        args=("-y", "@modelcontextprotocol/server-filesystem", "/tmp"),
        env={"DEBUG": "1"},
        timeout_seconds=30.0,
        tools={
            "read_file": McpToolPolicy(effect=EffectClass.READ),
            "write_file": McpToolPolicy(effect=EffectClass.LOCAL, scopes=("files.write",)),
        },
        default=McpToolPolicy(effect=EffectClass.EXTERNAL, idempotent=True),
    )
    assert config.policy("write_file").scopes == ("files.write",)
    assert config.policy("delete_file").effect is EffectClass.EXTERNAL


def test_http_config_from_a_table() -> None:
    config = McpServerConfig.from_dict(
        {"name": "web", "url": "https://mcp.example.org/mcp", "headers": {"X-Key": "k"}}
    )
    assert (config.transport, config.url, config.headers) == (
        "http",
        "https://mcp.example.org/mcp",
        {"X-Key": "k"},
    )
    assert config.default == McpToolPolicy(effect=EffectClass.UNKNOWN)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ([], "mcp server: expected a table, got list"),
        ({"command": "x"}, "mcp server: name must be a string"),
        ({"name": "a b", "command": "x"}, r"'a b': name must match"),
        ({"name": "s"}, "'s': give a command \\(stdio\\) or a url \\(http\\)"),
        ({"name": "s", "command": "x", "comand": "y"}, "'s': unknown key\\(s\\) comand; expected"),
        ({"name": "s", "transport": "sse", "url": "http://h"}, "transport must be 'stdio' or"),
        ({"name": "s", "transport": "stdio", "url": "http://h"}, "a stdio server needs a command"),
        ({"name": "s", "command": "x", "url": "http://h"}, "url and headers are for http"),
        ({"name": "s", "url": "ftp://h"}, "needs an http:// or https:// url"),
        ({"name": "s", "transport": "http", "url": "http://h", "command": "x"}, "are for stdio"),
        ({"name": "s", "command": 5}, "'s': command must be a string, got 5"),
        ({"name": "s", "command": "x", "args": "-v"}, r"'s'.args: expected a list of strings"),
        ({"name": "s", "command": "x", "env": {"A": 1}}, r"'s'.env: keys and values must be"),
        ({"name": "s", "command": "x", "timeout_seconds": True}, "timeout_seconds must be a num"),
        ({"name": "s", "command": "x", "timeout_seconds": 0}, "timeout_seconds must be positive"),
        ({"name": "s", "command": "x", "tools": []}, r"'s'.tools: expected a table"),
        (
            {"name": "s", "command": "x", "tools": {"t": {"effect": "write"}}},
            r"'s'.tools.t: effect must be one of read, local, external, unknown, got 'write'",
        ),
        (
            {"name": "s", "command": "x", "tools": {"t": {"efect": "read"}}},
            r"'s'.tools.t: unknown key\(s\) efect",
        ),
        (
            {"name": "s", "command": "x", "default": {"scopes": "a.b"}},
            r"'s'.default.scopes: expected a list of strings",
        ),
        (
            {"name": "s", "command": "x", "default": {"idempotent": "yes"}},
            r"'s'.default: idempotent must be true or false",
        ),
    ],
)
def test_bad_config_tables_are_config_errors(table: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        McpServerConfig.from_dict(table)
