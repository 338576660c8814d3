"""Composition root: builds the model, tools and harness a process runs from its settings."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING

import httpx

from steward.config import Settings
from steward.connectors import registry
from steward.connectors.base import ConnectorEnv
from steward.connectors.http import http_tool
from steward.connectors.mail.channel import EmailSender
from steward.connectors.notify.dispatch import Dispatcher
from steward.connectors.post import KIND as HTTP_POST
from steward.connectors.post import http_post_kind
from steward.connectors.watch import Watcher
from steward.domain.channel import ChannelKind, ChannelSender
from steward.domain.clock import Clock
from steward.domain.workers import SystemStatus
from steward.environment import sandbox
from steward.environment.provenance import Provenance
from steward.environment.tools import workspace_tools
from steward.errors import ConfigError
from steward.harness.agent import AGENT_KIND, AgentConfig, AgentHarness
from steward.harness.budget import ActivationBudget
from steward.harness.goalsetup import goal_tools
from steward.harness.tools import Tool
from steward.harness.workspace import Workspace
from steward.memory.book import MemoryBook
from steward.memory.context import PersonalMemory
from steward.memory.embedding import embedder_from
from steward.memory.extraction import ModelExtractor
from steward.memory.jobs import CONSOLIDATE, with_memory_jobs
from steward.memory.skills import SkillLibrary
from steward.models.base import Message, Model, ModelResponse, OnDelta, Price, ToolSpec
from steward.models.check import Listing, ModelCheck, check_model
from steward.models.factory import build_model
from steward.models.scripted import ScriptedModel, load_script
from steward.runtime.builtin import builtin_harness
from steward.runtime.registry import Identity
from steward.runtime.standing import StandingWork
from steward.runtime.stepfn import StepHarness
from steward.runtime.worker import default_worker_name
from steward.sentinel.egress import EgressBroker
from steward.sentinel.policy import PolicySentinel
from steward.sentinel.replytoken import ReplyTokens
from steward.sentinel.vault import Vault, VaultKeys
from steward.store import Store

# what only the long-running roles use (Matrix's client, page watches, the browser) is
# imported inside the functions that build them: the CLI's short commands import this module
if TYPE_CHECKING:
    from steward.connectors.matrix.listen import MatrixListener, MatrixPeople
    from steward.connectors.matrix.sender import MatrixSender
    from steward.connectors.web.watches import WebWatchRunner

NO_MODEL = (
    "no model is configured: run `steward init` to set one (or set STEWARD_MODEL, and "
    "STEWARD_MODEL_BASE_URL for a local server such as Ollama, STEWARD_MODEL_API_KEY for a "
    "hosted one)"
)


class UnconfiguredModel:
    """Stands in when no model is configured, so everything else still runs; agent tasks
    fail with a message saying how to configure one."""

    name = "unconfigured"

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        on_delta: OnDelta | None = None,
    ) -> ModelResponse:
        raise ConfigError(NO_MODEL)


def memory_from(settings: Settings, store: Store, clock: Clock) -> MemoryBook:
    """The person's memory with the configured embedder."""
    return MemoryBook(store, clock, embedder=embedder_from(settings))


def model_from(settings: Settings) -> Model:
    if settings.model_provider == "scripted":
        if settings.model_script is None:
            raise ConfigError("model_provider 'scripted' needs STEWARD_MODEL_SCRIPT (a JSON file)")
        return ScriptedModel(load_script(settings.model_script), name=settings.model or "scripted")
    if settings.model is None:
        return UnconfiguredModel()
    key = settings.model_api_key.get_secret_value() if settings.model_api_key else None
    return build_model(
        provider=settings.model_provider,
        name=settings.model,
        base_url=settings.model_base_url,
        api_key=key,
        prices={
            name: Price(input_per_mtok=p.input_per_mtok, output_per_mtok=p.output_per_mtok)
            for name, p in settings.prices.items()
        },
        max_retries=settings.model_max_retries,
        timeout_seconds=settings.model_timeout_seconds,
        stream=settings.model_stream,
    )


async def check_model_live(settings: Settings, *, timeout_seconds: float = 10.0) -> ModelCheck:
    """Ask the configured endpoint, once and briefly, whether it answers, takes the key and
    serves the model (``steward init`` runs it before saving the settings)."""
    if settings.model is None or settings.model_provider == "scripted":
        return ModelCheck(ok=True, said="no endpoint to check")
    quick = settings.model_copy(
        update={"model_max_retries": 0, "model_timeout_seconds": timeout_seconds}
    )
    try:
        model = model_from(quick)
    except ConfigError as exc:
        return ModelCheck(ok=False, said=str(exc))
    if not isinstance(model, Listing):
        return ModelCheck(ok=True, said="no endpoint to check")
    try:
        return await check_model(model)
    except ModuleNotFoundError as exc:  # the provider's SDK is an optional extra
        return ModelCheck(
            ok=False,
            said=f"the {settings.model_provider} SDK is not installed ({exc.name}); "
            f"install it with: pip install -e '.[{settings.model_provider}]'",
        )


