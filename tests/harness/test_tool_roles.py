"""Argument roles: declared per parameter with ``Annotated[..., Role.X]`` on Python tools, taken
from config or the MCP server's description for MCP tools, carried on the tool and on every
action request, and read by the policy instead of argument names."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import mcp_types
import pytest
from pydantic import Field
from structlog.testing import capture_logs

from steward.connectors.http import http_tool
from steward.domain.actions import ActionRequest, EffectClass
from steward.domain.roles import Role
from steward.errors import ConfigError, UsageError
from steward.harness.control import control_tools
from steward.harness.mcp import McpServerConfig, McpToolPolicy, McpToolSource, _described_roles
from steward.harness.tools import Tool, tool
from steward.sentinel.arguments import recipients_of, urls_of
from steward.sentinel.grants import constraints_hold


def test_roles_are_read_from_annotated_parameters() -> None:
    @tool(effect=EffectClass.EXTERNAL)
    async def send(
        address: Annotated[str, Role.RECIPIENT, Field(description="who")],
        text: Annotated[str, Role.CONTENT],
        priority: int = 0,
    ) -> str:
        """Send."""
        return "ok"

    assert dict(send.roles or {}) == {"address": Role.RECIPIENT, "text": Role.CONTENT}
    # the role is Steward's: the schema the model sees is unchanged, descriptions kept
    assert send.parameters["properties"]["address"] == {"description": "who", "type": "string"}
    assert send.parse_arguments('{"address": "a@b.example", "text": "hi"}')["text"] == "hi"


def test_a_tool_without_roles_declares_none() -> None:
    @tool
    async def plain(x: str) -> str:
        """Plain."""
        return x

    assert plain.roles is None


def test_a_parameter_with_two_roles_or_a_role_for_no_parameter_is_refused() -> None:
    with pytest.raises(UsageError, match="several roles"):

        @tool
        async def twice(x: Annotated[str, Role.RECIPIENT, Role.HOST]) -> str:
            """Twice."""
            return x

    with pytest.raises(UsageError, match=r"roles name no parameter: \['y'\]"):
        Tool(
            name="t",
            description="t",
            parameters={"properties": {"x": {}}},
            invoke=_never,
            roles={"y": Role.AMOUNT},
        )


async def _never(args: dict[str, Any], ctx: Any) -> Any:
    raise AssertionError("not called")


def test_shipped_tools_declare_their_roles() -> None:
    fetch = http_tool(broker=None)  # type: ignore[arg-type]  # never called here
    assert dict(fetch.roles or {}) == {
        "url": Role.HOST,
        "headers": Role.CONTENT,
        "body": Role.CONTENT,
    }
    by_name = {t.name: t for t in control_tools()}
    assert all(t.roles is not None for t in control_tools())
    assert by_name["wait_until"].roles == {"at": Role.TIME}
    assert by_name["ask_person"].roles == {"question": Role.CONTENT}


def request(args: dict[str, Any], roles: dict[str, Role] | None) -> ActionRequest:
    return ActionRequest(
        person_id="p",
        task_id="t",
        goal_id=None,
        tool="notify",
        args=args,
        effect=EffectClass.EXTERNAL,
        scopes=("chat.send",),
        source="python",
        wake_reason="start",
        roles=roles,
    )


def test_the_policy_reads_roles_not_names() -> None:
    args = {
        "channel": "ops@corp.example",
        "to": "else@other.example",
        "target": "https://api.corp.example/x",
    }
    roles = {"channel": Role.RECIPIENT, "target": Role.HOST}
    assert recipients_of(args, roles) == ["ops@corp.example"]
    assert [u.host for u in urls_of(args, roles) or []] == ["api.corp.example"]
    # without roles, by the usual names only
    assert recipients_of(args) == ["else@other.example"]
    assert urls_of(args) == []
    ok = {"recipients": ["ops@corp.example"], "hosts": ["api.corp.example"]}
    assert constraints_hold(ok, "notify", args, roles)
    assert not constraints_hold(ok, "notify", args)


def test_mcp_roles_come_from_config_first() -> None:
    policy = McpToolPolicy.from_dict({"roles": {"to": "recipient"}}, where="mcp.x.tools.send")
    assert policy.roles == {"to": Role.RECIPIENT}
    with pytest.raises(ConfigError, match=r"mcp\.x\.tools\.send\.roles\.to: role must be one of"):
        McpToolPolicy.from_dict({"roles": {"to": "boss"}}, where="mcp.x.tools.send")


def spec(meta: dict[str, Any] | None) -> mcp_types.Tool:
    return mcp_types.Tool(
        name="send",
        input_schema={"type": "object", "properties": {"to": {"type": "string"}}},
        _meta=meta,
    )


def test_mcp_roles_the_server_describes_are_used_if_they_make_sense() -> None:
    assert _described_roles(spec({"dev.steward/roles": {"to": "recipient"}})) == {
        "to": Role.RECIPIENT
    }
    assert _described_roles(spec(None)) is None
    with capture_logs() as logs:
        assert _described_roles(spec({"dev.steward/roles": {"to": "boss"}})) is None
        assert _described_roles(spec({"dev.steward/roles": {"cc": "recipient"}})) is None
    assert [log["event"] for log in logs] == [
        "mcp tool roles ignored",
        "mcp tool roles name unknown arguments; ignored",
    ]


async def test_a_real_servers_tools_carry_roles() -> None:
    config = McpServerConfig(
        name="test",
        transport="stdio",
        command=sys.executable,
        args=("-m", "steward.testing.mcp_server"),
        tools={"add": McpToolPolicy(effect=EffectClass.READ, roles={"a": Role.AMOUNT})},
    )
    tools = {t.name: t for t in await McpToolSource(config).list_tools()}
    assert tools["test__add"].roles == {"a": Role.AMOUNT}  # config
    assert tools["test__echo"].roles == {"text": Role.FREE_TEXT}  # the server's description
    assert tools["test__fail"].roles is None  # neither: judged by shape
