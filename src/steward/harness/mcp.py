"""MCP servers as tool sources: each configured server's tools become steward :class:`Tool`\\ s.

A server is reached over stdio (Steward launches the command) or streamable HTTP. Its tools
are offered to the model as ``<server>__<tool>``; what each one touches (effect class, scopes,
idempotency) comes from Steward's config, never from the server, and a tool the config does not
classify is :attr:`EffectClass.UNKNOWN` so the sentinel asks before it runs.

Every operation opens its own connection (spawn or connect, handshake, request, close) inside
the calling task: the SDK's transports are anyio task groups that must be entered and left in
the same task, and a per-call session cannot leak a server process or outlive its caller.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, fields
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Final, Literal, TypeVar, cast

import anyio
import httpx2
import mcp_types
import structlog
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CONNECTION_CLOSED, CallToolResult, Implementation, RequestParamsMeta

from steward.domain.actions import EffectClass
from steward.domain.roles import Role
from steward.errors import ConfigError, EffectFailed, StewardRuntimeError
from steward.harness.tools import Tool, ToolArgumentError, ToolContext

log = structlog.get_logger(__name__)

SERVER_NAME: Final = re.compile(r"^[a-zA-Z0-9_-]{1,32}$")
IDEMPOTENCY_META_KEY: Final = "dev.steward/idempotency-key"
ROLES_META_KEY: Final = "dev.steward/roles"
"""Where a server may describe its tool's argument roles, in the tool's ``_meta``:
``{"dev.steward/roles": {"to": "recipient", "body": "content"}}``."""
"""``_meta`` key of a ``tools/call`` carrying :attr:`ToolContext.idempotency_key`, for servers
that dedupe retries (those are the ones to configure ``idempotent = true``)."""

# The stdio transport's bounded shutdown (close stdin, grace, terminate) runs after our own
# timeout fires; the tool's outer deadline leaves room for it so our clearer error wins.
_SHUTDOWN_GRACE_SECONDS: Final = 5.0
_MAX_LIST_PAGES: Final = 100
_HTTP_TIMEOUT: Final = httpx2.Timeout(30.0, read=300.0)


def _steward_version() -> str:
    try:
        return version("steward")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown"


_CLIENT_INFO: Final = Implementation(name="steward", version=_steward_version())

_T = TypeVar("_T")


class McpToolError(StewardRuntimeError):
    """An MCP tool answered with an error, or its server failed the request."""


class McpToolRefused(McpToolError, EffectFailed):
    """The server answered the call with an error: it definitely did not do it, so an external
    tool's effect is recorded as failed and the model is told (no doubt, no retry)."""


class McpUnavailable(McpToolError):
    """The MCP server could not be started or reached."""


@dataclass(kw_only=True, frozen=True)
class McpToolPolicy:
    """What Steward assumes about an MCP tool: assigned in config, not claimed by the server."""

    effect: EffectClass = EffectClass.UNKNOWN
    """What the tool touches; UNKNOWN makes the sentinel ask."""
    scopes: tuple[str, ...] = ()
    """Authority it needs, checked by the security plane."""
    idempotent: bool = False
    """The server dedupes calls by the idempotency key Steward sends (see
    :data:`IDEMPOTENCY_META_KEY`), so retrying after a crash is safe."""
    untrusted: bool = True
    """Its results may carry other people's text (mail, pages, files); set false only for a
    tool whose output the person controls."""
    roles: dict[str, Role] | None = None
    """Its argument roles (``roles = {to = "recipient"}``); None: as the server describes them
    (:data:`ROLES_META_KEY`), else none, and its values are judged by their shape."""

    @classmethod
    def from_dict(cls, data: Any, *, where: str) -> McpToolPolicy:
        """Parse a config table; ``where`` names it in error messages."""
        table = _table(data, where)
        _no_unknown_keys(table, {"effect", "scopes", "idempotent", "untrusted", "roles"}, where)
        effect = table.get("effect", EffectClass.UNKNOWN.value)
        known = [e.value for e in EffectClass]
        if effect not in known:
            raise ConfigError(f"{where}: effect must be one of {', '.join(known)}, got {effect!r}")
        idempotent = table.get("idempotent", False)
        if not isinstance(idempotent, bool):
            raise ConfigError(f"{where}: idempotent must be true or false, got {idempotent!r}")
        untrusted = table.get("untrusted", True)
        if not isinstance(untrusted, bool):
            raise ConfigError(f"{where}: untrusted must be true or false, got {untrusted!r}")
        return cls(
            effect=EffectClass(effect),
            scopes=tuple(_strings(table.get("scopes", []), f"{where}.scopes")),
            idempotent=idempotent,
            untrusted=untrusted,
            roles=parse_roles(table["roles"], f"{where}.roles") if "roles" in table else None,
        )