def step_harness(broker: EgressBroker, sentinel: PolicySentinel) -> StepHarness:
    """The built-in step functions, with ``http_post``: its requests are decided by
    ``sentinel`` and sent through ``broker``, like the agent's."""
    harness = builtin_harness()
    harness.register(HTTP_POST, http_post_kind(broker, sentinel, sentinel.store.audit.append_audit))
    return harness


def task_kinds() -> frozenset[str]:
    """The task kinds the harness :func:`build_harness` makes runs (a test holds the two
    together): the facade refuses a task, or a trigger's task, of any other kind at the door,
    rather than let it fail when a worker picks it up."""
    return frozenset({AGENT_KIND, *builtin_harness().kinds, HTTP_POST, CONSOLIDATE})


def cannot_run(harness: AgentHarness) -> frozenset[str]:
    """The task kinds ``harness`` cannot run: agent tasks, without a model (a worker leaves
    them to one that has a model)."""
    return frozenset({AGENT_KIND}) if isinstance(harness.model, UnconfiguredModel) else frozenset()


def server_runs_agents(status: SystemStatus) -> bool:
    """Whether a live registered process (not a command's own) runs agent tasks: then a
    command asking the agent only enqueues and follows."""
    return status.can_run(AGENT_KIND)


def process_identity(
    settings: Settings, harness: AgentHarness, *, http: bool = False, cli: bool = False
) -> Identity:
    """What a runtime process says about itself in the registry of processes (``http``: it
    serves the API too; ``cli``: it is a command's own, ending with it)."""
    decisive = {
        "model_provider": settings.model_provider,
        "model": settings.model,
        "model_base_url": settings.model_base_url,
        "embeddings": settings.embeddings,
        "embeddings_model": settings.embeddings_model,
        "embeddings_base_url": settings.embeddings_base_url,
    }
    digest = hashlib.sha256(json.dumps(decisive, sort_keys=True).encode()).hexdigest()
    model = None if isinstance(harness.model, UnconfiguredModel) else harness.model.name
    return Identity(
        fingerprint=digest[:12], model=model, cannot_run=cannot_run(harness), http=http, cli=cli
    )


async def connector_env(
    settings: Settings,
    store: Store,
    clock: Clock,
    *,
    client_factory: Callable[..., httpx.AsyncClient] = httpx.AsyncClient,
) -> ConnectorEnv:
    """What connectors' tools and watches work with: the store, an egress broker holding the
    vault (credentials are opened only at the boundary) and making its requests with clients
    from ``client_factory``, the clock and the workspace."""
    vault = Vault(
        VaultKeys.load(settings.data_dir, stored_secrets=await store.secrets.count_secrets())
    )
    return ConnectorEnv(
        store=store,
        broker=EgressBroker(
            store,
            vault,
            audit=store.audit.append_audit,
            now=clock.now,
            client_factory=client_factory,
        ),
        clock=clock,
        workspace=Workspace(settings.workspace_dir),
    )


async def connection_watcher(
    settings: Settings, store: Store, clock: Clock, *, on_events: Callable[[], None]
) -> Watcher:
    """The watcher of every connected account's trigger sources (new mail, calendar changes),
    under a lease per watch so that one process polls each; ``on_events`` is called when a
    poll stored events (the scheduler routes them to triggers and waits)."""
    return Watcher(
        env=await connector_env(settings, store, clock),
        holder=default_worker_name(),
        interval_seconds=settings.watch_interval_seconds,
        on_events=on_events,
    )


async def web_watch_runner(
    settings: Settings, store: Store, clock: Clock, *, on_events: Callable[[], None]
) -> WebWatchRunner:
    """The runner of every person's web watches: due ones claimed in batches under a lease
    (one process checks each), fetched politely through the egress broker; ``on_events`` is
    called when a check stored an event (the scheduler routes it to the goal's trigger)."""
    from steward.connectors.web.fetch import Fetcher
    from steward.connectors.web.watches import WebWatchRunner, shared_tls_clients

    env = await connector_env(settings, store, clock, client_factory=shared_tls_clients())
    return WebWatchRunner(
        store=store,
        fetcher=Fetcher(env.broker, clock),
        clock=clock,
        holder=default_worker_name(),
        on_events=on_events,
    )


