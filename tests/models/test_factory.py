"""build_model: providers, keys (explicit, from the environment, local placeholder), prices."""

from __future__ import annotations

import sys

import pytest

from steward.errors import ConfigError
from steward.models import Message, OpenAIModel, Price, ScriptedModel, build_model, say
from steward.models.anthropic import AnthropicModel
from steward.models.factory import is_local
from steward.testing.model_server import run_model_server

USER = Message(role="user", content="x" * 40)
PRICE = Price(input_per_mtok=1.0, output_per_mtok=1.0)


def test_unknown_provider_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match="valid providers: openai, anthropic"):
        build_model(provider="gemini", name="m")


async def test_local_endpoint_needs_no_key_and_gets_no_foreign_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A local server gets the placeholder, never the OpenAI key from the environment."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-openai-key")
    with run_model_server(ScriptedModel([say("hi")]), api_key="not-needed") as server:
        model = build_model(
            provider="openai", name="scripted", base_url=server.url, prices={"scripted": PRICE}
        )
        answer = await model.complete([USER])
    assert answer.content == "hi"
    assert answer.usage.cost_usd == PRICE.cost(10, 1)


async def test_remote_endpoint_falls_back_to_the_providers_env_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with run_model_server(ScriptedModel([say("hi")]), api_key="sk-from-env") as server:
        # base_url None means "the SDK's default", which $OPENAI_BASE_URL redirects here
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
        model = build_model(provider="openai", name="scripted")
        assert (await model.complete([USER])).content == "hi"


@pytest.mark.parametrize(
    ("provider", "env_var"), [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")]
)
def test_remote_endpoint_without_key_says_how_to_set_one(
    monkeypatch: pytest.MonkeyPatch, provider: str, env_var: str
) -> None:
    monkeypatch.delenv(env_var, raising=False)
    with pytest.raises(ConfigError, match=f"set STEWARD_MODEL_API_KEY \\(or {env_var}\\)"):
        build_model(provider=provider, name="m", base_url="https://models.example.com/v1")


def test_builds_each_provider_with_its_price() -> None:
    prices = {"gpt-x": PRICE}
    openai_model = build_model(provider="openai", name="gpt-x", api_key="k", prices=prices)
    assert isinstance(openai_model, OpenAIModel)
    assert openai_model.price == PRICE
    claude = build_model(provider="anthropic", name="claude-x", api_key="k", stream=True)
    assert isinstance(claude, AnthropicModel)
    assert (claude.price, claude.stream) == (None, True)


def test_anthropic_without_its_sdk_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)  # makes `import anthropic` fail
    with pytest.raises(ConfigError, match=r"pip install 'steward\[anthropic\]'"):
        build_model(provider="anthropic", name="claude-x", api_key="k")


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://localhost:11434/v1", True),
        ("http://127.0.0.1:8000/v1", True),
        ("http://127.0.0.2:8000/v1", True),
        ("http://[::1]:8000/v1", True),
        ("https://api.openai.com/v1", False),
        ("http://10.0.0.5:8000/v1", False),
        (None, False),
    ],
)
def test_is_local(url: str | None, local: bool) -> None:
    assert is_local(url) is local
