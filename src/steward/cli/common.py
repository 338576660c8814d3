"""Shared CLI plumbing: opening the store, printing, one-line errors."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractContextManager, asynccontextmanager
from datetime import datetime
from enum import Enum
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from steward.errors import StewardError

if TYPE_CHECKING:
    from steward.config import Settings
    from steward.memory.rerank import Reranker
    from steward.service import Service

T = TypeVar("T")
console = Console()
err_console = Console(stderr=True)

DbOption = typer.Option(
    None, "--db", help="Database URL (default: $STEWARD_DATABASE_URL or SQLite in the data dir)."
)
JsonOption = typer.Option(False, "--json", help="Print JSON for scripts.")
AudienceOption = typer.Option(
    "private",
    "--audience",
    help="Who hears this conversation: private, public or group:<name>. It bounds what the "
    "agent may disclose here.",
)
PersonOption = typer.Option(None, "--person", envvar="STEWARD_PERSON", help="Person id.")


def run(coro: Callable[[], Awaitable[T]], *, log_level: str = "warning") -> T:
    """Run an async command; a Steward error becomes one clear line and exit code 1."""
    from steward.logs import configure as configure_logging

    configure_logging(log_level)
    try:
        return asyncio.run(coro())  # type: ignore[arg-type]
    except StewardError as exc:
        err_console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from None


async def as_caller(svc: Service) -> Service:
    """``svc`` bound to ``$STEWARD_TOKEN`` when it is set (then every command acts for that
    token's person only, within its scopes); otherwise the machine owner's, for anyone."""
    from steward.cli.remote import TOKEN_ENV

    token = os.environ.get(TOKEN_ENV)
    return await svc.authenticate(token) if token else svc


@asynccontextmanager
async def service(db: str | None) -> AsyncIterator[Service]:
    """The facade a command acts through: a server's (:mod:`steward.cli.remote`), or one on
    the database."""
    # imported here, not at the top: `steward --help` and every command's parsing stay fast
    from steward.cli.remote import remote_login, remote_service

    login = remote_login(db)
    if login is not None:
        # a server's facade needs neither the database's libraries nor an embedder here
        async with remote_service(login) as remote:
            yield remote
        return
    from steward.config import Settings, private_data_dir
    from steward.memory.embedding import embedder_from
    from steward.service import Service
    from steward.store import DatabaseLimits, Store

    settings = Settings()
    private_data_dir(settings)
    url = db or settings.resolved_database_url()
    store = await Store.open(url, limits=DatabaseLimits.of(settings))
    try:
        yield await as_caller(
            Service(
                store,
                data_dir=settings.data_dir,
                embedder=embedder_from(settings),
                reranker=_reranker(settings),
                task_kinds=_task_kinds,
            )
        )
    finally:
        await store.close()


def _task_kinds() -> frozenset[str]:
    """:func:`steward.app.task_kinds`, asked only when a command adds a task: importing the
    app imports every harness and connector, which a command that only reads never needs."""
    from steward.app import task_kinds

    return task_kinds()


def _reranker(settings: Settings) -> Reranker | None:
    """The reranker the person chose, if any: the app's wiring (and a model client) is
    imported on its first search, not by every command."""
    from steward.memory.rerank import reranker_from

    return reranker_from(settings, lambda: import_module("steward.app").model_from(settings))


def to_jsonable(value: Any) -> Any:
    """:func:`steward.service.encode.to_jsonable`, imported when a command first prints JSON
    (importing it imports the facade, which ``--help`` must not pay for)."""
    from steward.service.encode import to_jsonable as encode

    return encode(value)


def parse_time(value: str) -> datetime:
    """:func:`steward.service.parse_time`, imported when first used (as :func:`to_jsonable`)."""
    from steward.service import parse_time as parse

    return parse(value)


def url_of(db: str | None) -> str:
    """The database a command that opens it directly works on: ``--db``, else the settings'."""
    from steward.config import Settings

    return db or Settings().resolved_database_url()


def working(what: str) -> AbstractContextManager[object]:
    """A spinner on the terminal while a long operation runs (nothing when not a terminal)."""
    return err_console.status(f"{what}…")


def emit(items: Sequence[Any], columns: Sequence[str], *, as_json: bool, title: str = "") -> None:
    """Print a listing as a table, or as JSON with ``--json``."""
    if as_json:
        print(json.dumps([to_jsonable(i) for i in items], indent=2))
        return
    table = Table(title=title or None)
    for col in columns:
        # an id is what the person copies into the next command: never cut short with an
        # ellipsis (folded onto a second line only on a terminal too narrow for it)
        table.add_column(col, overflow="fold" if _is_id(col) else "ellipsis")
    for item in items:
        table.add_row(*[_cell(getattr(item, col, None)) for col in columns])
    console.print(table)


def _is_id(column: str) -> bool:
    return column == "id" or column.endswith("_id")


def _cell(value: Any) -> Text:
    if isinstance(value, datetime):
        value = value.strftime("%Y-%m-%d %H:%M:%S")
    elif isinstance(value, Enum):
        value = value.value
    # stored values can carry others' text: shown as text, never as Rich markup
    return Text("" if value is None else str(value))


def emit_one(item: Any, *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(to_jsonable(item), indent=2))
        return
    for key, value in to_jsonable(item).items():
        console.print(Text.assemble((str(key), "bold"), ": ", str(value)))


def fail(message: str) -> NoReturn:
    """One clear line and exit 1, as :func:`run` does for an error inside a command."""
    err_console.print(f"[red]error:[/red] {escape(message)}")
    raise typer.Exit(1)


def read_input(source: str) -> str:
    """The text of the file ``source`` (``-``: standard input), or one line saying why not."""
    try:
        return sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        fail(f"cannot read {source}: {exc.strerror}")
    except UnicodeDecodeError:
        fail(f"cannot read {source}: not UTF-8 text")


def parse_json_arg(value: str | None, what: str) -> dict[str, Any]:
    if not value:
        return {}
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(f"{what} must be a JSON object: {exc}") from exc
    if not isinstance(parsed, dict):
        raise typer.BadParameter(f"{what} must be a JSON object")
    return parsed