async def mail_channel_sender(
    settings: Settings, store: Store, clock: Clock, *, dashboard_url: str | None = None
) -> EmailSender:
    """The e-mail channel's sender: from the agent's connected mailbox, approval mails with a
    reply token signed by the person's key in the vault, links on ``dashboard_url``."""
    vault = Vault(
        VaultKeys.load(settings.data_dir, stored_secrets=await store.secrets.count_secrets())
    )
    env = await connector_env(settings, store, clock)
    return EmailSender(
        env=env,
        tokens=ReplyTokens(store=store, vault=vault, clock=clock),
        dashboard_url=dashboard_url,
    )


def notify_dispatcher(
    settings: Settings, store: Store, clock: Clock, *, also: Sequence[ChannelSender] = ()
) -> Dispatcher:
    """The dispatcher of every person's deliveries (reports, digests, approvals, questions),
    claimed in batches under a lease, through the sender of each channel kind configured
    here; a channel whose kind has no sender here fails with a notice to the person."""
    senders: dict[ChannelKind, ChannelSender] = {sender.kind: sender for sender in also}
    return Dispatcher(store=store, senders=senders, clock=clock, holder=default_worker_name())


async def matrix_channel_sender(
    settings: Settings, store: Store, clock: Clock, *, dashboard_url: str | None = None
) -> MatrixSender:
    """The Matrix channel's sender: the bot's token opened from the vault by the broker,
    links on ``dashboard_url``."""
    from steward.connectors.matrix.sender import MatrixSender

    return MatrixSender(
        env=await connector_env(settings, store, clock), dashboard_url=dashboard_url
    )


async def matrix_listener(
    settings: Settings, store: Store, clock: Clock, *, people: MatrixPeople
) -> MatrixListener:
    """The long-poll sync of every Matrix channel's rooms: the person's messages go to
    ``people`` (the facade), which posts the agent's answers."""
    from steward.connectors.matrix.listen import MatrixListener

    return MatrixListener(env=await connector_env(settings, store, clock), people=people)


async def build_harness(
    settings: Settings,
    store: Store,
    clock: Clock,
    *,
    model: Model | None = None,
    on_delta: OnDelta | None = None,
    more_tools: Callable[[EgressBroker], Sequence[Tool]] | None = None,
) -> AgentHarness:
    """The agent harness for ``agent`` tasks, with the built-in step functions for the rest;
    every proposed action passes the person's policy (:class:`PolicySentinel`), and web API
    calls carry credentials only through the egress broker. ``more_tools`` adds tools made
    over that broker (the demo's office)."""
    from steward.connectors.web.goalwatch import watch_page_tool
    from steward.environment.browser import launcher

    connectors = await connector_env(settings, store, clock)
    broker = connectors.broker
    sentinel = PolicySentinel(store, clock)
    # every connector's tools: one reaches an account only through a connection the person made
    tools: list[Tool] = [http_tool(broker), *registry.tools(connectors)]
    if more_tools is not None:
        tools += more_tools(broker)
    # the person's standing work, set up from conversation (each call asks them by default)
    standing = StandingWork(store, clock)
    tools += [*goal_tools(standing, clock), watch_page_tool(store, standing, clock)]
    # the person's workspace files, and its shell where bubblewrap is installed
    tools += workspace_tools(
        sandbox.Sandbox() if sandbox.available() else None,
        broker=broker,
        provenance=Provenance(settings.environment_dir),
        quota_bytes=settings.workspace_quota_mb << 20,
    )
    if settings.mcp_servers:
        # the MCP SDK takes about a second to import: workers without MCP servers skip it
        from steward.harness.mcp import McpServerConfig, load_mcp_tools

        servers = [McpServerConfig.from_dict(entry) for entry in settings.mcp_servers]
        tools += await load_mcp_tools(servers)
    # the person's own browser, where Chromium is installed: last, after every structured tool
    browser = launcher.browser(settings, connectors) if launcher.available() else None
    if browser is not None:
        tools += browser.tools()
    model = model or model_from(settings)
    book = memory_from(settings, store, clock)
    return AgentHarness(
        model=model,
        summarizer=model if settings.model_summaries else None,
        workspace=connectors.workspace,
        tools=tools,
        sentinel=sentinel,
        personal=PersonalMemory(book, skills=SkillLibrary(store, clock, sentinel=sentinel)),
        config=AgentConfig(
            budget=ActivationBudget(max_steps=settings.agent_max_steps),
            approval_ttl=timedelta(hours=settings.approval_ttl_hours),
        ),
        fallback=with_memory_jobs(
            step_harness(broker, sentinel),
            book,
            extractor=None if isinstance(model, UnconfiguredModel) else ModelExtractor(model),
        ),
        on_delta=on_delta,
        # an activation's browser closes with it: a waiting task holds no browser process
        around=None if browser is None else browser.around,
    )
