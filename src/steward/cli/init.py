"""``steward init``: first-run setup in the terminal, or by flags for scripts.

It asks for the model (an OpenAI-compatible endpoint — OpenAI, Ollama, vLLM, LM Studio,
llama.cpp —, Anthropic, or none for now) and checks it live, the embeddings, the time zone and
the data directory; writes ``<data dir>/steward.toml`` (editing the file in place, so a
person's own comments and tables survive); creates the database and the person; makes a control
token; and says what to run next. Run again, it offers the current values as defaults and
changes only what it is told: the database is only ever migrated, never recreated.

The model's API key goes into ``steward.toml`` (mode 0600): the vault holds each person's
secrets for their tools, opened by the broker at the boundary, while the model is the
process's, configured before any database is opened.
"""

from __future__ import annotations

import asyncio
import functools
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.markup import escape

from steward.cli.common import console, err_console

PROVIDERS = ("openai", "anthropic", "none")
"""``openai`` is any OpenAI-compatible endpoint; ``none`` leaves the model for later."""
EMBEDDINGS = ("none", "minilm", "openai")
DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-5"}
MODEL_KEYS = ("model_provider", "model", "model_base_url", "model_api_key")
ENDPOINT_HELP = (
    "empty for OpenAI itself; Ollama http://localhost:11434/v1, vLLM http://<host>:8000/v1, "
    "LM Studio http://localhost:1234/v1"
)


@dataclass(kw_only=True, frozen=True)
class Answers:
    """What ``steward init`` was told, by prompts or flags."""

    data_dir: Path
    """Where the database, the workspace and ``steward.toml`` live."""
    provider: str
    """One of :data:`PROVIDERS`."""
    base_url: str
    """The endpoint; empty: the provider's own."""
    model: str
    """The model's name at the endpoint; empty with provider ``none``."""
    api_key: str
    """The key; empty: none (a local endpoint needs none)."""
    embeddings: str
    """One of :data:`EMBEDDINGS`."""
    timezone: str
    """IANA name, e.g. ``Europe/Berlin``."""


def init(
    non_interactive: bool = typer.Option(
        False, "--non-interactive", help="Ask nothing: take the flags, else the current values."
    ),
    data_dir: Path | None = typer.Option(None, help="Data directory (default: the current one)."),
    provider: str | None = typer.Option(None, help="Model provider: openai, anthropic or none."),
    base_url: str | None = typer.Option(None, help=f"Model endpoint ({ENDPOINT_HELP})."),
    model: str | None = typer.Option(None, help="Model name at the endpoint."),
    api_key: str | None = typer.Option(
        None, envvar="STEWARD_INIT_API_KEY", help="API key ($STEWARD_INIT_API_KEY)."
    ),
    embeddings: str | None = typer.Option(None, help="Memory embeddings: none, minilm, openai."),
    timezone: str | None = typer.Option(None, help="Your time zone (default: the system's)."),
    keep_unchecked: bool = typer.Option(
        False, "--keep-unchecked", help="Save the model even if the live check fails."
    ),
    check_timeout: float = typer.Option(10.0, help="Seconds the live check waits."),
    new_token: bool = typer.Option(
        False, "--new-token", help="Make a control token even if one exists."
    ),
) -> None:
    """First-run setup: the model (checked live), embeddings, time zone, data directory;
    writes steward.toml, creates the database and a control token. Safe to run again."""
    given = {
        "provider": provider,
        "base_url": base_url,
        "model": model,
        "api_key": api_key,
        "embeddings": embeddings,
        "timezone": timezone,
    }
    if provider is not None and provider not in PROVIDERS:
        _fail(f"unknown provider {provider!r}; choose {', '.join(PROVIDERS)}")
    if embeddings is not None and embeddings not in _embeddings_here():
        _fail(
            f"embeddings {embeddings!r} cannot run here; choose {', '.join(_embeddings_here())} "
            "(minilm needs: pip install -e '.[embeddings]')"
        )
    if timezone is not None:
        try:
            _zone(timezone)
        except typer.BadParameter as exc:
            _fail(str(exc))
    from steward.config import Settings, config_file  # here: `steward --help` stays fast

    ask = not non_interactive
    where = data_dir or Settings().data_dir
    if ask and data_dir is None:
        where = Path(typer.prompt("Data directory", default=str(where))).expanduser()
    where = where.expanduser().resolve()
    path = where / "steward.toml" if where != _found_data_dir() else config_file()
    document = _load(path)
    current = _current(document, where)
    if provider is None and current.provider == "none" and (model or base_url):
        given["provider"] = "openai"  # an endpoint or a model given: the common kind
    answers = _answer(current, given, ask=ask)
    while answers.provider != "none":
        console.print("checking the model endpoint…")
        check = _check(answers, check_timeout)
        if check.ok:
            console.print(f"[green]ok:[/green] {escape(check.said)}")
            break
        err_console.print(
            f"[red]the model check failed:[/red] {escape(check.said)}", soft_wrap=True
        )
        if keep_unchecked or (ask and typer.confirm("Keep these settings anyway?", default=False)):
            console.print("keeping them; `steward doctor` checks the endpoint again later")
            break
        if not ask:
            _fail("nothing was changed; fix the settings, or pass --keep-unchecked to keep them")
        answers = _answer(answers, {}, ask=True, only_model=True)  # what was said: defaults
    _write(path, document, answers)
    token = asyncio.run(_prepare(answers, new_token=new_token))
    _say_next(answers, path, token)


