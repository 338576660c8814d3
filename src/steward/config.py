"""Settings from the environment (``STEWARD_*``), a TOML config file and flags. Pydantic lives
here, at the edge.

Precedence: flags, then environment variables, then the config file (``$STEWARD_CONFIG``, default
``<data dir>/steward.toml``), then defaults. Keys in the file are the field names below
(``model = "llama3.1"``, ``model_base_url = "http://localhost:11434/v1"``), plus tables
``[prices."<model>"]`` and ``[[mcp_servers]]``.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from platformdirs import user_config_dir, user_data_dir
from pydantic import BaseModel, Field, SecretStr, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from steward.filemodes import private_dir, tighten

_KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
"""The providers' own API key variables, used when Steward's are unset."""


def default_data_dir() -> Path:
    return Path(user_data_dir("steward", appauthor=False))


def config_file() -> Path:
    explicit = os.environ.get("STEWARD_CONFIG")
    if explicit:
        return Path(explicit)
    data_dir = os.environ.get("STEWARD_DATA_DIR")
    return (Path(data_dir) if data_dir else default_data_dir()) / "steward.toml"


class PriceSetting(BaseModel):
    input_per_mtok: float = Field(ge=0)
    """USD per million prompt tokens."""
    output_per_mtok: float = Field(ge=0)
    """USD per million completion tokens."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="STEWARD_", extra="ignore")

    data_dir: Path = Field(default_factory=default_data_dir)
    """Where the embedded database and the person's workspace live."""
    database_url: str | None = None
    """``sqlite:///path`` or ``postgresql://…``; default: SQLite in :attr:`data_dir`."""
    person: str | None = None
    """Which person the CLI acts for (id); default: the only/first person."""

    login_file: Path = Field(
        default_factory=lambda: Path(user_config_dir("steward", appauthor=False)) / "login.json"
    )
    """Where ``steward login`` keeps the server and token the CLI then acts through."""

    host: str = "127.0.0.1"
    """Where ``steward up`` serves the API and the dashboard (``0.0.0.0`` to reach it from
    other devices, e.g. a phone on the home network; put TLS in front for anything wider)."""
    port: int = Field(default=8470, ge=0, le=65535)
    """Its port (0: any free one)."""
    dashboard_url: str | None = None
    """The dashboard's address as the person reaches it from their phone
    (``https://steward.home.example``): the links in the messages Steward sends (a report's,
    an approval's) start with it. Unset: ``http://<host>:<port>`` of ``steward up`` (this
    machine's name when it serves on every interface)."""

    model: str | None = None
    """Model name (``gpt-4o-mini``, ``llama3.1``...); unset: agent tasks fail with a message
    saying how to configure one."""
    model_provider: str = "openai"
    """``openai`` (any OpenAI-compatible endpoint: OpenAI, Ollama, vLLM, llama.cpp),
    ``anthropic``, or ``scripted`` (answers from :attr:`model_script`, for demos)."""
    model_base_url: str | None = None
    """Endpoint, e.g. ``http://localhost:11434/v1`` for Ollama; unset: the provider's own."""
    model_api_key: SecretStr | None = None
    """API key; unset: ``$OPENAI_API_KEY``/``$ANTHROPIC_API_KEY`` (none needed for localhost)."""
    model_stream: bool = False
    """Stream responses (the CLI streams anyway when it shows text as it arrives)."""
    model_max_retries: int = Field(default=3, ge=0)
    """Retries on rate limits, timeouts and server errors (with backoff)."""
    model_timeout_seconds: float = Field(default=120.0, gt=0)
    """Per request."""
    model_script: Path | None = None
    """For ``model_provider = "scripted"``: a JSON script of answers."""
    prices: dict[str, PriceSetting] = Field(default_factory=dict)
    """USD per million tokens by model name, for cost accounting and cost budgets."""
    mcp_servers: list[dict[str, Any]] = Field(default_factory=list)
    """MCP servers whose tools the agent may use (see ``McpServerConfig.from_dict``)."""
    model_summaries: bool = True
    """Compaction summaries are written by the model (deterministic when False, or when the
    model call fails)."""
    agent_max_steps: int = Field(default=40, ge=1)
    """Default step budget of one agent activation."""
    approval_ttl_hours: float = Field(default=168.0, gt=0)
    """Undecided approvals expire after this."""
    watch_interval_seconds: float = Field(default=60.0, gt=0)
    """The longest a connected account's watch waits between polls (a mailbox with IMAP IDLE
    hears of new mail at once; a calendar is polled this often)."""
    workspace_quota_mb: int = Field(default=1024, ge=1)
    """The most a person's workspace may hold, in MiB (files the agent writes, downloads,
    stored tool outputs): past it, writes and commands that would add are refused until files
    are removed."""
    streams_per_person: int = Field(default=16, ge=1)
    """Live streams (SSE) one person may have open at once on the API; one more is a 429."""

    log_file_max_mb: int = Field(default=10, ge=1)
    """The log file of ``steward up``/``worker``/``scheduler`` (``<data dir>/logs/steward.log``)
    is rotated when it reaches this size, in MiB."""
    log_file_backups: int = Field(default=5, ge=0)
    """Rotated log files kept (``steward.log.1`` the newest); older ones are deleted."""

    database_busy_timeout_seconds: float = Field(default=30.0, gt=0)
    """SQLite: how long a write waits for another process's write lock; past it the write
    fails, and the worker or scheduler backs off and tries again (it never exits)."""
    database_statement_timeout_seconds: float = Field(default=60.0, ge=0)
    """PostgreSQL: the longest a statement may run (0: no limit)."""
    database_lock_timeout_seconds: float = Field(default=30.0, ge=0)
    """PostgreSQL: the longest a statement waits for a lock (0: no limit)."""
    database_idle_in_transaction_timeout_seconds: float = Field(default=30.0, ge=0)
    """PostgreSQL: a session idle this long inside a transaction (its process paused or hung)
    is ended by the server, releasing the task it held for another worker (0: no limit)."""

    otel_exporter: Literal["none", "console", "otlp"] = "none"
    """Where a runtime sends its OpenTelemetry traces (a span per activation, with its model
    calls, sentinel decisions, tools, effects and checkpoints): ``none`` (default, no cost),
    ``console`` (standard error) or ``otlp`` (the collector named by
    ``OTEL_EXPORTER_OTLP_ENDPOINT``). Both need the ``observability`` extra."""

    embeddings: str = "none"
    """Semantic memory recall: ``none`` (lexical only), ``minilm`` (all-MiniLM-L6-v2 on the
    CPU, offline, English; the ``embeddings`` extra), ``multilingual-e5`` (multilingual-e5-small
    on the CPU, offline, about 100 languages, matching across them; the ``multilingual`` extra)
    or ``openai`` (an OpenAI-compatible ``/v1/embeddings`` endpoint)."""
    embeddings_model: str = "text-embedding-3-small"
    """For ``openai``: the model name."""
    embeddings_base_url: str | None = None
    """For ``openai``: the endpoint; unset: :attr:`model_base_url`, then OpenAI's."""
    embeddings_api_key: SecretStr | None = None
    """For ``openai``: the key; unset: :attr:`model_api_key`."""
    memory_rerank: Literal["none", "model"] = "none"
    """A second look at the memory searches the person asks for (CLI, API, dashboard):
    ``none`` (default) or ``model`` (the configured chat model scores the 30 best results
    against the question: better order, at a model call per search). The agent's own recall
    is not reranked."""

    @field_validator("dashboard_url")
    @classmethod
    def _dashboard_address(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                "dashboard_url must be the dashboard's http(s) address, like "
                "'https://steward.home.example'"
            )
        return value.strip().rstrip("/")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml = TomlConfigSettingsSource(settings_cls, toml_file=config_file())
        return init_settings, env_settings, toml

    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.data_dir / 'steward.db'}"

    def resolved_dashboard_url(self, *, host: str | None = None, port: int | None = None) -> str:
        """:attr:`dashboard_url`, else where ``steward up`` serves: :attr:`host` and
        :attr:`port`, or the ``host`` and ``port`` it was given and bound."""
        if self.dashboard_url:
            return self.dashboard_url
        host = self.host if host is None else host
        if host in ("", "0.0.0.0", "::"):  # every interface: this machine's name reaches it
            host = socket.gethostname()
        elif ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{port or self.port}"

    def secret_values(self) -> list[str]:
        """The configured API keys (and the providers' own variables they fall back to): never
        written to a log."""
        keys = [k.get_secret_value() for k in (self.model_api_key, self.embeddings_api_key) if k]
        return keys + [v for n in _KEY_VARIABLES if (v := os.environ.get(n))]

    @property
    def workspace_dir(self) -> Path:
        return self.data_dir / "workspace"

    @property
    def environment_dir(self) -> Path:
        """Where what the environment keeps about each person's workspace lives (the origin of
        each file), outside the workspace the shell can change."""
        return self.data_dir / "environment"


def private_data_dir(settings: Settings) -> Path:
    """The data directory, created if missing, made private before anything is read from or
    written to it: only its owner may enter it (0700), and the config file and workspace in it
    are tightened too (see :mod:`steward.filemodes`; the database files are the store's, the
    vault key the vault's)."""
    private_dir(settings.data_dir)
    tighten(settings.data_dir / "steward.toml")
    tighten(settings.workspace_dir)
    return settings.data_dir