def parse_roles(data: Any, where: str) -> dict[str, Role]:
    """``{argument: role}`` from config or a server's description."""
    known = [r.value for r in Role]
    roles = {}
    for name, role in _string_map(data, where).items():
        if role not in known:
            raise ConfigError(f"{where}.{name}: role must be one of {', '.join(known)}")
        roles[name] = Role(role)
    return roles


@dataclass(kw_only=True, frozen=True)
class McpServerConfig:
    """One MCP server Steward may use, and how its tools are classified."""

    name: str
    """Short name; its tools are offered as ``<name>__<tool>``."""
    transport: Literal["stdio", "http"]
    """``stdio``: Steward launches :attr:`command`; ``http``: streamable HTTP at :attr:`url`."""
    command: str | None = None
    """stdio: the executable to launch."""
    args: tuple[str, ...] = ()
    """stdio: its arguments."""
    env: dict[str, str] = field(default_factory=dict)
    """stdio: environment added to a minimal inherited one (HOME, PATH, USER...)."""
    cwd: str | None = None
    """stdio: working directory of the server process."""
    url: str | None = None
    """http: the endpoint, e.g. ``http://127.0.0.1:8000/mcp``."""
    headers: dict[str, str] = field(default_factory=dict)
    """http: headers sent with every request (e.g. ``Authorization``)."""
    tools: dict[str, McpToolPolicy] = field(default_factory=dict)
    """Policy per tool, by the server's own tool name."""
    default: McpToolPolicy = McpToolPolicy()
    """Policy of tools not listed in :attr:`tools`."""
    timeout_seconds: float = 60.0
    """Limit on each operation (connect, handshake and the request together)."""

    def __post_init__(self) -> None:
        where = f"mcp server {self.name!r}"
        if not SERVER_NAME.match(self.name):
            raise ConfigError(f"{where}: name must match {SERVER_NAME.pattern}")
        if self.transport == "stdio":
            if not self.command:
                raise ConfigError(f"{where}: a stdio server needs a command")
            if self.url is not None or self.headers:
                raise ConfigError(f"{where}: url and headers are for http servers, not stdio")
        elif self.transport == "http":
            if not self.url or not self.url.startswith(("http://", "https://")):
                raise ConfigError(f"{where}: an http server needs an http:// or https:// url")
            if self.command is not None or self.args or self.env or self.cwd is not None:
                raise ConfigError(f"{where}: command, args, env and cwd are for stdio servers")
        else:
            raise ConfigError(
                f"{where}: transport must be 'stdio' or 'http', got {self.transport!r}"
            )
        if not self.timeout_seconds > 0:
            raise ConfigError(f"{where}: timeout_seconds must be positive")

    def policy(self, tool: str) -> McpToolPolicy:
        """The policy of the server's tool ``tool``."""
        return self.tools.get(tool, self.default)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> McpServerConfig:
        """Parse a config-file table; ``transport`` may be left out when ``command`` or ``url``
        says which it is. Bad input raises :class:`ConfigError` naming the server and key."""
        table = _table(data, "mcp server")
        name = table.get("name")
        if not isinstance(name, str):
            raise ConfigError(f"mcp server: name must be a string, got {name!r}")
        where = f"mcp server {name!r}"
        _no_unknown_keys(table, {f.name for f in fields(cls)}, where)
        inferred = "stdio" if "command" in table else "http" if "url" in table else None
        transport: Literal["stdio", "http"]
        match table.get("transport", inferred):
            case "stdio":
                transport = "stdio"
            case "http":
                transport = "http"
            case None:
                raise ConfigError(f"{where}: give a command (stdio) or a url (http)")
            case other:
                raise ConfigError(f"{where}: transport must be 'stdio' or 'http', got {other!r}")
        timeout = table.get("timeout_seconds", 60.0)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            raise ConfigError(f"{where}: timeout_seconds must be a number, got {timeout!r}")
        tools = _table(table.get("tools", {}), f"{where}.tools")
        return cls(
            name=name,
            transport=transport,
            command=_optional_string(table, "command", where),
            args=tuple(_strings(table.get("args", []), f"{where}.args")),
            env=_string_map(table.get("env", {}), f"{where}.env"),
            cwd=_optional_string(table, "cwd", where),
            url=_optional_string(table, "url", where),
            headers=_string_map(table.get("headers", {}), f"{where}.headers"),
            tools={
                str(tool): McpToolPolicy.from_dict(policy, where=f"{where}.tools.{tool}")
                for tool, policy in tools.items()
            },
            default=McpToolPolicy.from_dict(table.get("default", {}), where=f"{where}.default"),
            timeout_seconds=float(timeout),
        )


