"""``steward backup``, ``steward restore`` and ``steward upgrade``: one file holding the
database, the vault key and the data directory, and a schema upgrade that takes one first.

They work on this machine's database and data directory (never through a server): a backup
of a running Steward is consistent (SQLite's online backup, ``pg_dump``'s snapshot); a restore
wants Steward stopped.
"""

from __future__ import annotations

import os
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from steward.cli.common import DbOption, console, err_console
from steward.cli.remote import TOKEN_ENV
from steward.errors import StewardError, UsageError

if TYPE_CHECKING:
    from steward.config import Settings

PassphraseOption = typer.Option(
    None,
    "--passphrase-env",
    metavar="VAR",
    help="Seal (or open) the archive with the passphrase in this environment variable.",
)


def _owner_only(what: str) -> None:
    """The whole machine's data is the owner's: refused to an API token, as the facade's
    maintenance is (a token holder acts through the facade, on their own data only)."""
    if os.environ.get(TOKEN_ENV):
        raise _fail(UsageError(f"{what} is for the machine's owner, not an API token"))


def _passphrase(var: str | None) -> str | None:
    if var is None:
        return None
    value = os.environ.get(var, "")
    if not value:
        raise UsageError(f"--passphrase-env {var}: the environment variable {var} is not set")
    return value


def _size(size: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024  # type: ignore[assignment]
    raise AssertionError("unreachable")


def _fail(exc: StewardError) -> typer.Exit:
    err_console.print(f"[red]error:[/red] {exc}")
    return typer.Exit(1)


def _backup(url: str, data_dir: Path, dest: Path, passphrase: str | None) -> None:
    from steward.domain.clock import Clock
    from steward.service.backup import take_backup

    made = take_backup(
        url=url,
        data_dir=data_dir,
        dest=dest,
        passphrase=passphrase,
        now=Clock().now().astimezone(UTC),
    )
    m = made.manifest
    console.print(
        f"Backed up to {made.path} ({_size(made.size_bytes)}): {m.persons} people, {m.tasks} "
        f"tasks, {m.memories} memories, {m.secrets} secrets; Steward {m.steward_version}, "
        f"schema {m.schema_revision}, {m.backend}."
    )
    if m.vault_key and not made.sealed:
        console.print(
            "[yellow]This archive holds your vault key: keep it safe[/yellow] (whoever has it "
            "can read every stored secret). Seal it with --passphrase-env VAR next time."
        )
    elif not m.vault_key and m.secrets:
        console.print(
            "[yellow]The vault key is not in this archive[/yellow] (it comes from "
            "$STEWARD_VAULT_KEY): keep that key too, or the secrets cannot be restored."
        )


def backup(
    to: Path | None = typer.Option(
        None, "--to", help="The archive to write (default: steward-<date>.tar.gz here)."
    ),
    passphrase_env: str | None = PassphraseOption,
    db: str | None = DbOption,
) -> None:
    """Back up the database, the vault key and the data directory into one file."""
    _owner_only("a backup")
    from steward.config import Settings
    from steward.domain.clock import Clock

    settings = Settings()
    stamp = Clock().now().astimezone(UTC).strftime("%Y%m%d-%H%M%S")
    try:
        _backup(
            db or settings.resolved_database_url(),
            settings.data_dir,
            to or Path(f"steward-{stamp}.tar.gz"),
            _passphrase(passphrase_env),
        )
    except StewardError as exc:
        raise _fail(exc) from None


def restore(
    file: Path = typer.Argument(..., help="The backup to restore."),
    force: bool = typer.Option(
        False, "--force", help="Replace the database and data files that are already there."
    ),
    passphrase_env: str | None = PassphraseOption,
    db: str | None = DbOption,
) -> None:
    """Restore a backup into an empty data directory and database (Steward stopped)."""
    _owner_only("a restore")
    from steward.config import Settings
    from steward.service.backup import restore_backup

    settings = Settings()
    try:
        done = restore_backup(
            source=file,
            url=db or settings.resolved_database_url(),
            data_dir=settings.data_dir,
            passphrase=_passphrase(passphrase_env),
            force=force,
        )
    except StewardError as exc:
        raise _fail(exc) from None
    m = done.manifest
    for what in done.replaced:
        console.print(f"replaced: {what}")
    console.print(
        f"Restored the backup of {m.created_at} (Steward {m.steward_version}): {m.persons} "
        f"people, {m.tasks} tasks, {m.memories} memories, {m.secrets} secrets, into "
        f"{settings.data_dir}."
    )
    if done.kept_config:
        console.print("The config file already there (steward.toml) was kept.")
    console.print(
        "Start Steward as usual: tasks that were running when the backup was taken resume "
        "from their last checkpoint, and an older schema is brought up to date."
    )


def upgrade(db: str | None = DbOption) -> None:
    """Back up into the data directory's backups/, then bring the schema up to date."""
    _owner_only("an upgrade")
    from steward.config import Settings, private_data_dir
    from steward.service.backup import BACKUPS_DIR
    from steward.store import backup as stored
    from steward.store import migrate

    settings = Settings()
    private_data_dir(settings)
    url = db or settings.resolved_database_url()
    try:
        held = stored.holdings(url)
        head = migrate.head_revision()
        if held.revision == head:
            console.print(f"The database is up to date (schema {head}): nothing to do.")
            return
        if held.revision is not None:
            dest = settings.data_dir / BACKUPS_DIR / f"before-{head}-from-{held.revision}.tar.gz"
            _backup(url, settings.data_dir, dest, None)
        _migrate(url, settings)
    except StewardError as exc:
        raise _fail(exc) from None
    console.print(f"Upgraded the schema from {held.revision or 'nothing'} to {head}.")


def _migrate(url: str, settings: Settings) -> None:
    import asyncio

    from steward.store import DatabaseLimits, Store

    async def main() -> None:
        # opening migrates a database that is behind
        await (await Store.open(url, limits=DatabaseLimits.of(settings))).close()

    asyncio.run(main())
