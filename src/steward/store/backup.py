"""The database half of a backup: a consistent copy out, a copy back in, and what it holds.

SQLite is copied with its online backup API (``sqlite3.Connection.backup``): one read
transaction, so the copy is consistent while ``steward up`` keeps writing (WAL readers never
block the writer, nor it them). PostgreSQL is dumped with ``pg_dump`` in its custom format (a
consistent snapshot too) and read back with ``pg_restore``; both programs must be installed.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, create_engine, func, inspect, select, text
from sqlalchemy.engine import make_url

from steward.errors import ConfigError
from steward.filemodes import private_file
from steward.store import migrate
from steward.store.schema import memories, persons, secrets, tasks

SQLITE_SUFFIXES = ("", "-wal", "-shm", "-journal")
"""The files of one SQLite database: the file itself and its companions."""


@dataclass(kw_only=True, frozen=True)
class Holdings:
    """What a database holds, as a backup's manifest and a restore's warning name it."""

    revision: str | None
    """The schema revision (None: no Steward schema at all)."""
    persons: int
    """People."""
    tasks: int
    """Tasks, in every status."""
    memories: int
    """Memories, current or not."""
    secrets: int
    """Vault secrets (ciphertext), which only the vault key opens."""

    @property
    def empty(self) -> bool:
        return self.revision is None or (self.persons == 0 and self.tasks == 0)


def backend_name(url: str) -> str:
    """``sqlite`` or ``postgresql``."""
    name = make_url(url).get_backend_name()
    return "postgresql" if name in ("postgresql", "postgres") else name


def sqlite_path(url: str) -> Path:
    return Path(make_url(url).database or "")


def _libpq(url: str) -> str:
    """A SQLAlchemy URL as pg_dump and pg_restore take it (no ``+driver``)."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def _engine(url: str) -> Engine:
    if backend_name(url) == "sqlite":
        # read only: looking must not create the file nor switch its journal mode
        return create_engine(f"sqlite:///file:{sqlite_path(url)}?mode=ro&uri=true")
    return create_engine(make_url(url).set(drivername="postgresql+psycopg"))


def holdings(url: str) -> Holdings:
    """What the database at ``url`` holds (counted at the schema it is at)."""
    if backend_name(url) == "sqlite" and not sqlite_path(url).exists():
        return Holdings(revision=None, persons=0, tasks=0, memories=0, secrets=0)
    engine = _engine(url)
    try:
        revision = migrate.current_revision(engine)
        present = set(inspect(engine).get_table_names())
        counts: dict[str, int] = {}
        with engine.connect() as conn:
            for table in (persons, tasks, memories, secrets):
                counts[table.name] = (
                    int(conn.execute(select(func.count()).select_from(table)).scalar_one())
                    if table.name in present
                    else 0
                )
        return Holdings(revision=revision, **counts)
    finally:
        engine.dispose()


def copy_sqlite(url: str, dest: Path) -> None:
    """A consistent copy of the SQLite database at ``url`` into the new file ``dest``."""
    private_file(dest)
    source = sqlite3.connect(f"file:{sqlite_path(url)}?mode=ro", uri=True, timeout=60)
    try:
        target = sqlite3.connect(dest)
        try:
            # all pages in one step: one read transaction, one snapshot
            source.backup(target)
            # a plain file: the copy must not need a -wal beside it
            target.execute("PRAGMA journal_mode=DELETE")
        finally:
            target.close()
    finally:
        source.close()


def place_sqlite(copy: Path, url: str) -> None:
    """Put the database file ``copy`` where ``url`` says, replacing whatever is there."""
    path = sqlite_path(url)
    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in SQLITE_SUFFIXES:
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    private_file(path)  # created private, then filled
    shutil.copyfile(copy, path)


def _program(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise ConfigError(
            f"{name} is not installed, and a PostgreSQL database is backed up and restored "
            f"with it: install the PostgreSQL client programs (Debian/Ubuntu: apt install "
            f"postgresql-client) of the server's version or newer, then try again"
        )
    return found


def _run(args: list[str], what: str) -> None:
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        raise ConfigError(f"{what} failed: {lines[-1] if lines else f'exit {done.returncode}'}")


def dump_postgres(url: str, dest: Path) -> None:
    """``pg_dump`` of the database at ``url`` in custom format into ``dest``."""
    private_file(dest)
    _run(
        [_program("pg_dump"), "--format=custom", "--no-owner", f"--file={dest}", _libpq(url)],
        "pg_dump",
    )


def restore_postgres(dump: Path, url: str, *, replace: bool) -> None:
    """``pg_restore`` of ``dump`` into the database at ``url``; with ``replace``, what the
    database held is dropped first (every table, in its public schema)."""
    program = _program("pg_restore")
    if replace:
        engine = _engine(url)
        try:
            with engine.begin() as conn:
                conn.execute(text("DROP SCHEMA public CASCADE"))
                conn.execute(text("CREATE SCHEMA public"))
        finally:
            engine.dispose()
    _run(
        [
            program,
            "--no-owner",
            "--exit-on-error",
            "--single-transaction",
            f"--dbname={_libpq(url)}",
            str(dump),
        ],
        "pg_restore",
    )


def known_revision(revision: str) -> bool:
    """Whether this Steward's migrations know the schema ``revision`` (a newer Steward's
    database has one they do not)."""
    return revision in migrate.revisions()


def masked(url: str) -> str:
    """``url`` with its password hidden, for messages."""
    return make_url(url).render_as_string(hide_password=True)