def _table(data: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a table, got {type(data).__name__}")
    return data


def _no_unknown_keys(table: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {', '.join(unknown)}; expected {', '.join(sorted(allowed))}"
        )


def _optional_string(table: Mapping[str, Any], key: str, where: str) -> str | None:
    value = table.get(key)
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{where}: {key} must be a string, got {value!r}")
    return value


def _strings(value: Any, where: str) -> list[str]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: expected a list of strings, got {value!r}")
    return list(value)


def _string_map(value: Any, where: str) -> dict[str, str]:
    table = _table(value, where)
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in table.items()):
        raise ConfigError(f"{where}: keys and values must be strings")
    return dict(table)


def exposed_name(server: str, tool: str) -> str:
    """The name offered to the model for ``tool`` of ``server``: ``<server>__<tool>`` with
    characters providers reject replaced by ``_``; a name over 64 characters is cut and ends in
    a hash of the full one, so distinct long names stay distinct."""
    raw = f"{server}__{tool}"
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", raw)
    if len(name) > 64:
        name = f"{name[:55]}_{hashlib.sha256(raw.encode()).hexdigest()[:8]}"
    return name


class McpToolSource:
    """The tools of one configured MCP server. The tool list is fetched once, then cached."""

    def __init__(self, config: McpServerConfig) -> None:
        self.config = config
        self._tools: list[Tool] | None = None

    @property
    def source(self) -> str:
        """:attr:`Tool.source` of this server's tools."""
        return f"mcp:{self.config.name}"

    async def list_tools(self) -> list[Tool]:
        """The server's tools as steward tools (connecting the first time only)."""
        if self._tools is None:
            listed = await self._run("list tools", _list_all)
            self._tools = self._convert(listed)
        return list(self._tools)

    async def call_tool(
        self, tool: str, arguments: dict[str, Any], *, idempotency_key: str | None = None
    ) -> str:
        """Call the server's tool ``tool`` (its own name) and render the result as text.

        Raises :class:`McpToolError` with the server's message when the tool reports an error,
        :class:`McpUnavailable` when the server cannot be reached, and :class:`TimeoutError`
        after :attr:`McpServerConfig.timeout_seconds`.
        """
        meta = (
            cast(RequestParamsMeta, {IDEMPOTENCY_META_KEY: idempotency_key})
            if idempotency_key is not None
            else None
        )

        async def call(client: Client) -> CallToolResult:
            return await client.call_tool(tool, arguments, meta=meta)

        result = await self._run(f"call {tool!r}", call)
        text = render_result(result)
        if result.is_error:
            raise McpToolRefused(text or f"MCP tool {tool!r} failed without a message")
        return text

    def _convert(self, listed: list[mcp_types.Tool]) -> list[Tool]:
        converted: dict[str, Tool] = {}
        for spec in listed:
            name = exposed_name(self.config.name, spec.name)
            if name in converted:
                log.warning(
                    "mcp tool name collision; tool skipped",
                    server=self.config.name,
                    tool=spec.name,
                    exposed=name,
                )
                continue
            policy = self.config.policy(spec.name)
            roles = policy.roles if policy.roles is not None else _described_roles(spec)
            converted[name] = Tool(
                name=name,
                description=spec.description or spec.title or spec.name,
                parameters=dict(spec.input_schema),
                invoke=self._invoker(spec.name),
                validate=_validator(spec.input_schema),
                effect=policy.effect,
                idempotent=policy.idempotent,
                untrusted_output=policy.untrusted,
                scopes=policy.scopes,
                roles=roles,
                timeout_seconds=self.config.timeout_seconds + _SHUTDOWN_GRACE_SECONDS,
                source=self.source,
            )
        missing = sorted(set(self.config.tools) - {spec.name for spec in listed})
        if missing:
            log.warning(
                "mcp config classifies tools the server does not offer",
                server=self.config.name,
                tools=missing,
            )
        return list(converted.values())

    def _invoker(self, tool: str) -> Callable[[dict[str, Any], ToolContext], Awaitable[str]]:
        async def invoke(args: dict[str, Any], ctx: ToolContext) -> str:
            return await self.call_tool(tool, args, idempotency_key=ctx.idempotency_key)

        return invoke

    async def _run(self, what: str, operation: Callable[[Client], Awaitable[_T]]) -> _T:
        """Connect, run ``operation`` on the session, disconnect; errors made readable."""
        config = self.config
        where = f"MCP server {config.name!r}"
        try:
            with anyio.fail_after(config.timeout_seconds):
                async with AsyncExitStack() as stack:
                    client = await stack.enter_async_context(await self._client(stack))
                    return await operation(client)
        except TimeoutError as exc:
            raise TimeoutError(
                f"{where}: {what} did not finish within {config.timeout_seconds:g} seconds"
            ) from exc
        except Exception as exc:
            raise self._explain(exc, where, what) from exc

    async def _client(self, stack: AsyncExitStack) -> Client:
        config = self.config
        if config.transport == "stdio":
            assert config.command is not None  # checked by McpServerConfig
            params = StdioServerParameters(
                command=config.command, args=list(config.args), env=config.env, cwd=config.cwd
            )
            return Client(params, cache=None, client_info=_CLIENT_INFO)
        assert config.url is not None  # checked by McpServerConfig
        http = await stack.enter_async_context(
            httpx2.AsyncClient(headers=config.headers, timeout=_HTTP_TIMEOUT)
        )
        transport = streamable_http_client(config.url, http_client=http)
        return Client(transport, cache=None, client_info=_CLIENT_INFO)

    def _explain(self, exc: Exception, where: str, what: str) -> McpToolError:
        """One readable error for what the SDK raises (often nested in exception groups)."""
        config = self.config
        if isinstance(exc, OSError) and config.transport == "stdio":
            # Raised by the spawn itself, before any session exists.
            reason = exc.strerror or str(exc)
            return McpUnavailable(f"{where}: cannot start {config.command!r}: {reason}")
        for leaf in _leaves(exc):
            if isinstance(leaf, McpToolError):
                return leaf
            if isinstance(leaf, httpx2.TransportError):
                return McpUnavailable(f"{where}: cannot reach {config.url}: {leaf}")
            if isinstance(leaf, httpx2.HTTPStatusError):
                return McpUnavailable(f"{where}: {config.url} answered {leaf}")
            if isinstance(leaf, MCPError) and leaf.code == CONNECTION_CLOSED:
                target = config.command if config.transport == "stdio" else config.url
                return McpUnavailable(
                    f"{where}: the connection closed during {what}; is {target!r} an MCP server?"
                )
            if isinstance(leaf, MCPError):
                return McpToolRefused(f"{where}: {what} failed: {leaf.message} (code {leaf.code})")
        return McpToolError(f"{where}: {what} failed: {type(exc).__name__}: {exc}")


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


