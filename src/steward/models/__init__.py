"""Model providers behind one interface, and a scripted model for tests and demos.

* :mod:`steward.models.base` — messages, tool specs, responses, the :class:`Model` protocol.
* :mod:`steward.models.openai_compat` — :class:`OpenAIModel`, any OpenAI-compatible endpoint.
* :mod:`steward.models.anthropic` — :class:`AnthropicModel` (``pip install 'steward[anthropic]'``).
* :mod:`steward.models.scripted` — :class:`ScriptedModel`, deterministic answers from a script.
* :mod:`steward.models.factory` — :func:`build_model` from configuration.

The two adapters load on first use (their SDKs take most of a second to import).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from steward.models.base import (
    Message,
    Model,
    ModelResponse,
    OnDelta,
    Price,
    ToolCall,
    ToolSpec,
    Usage,
)
from steward.models.errors import ContextOverflow, ModelAuthError, ModelError, UnknownModel
from steward.models.factory import build_model
from steward.models.scripted import (
    ScriptedModel,
    call_tool,
    call_tools,
    load_script,
    raw_call,
    say,
)

if TYPE_CHECKING:
    from steward.models.anthropic import AnthropicModel
    from steward.models.openai_compat import OpenAIModel

__all__ = [
    "AnthropicModel",
    "ContextOverflow",
    "Message",
    "Model",
    "ModelAuthError",
    "ModelError",
    "ModelResponse",
    "OnDelta",
    "OpenAIModel",
    "Price",
    "ScriptedModel",
    "ToolCall",
    "ToolSpec",
    "UnknownModel",
    "Usage",
    "build_model",
    "call_tool",
    "call_tools",
    "load_script",
    "raw_call",
    "say",
]


def __getattr__(name: str) -> Any:
    if name == "OpenAIModel":
        from steward.models.openai_compat import OpenAIModel

        return OpenAIModel
    if name == "AnthropicModel":
        from steward.models.anthropic import AnthropicModel

        return AnthropicModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
