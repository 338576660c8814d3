"""What the MCP server's tests share: reading a tool's result through the official client."""

from __future__ import annotations

import json
from typing import Any

from mcp import Client
from mcp_types import CallToolResult, TextContent


def text_of(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


async def ok(client: Client, tool: str, **arguments: Any) -> Any:
    """A tool's structured result (the same JSON as its text); fails on an error result."""
    result = await client.call_tool(tool, arguments)
    assert isinstance(result, CallToolResult)
    assert not result.is_error, text_of(result)
    assert result.structured_content == json.loads(text_of(result))
    return result.structured_content


async def refused(client: Client, tool: str, **arguments: Any) -> str:
    """The message of a tool's error result; fails if the call went through."""
    result = await client.call_tool(tool, arguments)
    assert isinstance(result, CallToolResult)
    assert result.is_error, f"{tool} went through: {text_of(result)}"
    return text_of(result)