async def _list_all(client: Client) -> list[mcp_types.Tool]:
    listed: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(_MAX_LIST_PAGES):
        page = await client.list_tools(cursor=cursor)
        listed.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return listed
    raise McpToolError(f"the tool list has more than {_MAX_LIST_PAGES} pages")


def render_result(result: CallToolResult) -> str:
    """A tool result as text for the model: text blocks joined by newlines, other content
    described; structured content as JSON when there is no text (servers that return both put
    the same data in the text)."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        elif isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
            parts.append(f"[{block.type} ({block.mime_type}) not shown]")
        elif isinstance(block, mcp_types.ResourceLink):
            parts.append(f"[resource {block.name}: {block.uri}]")
        elif isinstance(block.resource, mcp_types.TextResourceContents):
            parts.append(block.resource.text)
        else:
            parts.append(f"[binary resource {block.resource.uri} not shown]")
    if result.structured_content is not None and not any(
        isinstance(block, mcp_types.TextContent) for block in result.content
    ):
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


_JSON_TYPES: Final[dict[str, Callable[[Any], bool]]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def _validator(schema: Mapping[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A light check before anything is sent (the server validates fully): an object with the
    required keys, no unknown keys when the schema forbids them, and top-level JSON types."""
    properties: Mapping[str, Any] = schema.get("properties") or {}
    required: list[str] = list(schema.get("required") or [])
    closed = schema.get("additionalProperties") is False

    def validate(args: Any) -> dict[str, Any]:
        if not isinstance(args, dict):
            raise ToolArgumentError("arguments must be a JSON object")
        problems = [f"{key}: required" for key in required if key not in args]
        if closed:
            problems += [
                f"{key}: not an argument of this tool" for key in args if key not in properties
            ]
        for key, value in args.items():
            declared = properties.get(key)
            kinds = declared.get("type") if isinstance(declared, Mapping) else None
            kinds = [kinds] if isinstance(kinds, str) else kinds
            if isinstance(kinds, list) and not any(
                _JSON_TYPES.get(kind, lambda _: True)(value) for kind in kinds
            ):
                problems.append(f"{key}: expected {' or '.join(map(str, kinds))}")
        if problems:
            raise ToolArgumentError("invalid arguments: " + "; ".join(problems))
        return args

    return validate