def _fail(message: str) -> NoReturn:
    err_console.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True)
    raise typer.Exit(1)


def _found_data_dir() -> Path:
    """The data directory a later ``steward`` finds without being told."""
    from steward.config import default_data_dir

    return Path(os.environ.get("STEWARD_DATA_DIR") or default_data_dir()).expanduser().resolve()


def _load(path: Path) -> Any:
    import tomlkit

    if not path.exists():
        return tomlkit.document()
    try:
        return tomlkit.parse(path.read_text())
    except tomlkit.exceptions.ParseError as exc:
        _fail(f"{path} is not valid TOML ({exc}); fix or move it, then run init again")


def _current(document: Any, data_dir: Path) -> Answers:
    """The values in effect: the file's, else the defaults."""
    from tzlocal import get_localzone_name

    def value(key: str) -> str:
        return str(document.get(key, "") or "")

    provider = value("model_provider") or "openai"
    return Answers(
        data_dir=data_dir,
        provider=provider if value("model") else "none",
        base_url=value("model_base_url"),
        model=value("model"),
        api_key=value("model_api_key"),
        embeddings=value("embeddings") or "none",
        timezone=asyncio.run(_person_zone(data_dir)) or get_localzone_name() or "UTC",
    )


async def _person_zone(data_dir: Path) -> str | None:
    """The person's time zone, if a database exists already (none is created to ask)."""
    from steward.config import Settings
    from steward.errors import StewardError
    from steward.service import Service
    from steward.store import Store

    settings = Settings(data_dir=data_dir)
    url = settings.resolved_database_url()
    if not settings.database_url and not (data_dir / "steward.db").exists():
        return None
    try:
        store = await Store.open(url, migrate_schema=False)
    except StewardError:
        return None  # init opens it again to migrate it, and says what fails then
    try:
        return (await Service(store).ensure_person()).timezone
    except StewardError:
        return None
    finally:
        await store.close()


def _answer(
    current: Answers, given: dict[str, str | None], *, ask: bool, only_model: bool = False
) -> Answers:
    """The answers: a flag wins, then (asked) the person's, then the current value."""

    def pick(key: str, prompt: str, default: str, **options: Any) -> str:
        flag = given.get(key)
        if flag is not None:
            return flag
        if not ask:
            return default
        return str(typer.prompt(prompt, default=default, **options)).strip()

    def one_of(choices: tuple[str, ...] | list[str]) -> Any:
        def check(text: str) -> str:
            if text.strip() not in choices:
                raise typer.BadParameter(f"choose one of {', '.join(choices)}")
            return text.strip()

        return check

    provider = pick(
        "provider",
        "Model provider: openai (any OpenAI-compatible endpoint), anthropic or none",
        current.provider,
        value_proc=one_of(PROVIDERS),
    )
    base_url = model = api_key = ""
    if provider != "none":
        same = provider == current.provider
        base_url = pick("base_url", f"Endpoint ({ENDPOINT_HELP})", current.base_url if same else "")
        fallback = current.model if same and current.model else DEFAULT_MODELS[provider]
        model = pick("model", "Model name", fallback)
        kept = current.api_key if same else ""
        api_key = pick(
            "api_key",
            "API key (empty: none, fine for a local endpoint)" + (" [kept]" if kept else ""),
            "",
            hide_input=True,
            show_default=False,
        ) or (kept if given.get("api_key") is None else "")
    if only_model:
        return replace(current, provider=provider, base_url=base_url, model=model, api_key=api_key)
    here = _embeddings_here()
    embeddings = pick(
        "embeddings",
        f"Memory embeddings: {', '.join(here)} (none: lexical recall only)",
        current.embeddings,
        value_proc=one_of(here),
    )
    timezone = pick("timezone", "Your time zone", current.timezone, value_proc=_zone)
    return replace(
        current,
        provider=provider,
        base_url=base_url,
        model=model,
        api_key=api_key,
        embeddings=embeddings,
        timezone=timezone,
    )


