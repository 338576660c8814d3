"""A live check of a configured model endpoint: does it answer, take the key, and serve the
model by that name? Used by ``steward init`` before it saves the settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from steward.errors import StewardError

SHOWN_MODELS = 8
"""How many of the endpoint's models a failed name check lists (Ollama may serve dozens)."""


@runtime_checkable
class Listing(Protocol):
    """A model adapter that can list what its endpoint serves (both provider adapters do)."""

    name: str
    """The configured model name."""

    async def list_models(self) -> list[str]: ...


@dataclass(kw_only=True, frozen=True)
class ModelCheck:
    """What the live check found, in plain words."""

    ok: bool
    """The endpoint answered, took the key and lists the model."""
    said: str
    """One line for the person: what answered, or why it failed and what to change."""


def serves(listed: list[str], name: str) -> bool:
    """Whether ``name`` is among ``listed``; Ollama lists ``llama3.1`` as ``llama3.1:latest``."""
    return name in listed or f"{name}:latest" in listed


async def check_model(model: Listing) -> ModelCheck:
    """List the endpoint's models once (the adapter's own timeout and retries apply) and look
    for ``model.name`` among them."""
    try:
        listed = await model.list_models()
    except StewardError as exc:  # the adapters' errors already say what to change
        return ModelCheck(ok=False, said=str(exc))
    if serves(listed, model.name):
        return ModelCheck(ok=True, said=f"the endpoint answers and serves {model.name}")
    if not listed:
        return ModelCheck(ok=False, said="the endpoint answers but lists no models")
    shown = ", ".join(sorted(listed)[:SHOWN_MODELS]) + (" …" if len(listed) > SHOWN_MODELS else "")
    return ModelCheck(
        ok=False,
        said=f"the endpoint answers but does not serve a model named {model.name!r}; "
        f"it serves: {shown}",
    )