async def load_mcp_tools(configs: Sequence[McpServerConfig]) -> list[Tool]:
    """The tools of all configured servers, loaded concurrently, in config order; a server that
    fails to load is logged and skipped."""
    names = [config.name for config in configs]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ConfigError(f"mcp server names must be unique; repeated: {', '.join(repeated)}")
    found: list[list[Tool]] = [[] for _ in configs]

    async def load(index: int, config: McpServerConfig) -> None:
        try:
            found[index] = await McpToolSource(config).list_tools()
        except (McpToolError, TimeoutError) as exc:
            log.warning("mcp server skipped", server=config.name, error=str(exc))

    async with anyio.create_task_group() as group:
        for index, config in enumerate(configs):
            group.start_soon(load, index, config)
    return [tool for tools in found for tool in tools]


def _described_roles(spec: mcp_types.Tool) -> dict[str, Role] | None:
    """The roles the server describes for its tool, if it does and they make sense; a
    description that does not is ignored (logged): the tool then declares none."""
    described = (spec.meta or {}).get(ROLES_META_KEY)
    if described is None:
        return None
    try:
        roles = parse_roles(described, f"tool {spec.name!r} {ROLES_META_KEY}")
    except ConfigError as exc:
        log.warning("mcp tool roles ignored", tool=spec.name, error=str(exc))
        return None
    properties = set((spec.input_schema or {}).get("properties", {}))
    if not set(roles) <= properties:
        log.warning("mcp tool roles name unknown arguments; ignored", tool=spec.name)
        return None
    return roles
