"""``steward doctor``: what is wrong with this installation, each finding with its fix.

Each check looks at one thing a home installation gets wrong: the database (reachable, at this
version's schema, its clock), the vault key (there, and opening the stored secrets), the model
server (a real request to it), the connected accounts (signing in again), the data directory's
free space and who may read it. Nothing is changed: no schema upgrade, no key created, no file
tightened (Steward does those when it starts).
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx

from steward.config import Settings
from steward.domain.clock import Clock
from steward.errors import ConfigError, DatabaseUnavailable
from steward.sentinel.vault import KEY_ENV, KEY_FILE, Vault, VaultKeys
from steward.service import Service
from steward.store import Store

MODEL_TIMEOUT_SECONDS = 5.0
"""How long the model server has to answer its list of models."""
CLOCK_SKEW_SECONDS = 5.0
"""More than this between this host's clock and the database's breaks leases and schedules."""
LOW_DISK_BYTES = 1 << 30
"""Less free space than this in the data directory is worth a warning..."""
FULL_DISK_BYTES = 200 << 20
"""...and less than this is a problem: the database cannot grow."""
DEFAULT_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com/v1",
}


class Level(StrEnum):
    OK = "ok"
    WARNING = "warning"
    PROBLEM = "problem"


@dataclass(kw_only=True, frozen=True)
class Finding:
    """What one check found."""

    check: str
    """What was checked, in a word or two."""
    level: Level
    """Fine, worth knowing, or in the way of Steward working."""
    said: str
    """What was found, in a plain sentence."""
    fix: str | None = None
    """What to do about it (None when there is nothing to do)."""


def ok(check: str, said: str) -> Finding:
    return Finding(check=check, level=Level.OK, said=said)


def problem(check: str, said: str, fix: str) -> Finding:
    return Finding(check=check, level=Level.PROBLEM, said=said, fix=fix)


def warning(check: str, said: str, fix: str) -> Finding:
    return Finding(check=check, level=Level.WARNING, said=said, fix=fix)


async def diagnose(
    settings: Settings,
    *,
    database_url: str,
    clock: Clock,
    client_factory: Callable[..., httpx.AsyncClient] = httpx.AsyncClient,
) -> list[Finding]:
    """Every check's finding, in the order a person would fix them."""
    findings = [*files(settings), disk(settings.data_dir)]
    try:
        store = await Store.open(database_url, migrate_schema=False)
    except (DatabaseUnavailable, ConfigError) as exc:
        findings.append(
            problem(
                "database",
                f"the database at {_redacted(database_url)} is not answering: {exc}",
                "start the database server, or correct STEWARD_DATABASE_URL (or --db)",
            )
        )
        findings.append(await model(settings, client_factory))
        return findings
    try:
        svc = Service(store, clock, data_dir=settings.data_dir)
        schema = await database(store, svc)
        findings += [schema, await clock_skew(store, clock)]
        # a database without tables holds no secrets yet
        tables = await store.schema_revision() is not None
        findings.append(await vault(store if tables else None, settings.data_dir))
        findings.append(await model(settings, client_factory))
        if schema.level is Level.OK:  # older tables may lack what the connections need
            findings += await connections(store, svc)
    finally:
        await store.close()
    return findings


def files(settings: Settings) -> list[Finding]:
    """The data directory, the vault key and an SQLite database: readable by their owner only."""
    paths = [settings.data_dir, settings.data_dir / KEY_FILE]
    url = settings.resolved_database_url()
    if url.startswith("sqlite:///"):
        paths.append(Path(url.removeprefix("sqlite:///")))
    found = []
    for path in paths:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            continue
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            private = "700" if path.is_dir() else "600"
            found.append(
                problem(
                    "permissions",
                    f"{path} can be opened by other users of this machine (mode {mode:o})",
                    f"chmod {private} {path} (Steward also tightens it when it next starts)",
                )
            )
    return found or [ok("permissions", f"{settings.data_dir} and its files are private")]


def disk(data_dir: Path) -> Finding:
    where = data_dir if data_dir.exists() else _existing_parent(data_dir)
    free = shutil.disk_usage(where).free
    said = f"{_size(free)} free for {data_dir}"
    if free < FULL_DISK_BYTES:
        return problem("disk", said, "free some space there: the database cannot grow")
    if free < LOW_DISK_BYTES:
        return warning("disk", said, "free some space there soon")
    return ok("disk", said)


async def database(store: Store, svc: Service) -> Finding:
    reason = await svc.readiness()
    if reason is None:
        return ok("database", f"{store.url} answers, at this version's schema")
    fix = "upgrade Steward" if "newer" in reason else "run 'steward db upgrade'"
    return problem("database", reason.rsplit(": run", 1)[0].rsplit(": upgrade", 1)[0], fix)


