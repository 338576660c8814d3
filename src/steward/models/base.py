"""The one interface every model provider sits behind, and the messages that cross it.

These are plain data: the harness builds a list of :class:`Message` and a list of
:class:`ToolSpec`, a :class:`Model` answers with a :class:`ModelResponse`. Responses are
recorded in the step journal as JSON (``to_json``/``from_json``), so a recovered activation
reuses the recorded answer instead of asking the model again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(kw_only=True, frozen=True)
class ToolCall:
    """A tool the model asked to call."""

    id: str
    """The provider's call id; tool results refer to it."""
    name: str
    """Tool name as offered in :class:`ToolSpec`."""
    arguments: str
    """Arguments as the model wrote them: a JSON object in text, possibly malformed (the
    harness validates it and tells the model what was wrong)."""

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ToolCall:
        return cls(id=data["id"], name=data["name"], arguments=data["arguments"])


@dataclass(kw_only=True, frozen=True)
class Message:
    """One message of a conversation with a model."""

    role: Role
    """Who speaks."""
    content: str = ""
    """Text (for ``tool``: the observation)."""
    tool_calls: tuple[ToolCall, ...] = ()
    """For ``assistant``: the tools it asked to call."""
    tool_call_id: str | None = None
    """For ``tool``: the call this observes."""
    name: str | None = None
    """For ``tool``: the tool's name."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            data["tool_calls"] = [c.to_json() for c in self.tool_calls]
        if self.tool_call_id is not None:
            data["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            data["name"] = self.name
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Message:
        return cls(
            role=data["role"],
            content=data.get("content") or "",
            tool_calls=tuple(ToolCall.from_json(c) for c in data.get("tool_calls", ())),
            tool_call_id=data.get("tool_call_id"),
            name=data.get("name"),
        )


@dataclass(kw_only=True, frozen=True)
class ToolSpec:
    """A tool as offered to a model."""

    name: str
    """Unique name (``^[a-zA-Z0-9_-]{1,64}$``, what every provider accepts)."""
    description: str
    """What it does and when to use it."""
    parameters: dict[str, Any]
    """JSON schema of its arguments (an ``object`` schema)."""


@dataclass(kw_only=True, frozen=True)
class Usage:
    """What one model call consumed."""

    input_tokens: int = 0
    """Prompt tokens."""
    output_tokens: int = 0
    """Completion tokens."""
    cost_usd: float = 0.0
    """Priced from the configured price table (0 when the model has no price)."""

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_json(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Usage:
        return cls(
            input_tokens=int(data.get("input_tokens", 0)),
            output_tokens=int(data.get("output_tokens", 0)),
            cost_usd=float(data.get("cost_usd", 0.0)),
        )


@dataclass(kw_only=True, frozen=True)
class ModelResponse:
    """A model's answer: text, tool calls, or both."""

    content: str = ""
    """Text it wrote."""
    tool_calls: tuple[ToolCall, ...] = ()
    """Tools it asked to call, in order."""
    usage: Usage = field(default_factory=Usage)
    """Tokens and cost of this call."""
    model: str = ""
    """The model that answered (as the provider names it)."""
    finish_reason: str = ""
    """``stop``, ``tool_calls``, ``length``... as the provider says."""

    @property
    def message(self) -> Message:
        """The response as the assistant message to append to the conversation."""
        return Message(role="assistant", content=self.content, tool_calls=self.tool_calls)

    def to_json(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "tool_calls": [c.to_json() for c in self.tool_calls],
            "usage": self.usage.to_json(),
            "model": self.model,
            "finish_reason": self.finish_reason,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ModelResponse:
        return cls(
            content=data.get("content") or "",
            tool_calls=tuple(ToolCall.from_json(c) for c in data.get("tool_calls", ())),
            usage=Usage.from_json(data.get("usage", {})),
            model=data.get("model", ""),
            finish_reason=data.get("finish_reason", ""),
        )


OnDelta = Callable[[str], Awaitable[None]]
"""Receives text as it streams in (for ``steward ask``/``chat``); never needed for correctness."""


class Model(Protocol):
    """A chat model with tool calling. Adapters map provider errors onto
    :mod:`steward.models.errors`: transient trouble (rate limits, timeouts, 5xx) is retried with
    backoff inside the adapter and then raised as :class:`~steward.errors.RetryLater`; a bad key,
    an unknown model or an overflowing context raise the specific error at once."""

    name: str
    """The model name, for logs, pricing and the journal."""

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        on_delta: OnDelta | None = None,
    ) -> ModelResponse: ...


@dataclass(kw_only=True, frozen=True)
class Price:
    """USD per million tokens."""

    input_per_mtok: float
    """Prompt price."""
    output_per_mtok: float
    """Completion price."""

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1e6