def _zone(text: str) -> str:
    """``text`` if it names a time zone this machine knows (else asked again)."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(text.strip())
    except (ValueError, ZoneInfoNotFoundError):
        raise typer.BadParameter(
            f"unknown time zone {text.strip()!r}; give an IANA name like Europe/Berlin"
        ) from None
    return text.strip()


def _embeddings_here() -> list[str]:
    """The choices this installation can run: MiniLM only with its extra installed."""
    from steward.config import Settings
    from steward.errors import ConfigError
    from steward.memory.embedding import embedder_from

    try:
        embedder_from(Settings(embeddings="minilm"))
    except ConfigError:
        return [e for e in EMBEDDINGS if e != "minilm"]
    return list(EMBEDDINGS)


def _check(answers: Answers, timeout: float) -> Any:
    from pydantic import SecretStr

    from steward.app import check_model_live
    from steward.config import Settings

    settings = Settings(
        model=answers.model,
        model_provider=answers.provider,
        model_base_url=answers.base_url or None,
        model_api_key=SecretStr(answers.api_key) if answers.api_key else None,
    )
    return asyncio.run(check_model_live(settings, timeout_seconds=timeout))


def _write(path: Path, document: Any, answers: Answers) -> None:
    """Save the answers into ``document`` at ``path`` (0600, replaced atomically)."""
    from steward.filemodes import private_dir

    values = {
        "model_provider": answers.provider,
        "model": answers.model,
        "model_base_url": answers.base_url,
        "model_api_key": answers.api_key,
        "embeddings": answers.embeddings,
    }
    if answers.provider == "none":
        values.update(dict.fromkeys(MODEL_KEYS, ""))
    for key, value in values.items():
        if value:
            document[key] = value
        elif key in document:
            del document[key]
    import tomlkit

    private_dir(path.parent)
    staged = path.with_name(f".{path.name}.new")
    fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(tomlkit.dumps(document))
    os.chmod(staged, 0o600)  # an older staged file keeps its mode through O_CREAT
    staged.replace(path)


async def _prepare(answers: Answers, *, new_token: bool) -> str | None:
    """Create (or migrate) the database, the person with their time zone, and a control token
    unless one exists; the token's plaintext, shown once."""
    from steward.config import Settings, private_data_dir
    from steward.domain.tokens import CONTROL
    from steward.errors import StewardError
    from steward.service import Service
    from steward.store import DatabaseLimits, Store

    settings = Settings(data_dir=answers.data_dir)
    private_data_dir(settings)
    try:
        store = await Store.open(
            settings.resolved_database_url(), limits=DatabaseLimits.of(settings)
        )
    except StewardError as exc:
        _fail(f"the database could not be opened: {exc}")
    try:
        svc = Service(store, data_dir=settings.data_dir)
        person = await svc.ensure_person()
        await svc.set_timezone(answers.timezone, person_id=person.id)
        tokens = await svc.list_tokens(person_id=person.id)
        if not new_token and any(CONTROL in t.scopes and t.revoked_at is None for t in tokens):
            return None
        _, plaintext = await svc.create_token(person_id=person.id, name="init", scopes=[CONTROL])
        return plaintext
    except StewardError as exc:
        _fail(str(exc))
    finally:
        await store.close()


def _say_next(answers: Answers, path: Path, token: str | None) -> None:
    from steward.config import Settings

    settings = Settings(data_dir=answers.data_dir)
    say = functools.partial(console.print, soft_wrap=True)
    say(f"[bold]Steward is set up[/bold] in {escape(str(answers.data_dir))}")
    say(f"  settings: {escape(str(path))} (only you can read it: it holds the model's key)")
    if answers.provider == "none":
        say("  model:    none yet; run `steward init` again to set one")
    else:
        say(f"  model:    {escape(answers.model)} ({answers.provider})")
    say(f"  time:     {escape(answers.timezone)}")
    dashboard = settings.resolved_dashboard_url()
    if token is not None:
        say(f"  token:    {token}  (a control token, shown once: keep it)")
        say(f"  open:     {dashboard}/ once Steward runs, and log in with the token")
    else:
        say(
            f"  open:     {dashboard}/ once Steward runs (you have a control token; "
            "`steward init --new-token` makes another)"
        )
    if answers.data_dir != _found_data_dir():
        say(
            f"  [yellow]note:[/yellow] steward looks in {escape(str(_found_data_dir()))}; "
            f"export STEWARD_DATA_DIR={escape(str(answers.data_dir))} for every command"
        )
    say("next: `steward up` runs it here; `steward service install` runs it as a service")