async def clock_skew(store: Store, clock: Clock) -> Finding:
    try:
        theirs = await store.database_time()
    except DatabaseUnavailable as exc:
        return problem("clock", f"could not read the database's clock: {exc}", "see database")
    skew = (clock.now() - theirs).total_seconds()
    if abs(skew) <= CLOCK_SKEW_SECONDS:
        return ok("clock", f"this host's clock and the database's agree ({skew:+.1f} s)")
    ahead = "ahead of" if skew > 0 else "behind"
    return problem(
        "clock",
        f"this host's clock is {abs(skew):.0f} s {ahead} the database's: leases and schedules "
        "go wrong",
        "keep both clocks synchronised (timedatectl set-ntp true, or chrony) on this host and "
        "the database's",
    )


async def vault(store: Store | None, data_dir: Path) -> Finding:
    """The key is there if secrets are stored, and opens them (``store``: None before the
    database has tables)."""
    stored = 0 if store is None else await store.secrets.count_secrets()
    path = data_dir / KEY_FILE
    if not os.environ.get(KEY_ENV) and not path.exists():
        if not stored:
            return ok("vault key", f"no key yet: {path} is made when the first secret is stored")
        return problem(
            "vault key",
            f"the vault key {path} is missing, and the database holds {stored} secret(s) "
            "encrypted with it",
            f"restore {path} from your backup (or set ${KEY_ENV} to the key)",
        )
    try:
        keys = VaultKeys.load(data_dir, stored_secrets=stored)
        opened = Vault(keys)
        for ciphertext in [] if store is None else await store.secrets.sample_ciphertexts():
            opened.decrypt(ciphertext)
    except ConfigError as exc:
        return problem(
            "vault key",
            f"the vault key does not open the stored secrets: {exc}",
            f"restore the key that encrypted them ({path}, or ${KEY_ENV})",
        )
    return ok("vault key", f"the key from {keys.source} opens the {stored} stored secret(s)")


async def model(settings: Settings, client_factory: Callable[..., httpx.AsyncClient]) -> Finding:
    if settings.model_provider == "scripted":
        return ok("model", f"scripted answers from {settings.model_script}")
    if settings.model is None:
        return warning(
            "model",
            "no model is configured: agent tasks wait for a worker that has one",
            "set STEWARD_MODEL (and STEWARD_MODEL_BASE_URL for a local server such as Ollama)",
        )
    base = settings.model_base_url or DEFAULT_BASE_URLS.get(settings.model_provider, "")
    url = base.rstrip("/") + "/models"
    key = settings.model_api_key.get_secret_value() if settings.model_api_key else None
    headers = {"Authorization": f"Bearer {key}", "x-api-key": key} if key else {}
    try:
        async with client_factory(timeout=MODEL_TIMEOUT_SECONDS) as client:
            answer = await client.get(url, headers=headers)
    except httpx.HTTPError as exc:
        return problem(
            "model",
            f"the model server at {base} does not answer ({type(exc).__name__}: {exc})",
            "start it (for Ollama: ollama serve), or correct STEWARD_MODEL_BASE_URL",
        )
    if answer.status_code in (401, 403):
        return problem(
            "model",
            f"the model server at {base} refused the API key (HTTP {answer.status_code})",
            "check STEWARD_MODEL_API_KEY",
        )
    if answer.status_code >= 500:
        return problem(
            "model",
            f"the model server at {base} answers with an error (HTTP {answer.status_code})",
            "look at the model server's own logs",
        )
    return ok("model", f"{settings.model} at {base} answers (HTTP {answer.status_code})")


async def connections(store: Store, svc: Service) -> list[Finding]:
    """Each active connected account signs in again (its connector's own test). A connection
    made only to hold authority (`steward connection add`: an HTTP host a grant may pay, say)
    has no login to test."""
    found = []
    for connection in await store.authority.list_active_connections():
        if not connection.settings and connection.secret is None:
            continue
        try:
            checked = await svc.test_connection(connection.name, person_id=connection.person_id)
            said, fine = checked.said, checked.ok
        except Exception as exc:  # one account's failure is its finding, not the doctor's end
            said, fine = str(exc), False
        name = f"account {connection.name}"
        found.append(
            ok(name, said)
            if fine
            else problem(name, said, f"steward connect {connection.kind} again, or disconnect it")
        )
    return found


def _existing_parent(path: Path) -> Path:
    return next(p for p in path.parents if p.exists())


def _size(n: int) -> str:
    return f"{n / (1 << 30):.1f} GB" if n >= 1 << 30 else f"{n >> 20} MB"


def _redacted(url: str) -> str:
    """``url`` without its password (it may end up in a terminal's scrollback)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))
