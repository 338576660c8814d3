"""Model errors a person can act on. Transient trouble is :class:`~steward.errors.RetryLater`."""

from __future__ import annotations

from steward.errors import ConfigError, StewardRuntimeError


class ModelAuthError(ConfigError):
    """The endpoint refused the API key (missing, wrong or revoked)."""


class UnknownModel(ConfigError):
    """The endpoint does not serve the configured model name."""


class ContextOverflow(StewardRuntimeError):
    """The prompt is longer than the model's context window; the harness compacts and retries."""


class ModelError(StewardRuntimeError):
    """The provider rejected the request for another reason (the message says which)."""
