"""Tools: typed Python functions (or MCP tools) the model may call, and what each touches.

A tool declares its :class:`EffectClass` (the sentinel decides by it), whether it honours
idempotency keys, an optional reconcile hook and the scopes it needs. Arguments arrive from the
model as JSON text and are validated against a pydantic model built from the function's type
hints before anything runs; a bad argument becomes an observation for the model, not a crash.

Arguments that matter to the security plane carry a :class:`~steward.domain.roles.Role`
(``to: Annotated[str, Role.RECIPIENT]``): the policy and provenance read roles, never names or
value shapes. A tool that declares no roles (an undescribed MCP tool) is judged by the shape of
its values instead, and its decisions say so.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any, get_args, get_origin, get_type_hints, overload

import structlog
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from steward.domain.actions import EffectClass
from steward.domain.approval import ApprovalPreview
from steward.domain.roles import Role, decisive_values, plain_line
from steward.errors import EffectFailed, UsageError
from steward.models.base import ToolSpec

log = structlog.get_logger(__name__)

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class ToolArgumentError(UsageError):
    """The model's arguments do not fit the tool's schema."""


class ToolError(EffectFailed):
    """Raise from a tool to say it certainly did not do it (bad recipient, not found...). The
    model is told; an external effect is journalled as failed, not in doubt. Any other
    exception from an external tool leaves its outcome unknown."""


@dataclass(kw_only=True, frozen=True)
class ToolContext:
    """What a running tool may know about where it runs."""

    person_id: str
    """Whose tool call this is."""
    task_id: str
    """The task calling it."""
    goal_id: str | None
    """The task's goal, if any."""
    idempotency_key: str | None
    """For journalled tools: the key to pass to the service so a retry is not applied twice."""
    workspace: Path
    """The person's workspace directory (created on demand)."""
    now: datetime
    """The clock's time when the call started."""
    fence: str | None = None
    """For journalled tools: the fencing token ``task:epoch`` of the lease the call is sent
    under. A service that remembers the highest epoch it saw for a task can refuse a request
    from a lower one: a worker that lost the task and came back late."""
    read_only: bool = False
    """The task is read-only research: a tool whose own safeguards depend on it (the browser
    blocks every request that could change something) holds to it whatever it is asked."""
    items_read: list[str] = field(default_factory=list)
    """A connector's tool appends ``<connection id>/<item id>`` for each item of the person's
    accounts it returned (a mail, an event): what the task learns from them cites them, so
    disconnecting with ``--forget`` forgets it."""


Invoke = Callable[[dict[str, Any], ToolContext], Awaitable[Any]]
Reconcile = Callable[[str, dict[str, Any], ToolContext], Awaitable[tuple[bool, Any] | None]]
"""Asks the far end whether the effect with this key (of this call, in this context) happened:
``(True, result)``, ``(False, None)`` for not applied, or None if it cannot tell (see
:data:`steward.runtime.run.Reconcile`)."""
Summarize = Callable[[Mapping[str, Any]], str]
"""The proposed call in one plain sentence, from its validated arguments."""
Preview = Callable[[dict[str, Any], ToolContext], Awaitable[ApprovalPreview]]
"""What the person should see of a proposed call before deciding (a screenshot, the values a
form would send), gathered when the call must be approved; it must change nothing. A preview
that fails raises :class:`ToolError`: the call is not proposed and the model is told why."""

SUMMARY_CHARS = 240
"""The longest describer sentence shown; a longer one is cut at a word (the controlling values
are then added in full)."""


