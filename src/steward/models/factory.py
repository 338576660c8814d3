"""Build the configured model: an adapter, its endpoint, its key and its price."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from urllib.parse import urlsplit

from steward.errors import ConfigError
from steward.models.base import Model, Price

PROVIDERS = ("openai", "anthropic")
"""``openai`` is any OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, llama.cpp...)."""


LOCAL_PLACEHOLDER_KEY = "not-needed"
"""Sent to local servers when no key is configured (the SDKs insist on some key)."""


def is_local(base_url: str | None) -> bool:
    """Whether ``base_url`` points at this machine (where Ollama & co. ignore the key)."""
    host = urlsplit(base_url).hostname if base_url else None
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def build_model(
    *,
    provider: str,
    name: str,
    base_url: str | None = None,
    api_key: str | None = None,
    prices: Mapping[str, Price] | None = None,
    max_retries: int = 3,
    timeout_seconds: float = 120.0,
    stream: bool = False,
) -> Model:
    """The model adapter for ``provider``, priced from ``prices`` by model name.

    Without ``api_key``: a local endpoint gets a placeholder key (the provider's key from the
    environment is not sent to it); a remote one falls back to ``$OPENAI_API_KEY`` or
    ``$ANTHROPIC_API_KEY``, and without that it is a :class:`ConfigError`.
    """
    if provider not in PROVIDERS:
        raise ConfigError(
            f"unknown model provider {provider!r}; valid providers: {', '.join(PROVIDERS)}"
        )
    price = (prices or {}).get(name)
    env_var = "OPENAI_API_KEY" if provider == "openai" else "ANTHROPIC_API_KEY"
    key = api_key
    if key is None:
        key = LOCAL_PLACEHOLDER_KEY if is_local(base_url) else os.environ.get(env_var)
    if not key:
        where = base_url or f"the default {provider} endpoint"
        raise ConfigError(
            f"no API key for model {name!r} at {where}; set STEWARD_MODEL_API_KEY (or {env_var})"
        )
    # Imported here: each adapter pulls in its SDK, which takes a while to load.
    if provider == "openai":
        from steward.models.openai_compat import OpenAIModel

        return OpenAIModel(
            name=name,
            base_url=base_url,
            api_key=key,
            price=price,
            max_retries=max_retries,
            timeout_seconds=timeout_seconds,
            stream=stream,
        )
    from steward.models.anthropic import AnthropicModel

    return AnthropicModel(
        name=name,
        base_url=base_url,
        api_key=key,
        price=price,
        max_retries=max_retries,
        timeout_seconds=timeout_seconds,
        stream=stream,
    )
