"""The ``tool`` decorator (schema, validation, context injection) and the tool registry."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import Field

from steward.domain.actions import EffectClass
from steward.errors import UsageError
from steward.harness.tools import Tool, ToolArgumentError, ToolContext, ToolRegistry, tool


def context(tmp_path: Path) -> ToolContext:
    return ToolContext(
        person_id="p1",
        task_id="t1",
        goal_id=None,
        idempotency_key="key-1",
        workspace=tmp_path,
        now=datetime(2025, 1, 1, tzinfo=UTC),
    )


@tool(effect=EffectClass.EXTERNAL, scopes=["email.send"], idempotent=True, timeout_seconds=5)
async def send_mail(
    to: Annotated[str, Field(description="Recipient address")],
    ctx: ToolContext,
    subject: str = "(no subject)",
    copies: int = 1,
) -> str:
    """Send an email.

    Only the first paragraph becomes the description.
    """
    return f"{ctx.idempotency_key}:{to}:{subject}:{copies}"


@tool
async def ping() -> str:
    """Answer pong."""
    return "pong"


def test_schema_comes_from_type_hints() -> None:
    assert send_mail.name == "send_mail"
    assert send_mail.description == "Send an email."
    schema = send_mail.parameters
    assert schema["type"] == "object"
    assert schema["required"] == ["to"]
    assert schema["additionalProperties"] is False
    assert schema["properties"] == {
        "to": {"type": "string", "description": "Recipient address"},
        "subject": {"type": "string", "default": "(no subject)"},
        "copies": {"type": "integer", "default": 1},
    }
    assert "title" not in schema


def test_context_parameter_is_injected_not_asked(tmp_path: Path) -> None:
    assert "ctx" not in send_mail.parameters["properties"]
    args = send_mail.parse_arguments('{"to": "a@example.org"}')
    assert args == {"to": "a@example.org", "subject": "(no subject)", "copies": 1}


async def test_invoke_passes_validated_arguments_and_context(tmp_path: Path) -> None:
    args = send_mail.parse_arguments('{"to": "a@example.org", "copies": "2"}')
    assert args["copies"] == 2  # coerced by the validator before the function sees it
    assert await send_mail.invoke(args, context(tmp_path)) == "key-1:a@example.org:(no subject):2"


def test_declaration_options_are_kept() -> None:
    assert send_mail.effect is EffectClass.EXTERNAL
    assert send_mail.effect.journalled
    assert send_mail.scopes == ("email.send",)
    assert send_mail.idempotent
    assert send_mail.timeout_seconds == 5
    assert send_mail.source == "python"
    assert ping.effect is EffectClass.READ
    assert not ping.effect.journalled


def test_bare_decorator_and_empty_arguments() -> None:
    assert ping.parameters == {"type": "object", "properties": {}, "additionalProperties": False}
    assert ping.parse_arguments("") == {}
    assert ping.parse_arguments("  {} ") == {}


def test_spec_is_what_the_model_sees() -> None:
    spec = send_mail.spec
    assert (spec.name, spec.description, spec.parameters) == (
        "send_mail",
        "Send an email.",
        send_mail.parameters,
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{}", "invalid arguments: to: Field required"),
        ('{"to": "x", "copies": "many"}', "copies: Input should be a valid integer"),
        ('{"to": "x", "cc": "y"}', "cc: Extra inputs are not permitted"),
        ('{"to": 5}', "to: Input should be a valid string"),
        ('{"to": "x",', "arguments are not valid JSON: Expecting property name"),
        ("[1, 2]", "arguments must be a JSON object"),
        ('"to"', "arguments must be a JSON object"),
    ],
)
def test_bad_arguments_are_readable_argument_errors(raw: str, message: str) -> None:
    with pytest.raises(ToolArgumentError) as info:
        send_mail.parse_arguments(raw)
    assert message in str(info.value)
    assert isinstance(info.value, UsageError)


def test_all_problems_are_reported_at_once() -> None:
    with pytest.raises(ToolArgumentError) as info:
        send_mail.parse_arguments('{"copies": "x", "cc": 1}')
    assert str(info.value).count(";") == 2, str(info.value)


def test_name_and_description_can_be_given() -> None:
    @tool(name="lookup-2", description="Find things.")
    async def lookup(query: str) -> list[str]:
        return [query]

    assert (lookup.name, lookup.description) == ("lookup-2", "Find things.")


def test_description_falls_back_to_the_name() -> None:
    @tool
    async def undocumented() -> None:
        return None

    assert undocumented.description == "undocumented"


def test_sync_function_is_rejected() -> None:
    def plain(x: int) -> int:
        return x

    with pytest.raises(UsageError, match="plain must be an async function"):
        tool(plain)


@pytest.mark.parametrize("name", ["has space", "dotted.name", "a/b", "x" * 65, "ünicode"])
def test_bad_tool_name_is_rejected(name: str) -> None:
    async def fn() -> None:
        return None

    with pytest.raises(UsageError, match="must match"):
        tool(fn, name=name)


async def _nothing(args: dict[str, Any], ctx: ToolContext) -> None:
    return None


def plain_tool(name: str, **changes: Any) -> Tool:
    return Tool(name=name, description=f"{name} tool", parameters={}, invoke=_nothing, **changes)


def test_registry_lookup() -> None:
    registry = ToolRegistry([ping, send_mail])
    assert len(registry) == 2
    assert "ping" in registry
    assert "nope" not in registry
    assert registry.get("ping") is ping
    assert registry.get("nope") is None
    assert registry.names == ["ping", "send_mail"]
    assert list(registry) == [ping, send_mail]


def test_registry_rejects_duplicates() -> None:
    registry = ToolRegistry([ping])
    with pytest.raises(UsageError, match="'ping' is already registered"):
        registry.add(plain_tool("ping"))
    assert registry.get("ping") is ping


def test_select() -> None:
    registry = ToolRegistry([ping, send_mail, plain_tool("other")])
    assert registry.select(None) == [ping, send_mail, registry.get("other")]
    assert registry.select(["send_mail", "ping"]) == [send_mail, ping]
    assert registry.select([]) == []


def test_select_unknown_name_is_a_usage_error_listing_known_ones() -> None:
    registry = ToolRegistry([ping, send_mail])
    with pytest.raises(UsageError, match=r"unknown tool 'pong'; known: ping, send_mail"):
        registry.select(["ping", "pong"])


def test_with_overrides_replaces_the_declaration() -> None:
    registry = ToolRegistry([plain_tool("remote", effect=EffectClass.UNKNOWN)])
    updated = registry.with_overrides(
        "remote", effect=EffectClass.LOCAL, scopes=("notes.write",), timeout_seconds=3.0
    )
    assert registry.get("remote") is updated
    assert updated.effect is EffectClass.LOCAL
    assert updated.scopes == ("notes.write",)
    assert updated.timeout_seconds == 3.0
    assert updated.description == "remote tool"