@dataclass(kw_only=True, frozen=True)
class Tool:
    """A callable tool with its declaration."""

    name: str
    """Name offered to the model."""
    description: str
    """What it does and when to use it."""
    parameters: dict[str, Any]
    """JSON schema of the arguments."""
    invoke: Invoke
    """Runs the tool on validated arguments."""
    validate: Callable[[dict[str, Any]], dict[str, Any]] = field(default=lambda args: args)
    """Checks and normalises arguments; raises :class:`ToolArgumentError`."""
    effect: EffectClass = EffectClass.READ
    """What it touches."""
    idempotent: bool = False
    """For journalled tools: the service dedupes by :attr:`ToolContext.idempotency_key`, so a
    retry after a crash is safe."""
    reconcile: Reconcile | None = None
    """For journalled tools without idempotency: asks the service whether a key was applied."""
    connector: str | None = None
    """The connector kind it acts through (``mail``, ``calendar``): the policy bounds it by the
    person's connection of that kind its ACCOUNT argument names (the only one, when none)."""
    summarize: Summarize | None = None
    """Describes a proposed call in one sentence for approvals, the timeline and notifications
    (None: the tool name and its arguments)."""
    scopes: tuple[str, ...] = ()
    """Authority it needs (``email.send``, ``calendar.read``...); the security plane checks."""
    timeout_seconds: float = 60.0
    """A call running longer is abandoned and reported to the model as a timeout."""
    source: str = "python"
    """Where it comes from: ``python``, ``control`` or ``mcp:<server>``."""
    untrusted_output: bool = False
    """Its results carry text from others (mail bodies, web pages, shared files): values in
    them cannot steer an external action without the person's approval."""
    roles: Mapping[str, Role] | None = None
    """What each argument that matters is for (arguments not named steer nothing and carry
    nothing out); None: the tool declares no roles, so its values are judged by their shape."""
    preview: Preview | None = None
    """Gathers what the approval shows beside the summary (None: the summary alone)."""

    def __post_init__(self) -> None:
        if not TOOL_NAME.match(self.name):
            raise UsageError(f"tool name {self.name!r} must match {TOOL_NAME.pattern}")
        if self.roles is not None:
            unknown = sorted(set(self.roles) - set(self.parameters.get("properties", {})))
            if unknown:
                raise UsageError(f"tool {self.name}: roles name no parameter: {unknown}")
            object.__setattr__(self, "roles", MappingProxyType(dict(self.roles)))

    def summary(self, args: Mapping[str, Any]) -> str:
        """The proposed call in one plain line, never hiding where it goes: the describer's
        sentence (or the call itself), cleaned of control and invisible characters and cut at
        a word, then every value of an argument saying where it goes or how much (recipient,
        host, payee, account, calendar, amount) that the line does not already show in full.
        Never raises: a describer that fails falls back to the call itself."""
        text = ""
        if self.summarize is not None:
            try:
                text = plain_line(self.summarize(args))
            except Exception as exc:  # a bad describer must not stop an approval being asked
                log.warning("tool summary failed", tool=self.name, error=str(exc))
        if not text:
            shown = ", ".join(
                f"{k}={v!r}"
                for k, v in sorted(args.items(), key=self._decisive_first)
                if v is not None
            )
            text = plain_line(f"{self.name}({shown})")
        if len(text) > SUMMARY_CHARS:
            text = text[: SUMMARY_CHARS - 1].rsplit(" ", 1)[0] + "…"
        unseen = [
            f"{name}: {', '.join(values)}"
            for name, values in self.decisive(args)
            if self._where(name) and not all(value in text for value in values)
        ]
        return f"{text} [{'; '.join(unseen)}]" if unseen else text

    def decisive(self, args: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
        """The arguments that decide what the call does or to whom, as plain text."""
        return decisive_values(args, self.roles)

    def _where(self, name: str) -> bool:
        """The argument says where the call goes or how much it moves (its value must be in
        the line); times and identifiers the describer words its own way, and the approval
        lists them beside the line."""
        role = None if self.roles is None else self.roles.get(name)
        return role not in (Role.TIME, Role.IDENTIFIER)

    def _decisive_first(self, item: tuple[str, Any]) -> int:
        role = None if self.roles is None else self.roles.get(item[0])
        return 0 if role is not None and role.controlling else 1

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    def parse_arguments(self, raw: str) -> dict[str, Any]:
        """Decode and validate the model's argument text."""
        try:
            args = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            raise ToolArgumentError(
                f"arguments are not valid JSON: {exc.msg} at {exc.pos}"
            ) from exc
        if not isinstance(args, dict):
            raise ToolArgumentError("arguments must be a JSON object")
        return self.validate(args)


AsyncFn = Callable[..., Awaitable[Any]]


@overload
def tool(fn: AsyncFn, /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    effect: EffectClass = EffectClass.READ,
    idempotent: bool = False,
    reconcile: Reconcile | None = None,
    scopes: Sequence[str] = (),
    timeout_seconds: float = 60.0,
    untrusted_output: bool = False,
    connector: str | None = None,
    summarize: Summarize | None = None,
    preview: Preview | None = None,
) -> Callable[[AsyncFn], Tool]: ...


def tool(
    fn: AsyncFn | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    effect: EffectClass = EffectClass.READ,
    idempotent: bool = False,
    reconcile: Reconcile | None = None,
    scopes: Sequence[str] = (),
    timeout_seconds: float = 60.0,
    untrusted_output: bool = False,
    connector: str | None = None,
    summarize: Summarize | None = None,
    preview: Preview | None = None,
) -> Tool | Callable[[AsyncFn], Tool]:
    """Make a :class:`Tool` from an async function with type-hinted parameters.

    Parameters become the JSON schema (use ``Annotated[T, Field(description=...)]`` to describe
    them, and put a :class:`~steward.domain.roles.Role` in the ``Annotated`` to say what the
    argument is for); a parameter annotated :class:`ToolContext` is injected rather than asked
    of the model. A tool with no role on any parameter declares no roles (see
    :attr:`Tool.roles`).
    Usable bare (``@tool``) or with options (``@tool(effect=EffectClass.EXTERNAL)``).
    """

    def build(func: AsyncFn) -> Tool:
        if not inspect.iscoroutinefunction(func):
            raise UsageError(f"tool {func.__name__} must be an async function")
        hints = get_type_hints(func, include_extras=True)
        fields: dict[str, Any] = {}
        roles: dict[str, Role] = {}
        context_param: str | None = None
        for param in inspect.signature(func).parameters.values():
            hint = hints.get(param.name, Any)
            if hint is ToolContext:
                context_param = param.name
                continue
            if get_origin(hint) is Annotated:
                base, *extras = get_args(hint)
                declared = [extra for extra in extras if isinstance(extra, Role)]
                if len(declared) > 1:
                    raise UsageError(f"tool {func.__name__}: {param.name} has several roles")
                if declared:
                    roles[param.name] = declared[0]
                    rest = [extra for extra in extras if not isinstance(extra, Role)]
                    hint = Annotated[(base, *rest)] if rest else base
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[param.name] = (hint, default)
        model = create_model(
            f"{func.__name__}_args", __config__=ConfigDict(extra="forbid"), **fields
        )
        schema = _clean_schema(model.model_json_schema())

        def validate(args: dict[str, Any]) -> dict[str, Any]:
            try:
                parsed: BaseModel = model.model_validate(args)
            except ValidationError as exc:
                raise ToolArgumentError(_explain(exc)) from exc
            return {k: getattr(parsed, k) for k in fields}

        async def invoke(args: dict[str, Any], ctx: ToolContext) -> Any:
            kwargs = dict(args)
            if context_param is not None:
                kwargs[context_param] = ctx
            return await func(**kwargs)

        doc = inspect.getdoc(func) or ""
        return Tool(
            name=name or func.__name__,
            description=description or doc.split("\n\n")[0].strip() or func.__name__,
            parameters=schema,
            invoke=invoke,
            validate=validate,
            effect=effect,
            idempotent=idempotent,
            reconcile=reconcile,
            scopes=tuple(scopes),
            timeout_seconds=timeout_seconds,
            untrusted_output=untrusted_output,
            roles=roles or None,
            connector=connector,
            summarize=summarize,
            preview=preview,
        )

    return build(fn) if fn is not None else build


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    schema = dict(schema)
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    schema.setdefault("properties", {})
    return schema


def _explain(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{where}: {err['msg']}")
    return "invalid arguments: " + "; ".join(parts)


class ToolRegistry:
    """The tools a harness can offer, by name."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self.add(t)

    def add(self, item: Tool) -> Tool:
        if item.name in self._tools:
            raise UsageError(f"a tool named {item.name!r} is already registered")
        self._tools[item.name] = item
        return item

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Any:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> list[str]:
        return sorted(self._tools)

    def select(self, names: Iterable[str] | None) -> list[Tool]:
        """The named tools (all when None); unknown names are an error."""
        if names is None:
            return list(self._tools.values())
        chosen = []
        for n in names:
            if n not in self._tools:
                raise UsageError(f"unknown tool {n!r}; known: {', '.join(self.names)}")
            chosen.append(self._tools[n])
        return chosen

    def with_overrides(self, name: str, **changes: Any) -> Tool:
        """Replace a registered tool's declaration (effect class, scopes...) from config."""
        if name not in self._tools:
            raise UsageError(f"unknown tool {name!r}; known: {', '.join(self.names)}")
        if "name" in changes:
            raise UsageError("with_overrides cannot rename a tool")
        updated = replace(self._tools[name], **changes)
        self._tools[name] = updated
        return updated
