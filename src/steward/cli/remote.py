"""The CLI's remote mode: commands act through a running server's API instead of opening the
database, so a laptop or a phone's terminal can steer a Steward on a home server.

Where a command acts, first match wins:

1. ``--db``: that database, locally.
2. ``$STEWARD_SERVER`` (with ``$STEWARD_TOKEN``): that server.
3. ``$STEWARD_DATABASE_URL``: that database, locally.
4. a saved login (``steward login``): its server, with its token.
5. the default local database.

Every command runs the same code either way: a :class:`RemoteService` stands in for the
facade, calling each method over ``POST /api/v1/call/<method>`` (:mod:`steward.service.wire`),
so a remote command is checked by the server's facade, bound to the token, like any request.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from steward.errors import StewardRuntimeError, UsageError
from steward.filemodes import private_dir, tighten

# the facade, its wire format, the settings and the HTTP client are imported where they are
# used: every command module imports this one, and `steward --help` must start fast
if TYPE_CHECKING:
    import httpx

    from steward.service import Service

SERVER_ENV = "STEWARD_SERVER"
TOKEN_ENV = "STEWARD_TOKEN"
CALL_TIMEOUT_SECONDS = 60.0


@dataclass(kw_only=True, frozen=True)
class Login:
    """A server to act through, and the token to act as."""

    server: str
    """The address ``steward up`` printed, e.g. ``http://192.168.1.20:8470``."""
    token: str
    """An API token for that server (``steward token create`` there)."""


class RemoteRefused(UsageError):
    """The server refused the call (its problem detail says why)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status_code = status


def login_path() -> Path:
    from steward.config import Settings

    return Settings().login_file


def read_login() -> Login | None:
    path = login_path()
    try:
        tighten(path)  # it holds a token
        saved = json.loads(path.read_text())
        return Login(server=str(saved["server"]), token=str(saved["token"]))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(
            f"the saved login {path} is unreadable ({exc}); run 'steward logout' and log in again"
        ) from None


def save_login(login: Login) -> Path:
    """Write the login readable by this user only (it holds a token)."""
    path = login_path()
    private_dir(path.parent)
    partial = path.with_suffix(".tmp")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(asdict(login), out)
    partial.replace(path)
    return path


def remote_login(db: str | None) -> Login | None:
    """The server a command acts through, or None to act on a database (module docstring)."""
    if db:
        return None
    server = os.environ.get(SERVER_ENV, "").strip()
    if server:
        token = os.environ.get(TOKEN_ENV, "").strip()
        if not token:
            raise UsageError(f"${SERVER_ENV} is set, so set ${TOKEN_ENV} to a token for it too")
        return Login(server=server, token=token)
    from steward.config import Settings

    if Settings().database_url:
        return None
    return read_login()


class RemoteService:
    """The facade's methods, called on a server (stands in for a
    :class:`~steward.service.Service`)."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        import httpx

        from steward.service.wire import NOT_REMOTE, wire_method

        if name.startswith("_"):
            raise AttributeError(name)
        if name in NOT_REMOTE:
            raise UsageError(
                "this works on the server's own machine only, not through a login "
                "(run it there, or 'steward logout' here)"
            )
        wire = wire_method(name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            body = wire.encode_call(*args, **kwargs)
            try:
                response = await self._client.post(f"/api/v1/call/{name}", json=body)
            except httpx.HTTPError as exc:
                why = str(exc) or type(exc).__name__
                raise StewardRuntimeError(
                    f"cannot reach the Steward server at {self._client.base_url} ({why}); "
                    "is 'steward up' running there?"
                ) from None
            if response.is_error:
                raise _refusal(response)
            return wire.decode_result(response.json())

        return call


def _refusal(response: httpx.Response) -> Exception:
    try:
        detail = str(response.json()["detail"])
    except (ValueError, KeyError, TypeError):
        return StewardRuntimeError(
            f"{response.request.url} answered HTTP {response.status_code} and is not a "
            "Steward server (or a different version of it)"
        )
    if response.status_code >= 500:
        return StewardRuntimeError(f"the server failed: {detail}")
    return RemoteRefused(response.status_code, detail)


@asynccontextmanager
async def remote_service(login: Login) -> AsyncIterator[Service]:
    """A facade whose every call goes to ``login``'s server, as its token."""
    import httpx

    async with httpx.AsyncClient(
        base_url=login.server.rstrip("/"),
        headers={"Authorization": f"Bearer {login.token}"},
        timeout=CALL_TIMEOUT_SECONDS,
    ) as client:
        # it has every remote-callable method of Service, by name; commands need no other
        yield cast("Service", RemoteService(client))
