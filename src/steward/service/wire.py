"""The facade over the wire: a call of a :class:`~steward.service.Service` method as JSON and
back, for the CLI's remote mode (``POST /api/v1/call/<method>``).

Both ends hold the same code, so each method's own signature is the schema: arguments are
encoded and checked against its parameter annotations, the result against its return
annotation (pydantic), and the result is rebuilt on the client as the same domain objects a
local call returns. The server binds every call to the request's token, so tenancy and scopes
are decided by the facade exactly as for every other interface.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic import TypeAdapter, ValidationError

from steward.errors import NotFound, UsageError
from steward.service import Service

NOT_REMOTE = frozenset(
    {
        "authenticate",
        "receive_webhook",
        "receive_codehost",
        "take_person_mail",
        "take_matrix_message",
        "workspace_file",
        "approval_picture",
        "browser_picture",
    }
)
"""Public facade methods no remote call may name: the server binds the caller's token itself,
webhook deliveries have their own signed route, the person's mail the mail watch and their
Matrix messages the listener; a workspace file's bytes (an approval's picture too) and a
screenshot's are downloaded from their own routes."""


class BadArguments(UsageError):
    """Arguments of the wrong shape: each error names its argument (pydantic's error dicts)."""

    status_code = 422

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors))
        self.errors = errors


@dataclass(kw_only=True, frozen=True)
class WireMethod:
    """One facade method as the wire sees it."""

    name: str
    """The method's name on :class:`~steward.service.Service`."""
    signature: inspect.Signature
    """Its parameters, without ``self``."""
    parameters: Mapping[str, TypeAdapter[Any]]
    """How each argument is encoded and checked."""
    result: TypeAdapter[Any]
    """How its result is encoded and rebuilt."""

    def encode_call(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The JSON body of a call (client side); arguments left out keep their defaults."""
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise UsageError(f"{self.name}: {exc}") from None
        body: dict[str, Any] = {}
        for name, value in bound.arguments.items():
            if self.signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
                body |= {
                    key: self.parameters[name].dump_python(v, mode="json")
                    for key, v in value.items()
                }
            else:
                body[name] = self.parameters[name].dump_python(value, mode="json")
        return body

    def decode_call(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The keyword arguments of a call (server side). Raises :class:`BadArguments`, naming
        each argument that is unknown, missing or of the wrong shape."""
        kwargs: dict[str, Any] = {}
        errors: list[dict[str, Any]] = [
            {"loc": (p.name,), "msg": "Field required"}
            for p in self.signature.parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            and p.default is p.empty
            and p.name not in body
        ]
        for name, value in body.items():
            adapter = self._adapter(name)
            if adapter is None:
                errors.append({"loc": (name,), "msg": f"not an argument of {self.name}"})
                continue
            too_big = list(_too_big(value, (name,)))
            if too_big:
                errors += [{"loc": loc, "msg": "a number beyond 64 bits"} for loc in too_big]
                continue
            try:
                kwargs[name] = adapter.validate_python(value)
            except ValidationError as exc:
                errors += [{**e, "loc": (name, *e["loc"])} for e in exc.errors()]
        if errors:
            raise BadArguments(errors)
        return kwargs

    def _adapter(self, name: str) -> TypeAdapter[Any] | None:
        """The adapter of argument ``name``: its parameter's, else a ``**kwargs`` one's."""
        params = self.signature.parameters
        if name in params and params[name].kind is not inspect.Parameter.VAR_KEYWORD:
            return self.parameters[name]
        rest = [p.name for p in params.values() if p.kind is inspect.Parameter.VAR_KEYWORD]
        return self.parameters[rest[0]] if rest else None

    def encode_result(self, value: Any) -> Any:
        return self.result.dump_python(value, mode="json")

    def decode_result(self, data: Any) -> Any:
        return self.result.validate_python(data)


def _too_big(value: Any, loc: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
    """Where ``value`` holds an integer no database column can (every store column is 64-bit)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if not -(2**63) <= value < 2**63:
            yield loc
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _too_big(item, (*loc, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _too_big(item, (*loc, index))


def remote_methods() -> list[str]:
    """Every facade method a remote call may name, sorted."""
    return sorted(
        name
        for name, fn in inspect.getmembers(Service, inspect.iscoroutinefunction)
        if not name.startswith("_") and name not in NOT_REMOTE
    )


@cache
def wire_method(name: str) -> WireMethod:
    """``name`` as the wire sees it (:class:`~steward.errors.NotFound` if no remote call may
    name it)."""
    if name not in _remote_names():
        raise NotFound("method", name)
    fn = getattr(Service, name)
    hints = typing.get_type_hints(fn)
    signature = inspect.signature(fn)
    parameters = [p for p in signature.parameters.values() if p.name != "self"]
    return WireMethod(
        name=name,
        signature=signature.replace(parameters=parameters),
        parameters={p.name: TypeAdapter(hints[p.name]) for p in parameters},
        result=TypeAdapter(hints["return"]),
    )


@cache
def _remote_names() -> frozenset[str]:
    return frozenset(remote_methods())
