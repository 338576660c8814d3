"""Backup and restore of one Steward: its database, vault key and data directory, in one file.

An archive (tar.gz, optionally sealed with a passphrase, :mod:`steward.service.sealed`) holds

* ``manifest.json``: the Steward version and schema revision that made it, the backend, when,
  and what the database held (people, tasks, memories, secrets; whether the vault key is in);
* ``database/steward.db`` (SQLite, a consistent online copy) or ``database/steward.pgdump``
  (PostgreSQL, ``pg_dump`` custom format);
* ``data/``: every file of the data directory (the vault key, the config file, the person's
  workspace, the environment's records) except the database files and earlier backups.

A restore goes into an empty place only (``force`` replaces what is there, after the caller
said what). Tasks that were running when the backup was taken come back under their old
leases: once those expire a worker takes them up again from their last checkpoint, as after a
crash (the effect journal holds: an effect recorded as applied is not applied again).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import tarfile
import tempfile
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, BinaryIO

import steward
from steward.errors import UsageError
from steward.filemodes import private_dir, private_file
from steward.sentinel.vault import KEY_ENV, KEY_FILE
from steward.service.sealed import OpeningReader, SealingWriter, is_sealed
from steward.store import backup as db
from steward.store.migrate import head_revision

MANIFEST = "manifest.json"
CONFIG_FILE = "steward.toml"
BACKUPS_DIR = "backups"
"""Where ``steward upgrade`` keeps the backup it takes first, in the data directory."""
_KEPT = frozenset({CONFIG_FILE, BACKUPS_DIR})
"""What a restore neither counts as data in the way nor replaces: the new machine's config
file (already written by the person) and its backups."""
_DUMP = {"sqlite": "database/steward.db", "postgresql": "database/steward.pgdump"}


@dataclass(kw_only=True, frozen=True)
class Manifest:
    """What a backup holds, written into it as ``manifest.json``."""

    steward_version: str
    """The Steward that made it."""
    schema_revision: str | None
    """The database schema's revision then."""
    backend: str
    """``sqlite`` or ``postgresql``: which kind of database it restores into."""
    created_at: str
    """When it was taken (ISO 8601, UTC)."""
    persons: int
    """People in the database."""
    tasks: int
    """Tasks, in every status."""
    memories: int
    """Memories."""
    secrets: int
    """Vault secrets: they open only with the vault key."""
    vault_key: bool
    """Whether the vault key file is in the archive (not when it came from
    ``$STEWARD_VAULT_KEY``)."""


@dataclass(kw_only=True, frozen=True)
class BackupResult:
    """A backup taken."""

    path: Path
    """The archive."""
    manifest: Manifest
    """What it holds."""
    size_bytes: int
    """Its size."""
    sealed: bool
    """Whether a passphrase seals it."""


@dataclass(kw_only=True, frozen=True)
class RestoreResult:
    """A backup restored."""

    manifest: Manifest
    """What it held."""
    replaced: list[str]
    """What was there before and is now gone (empty unless forced)."""
    kept_config: bool
    """The config file already at the target was kept (the archive's was not written)."""


def take_backup(
    *, url: str, data_dir: Path, dest: Path, now: datetime, passphrase: str | None = None
) -> BackupResult:
    """Write a backup of the database at ``url`` and of ``data_dir`` to ``dest``."""
    backend = db.backend_name(url)
    if backend not in _DUMP:
        raise UsageError(f"cannot back up a {backend} database: Steward uses SQLite or PostgreSQL")
    if dest.exists() and dest.is_dir():
        raise UsageError(f"{dest} is a folder: give the backup file's name")
    dest.parent.mkdir(parents=True, exist_ok=True)
    held = db.holdings(url)
    if held.revision is None:
        raise UsageError(f"there is no Steward database at {_where(url)} to back up")
    with tempfile.TemporaryDirectory(prefix="steward-backup-") as scratch:
        dump = Path(scratch) / Path(_DUMP[backend]).name
        if backend == "sqlite":
            db.copy_sqlite(url, dump)
        else:
            db.dump_postgres(url, dump)
        # counted again on the copy itself: the live database moved on meanwhile
        if backend == "sqlite":
            held = db.holdings(f"sqlite:///{dump}")
        manifest = Manifest(
            steward_version=steward.__version__,
            schema_revision=held.revision,
            backend=backend,
            created_at=now.isoformat(),
            persons=held.persons,
            tasks=held.tasks,
            memories=held.memories,
            secrets=held.secrets,
            vault_key=(data_dir / KEY_FILE).is_file(),
        )
        (Path(scratch) / MANIFEST).write_text(json.dumps(asdict(manifest), indent=2))
        partial = dest.with_name(dest.name + ".partial")
        private_file(partial)
        skip = _not_data(url, data_dir, dest, partial)
        try:
            with (
                partial.open("wb") as out,
                _sealing(out, passphrase) as stream,
                tarfile.open(fileobj=stream, mode="w|gz") as tar,
            ):
                tar.add(Path(scratch) / MANIFEST, arcname=MANIFEST)
                tar.add(dump, arcname=_DUMP[backend])
                if data_dir.is_dir():
                    tar.add(
                        data_dir,
                        arcname="data",
                        filter=lambda info: None if info.name in skip else info,
                    )
            partial.replace(dest)
        finally:
            partial.unlink(missing_ok=True)
    return BackupResult(
        path=dest,
        manifest=manifest,
        size_bytes=dest.stat().st_size,
        sealed=passphrase is not None,
    )


def _not_data(url: str, data_dir: Path, *made: Path) -> set[str]:
    """Archive names of what ``data/`` leaves out: the database files (copied consistently
    on their own), earlier backups, and the archive being written."""
    skip = {f"data/{BACKUPS_DIR}"}
    paths = list(made)
    if db.backend_name(url) == "sqlite":
        path = db.sqlite_path(url)
        paths += [path.with_name(path.name + suffix) for suffix in db.SQLITE_SUFFIXES]
    for path in paths:
        with contextlib.suppress(ValueError):
            skip.add("data/" + path.resolve().relative_to(data_dir.resolve()).as_posix())
    return skip


@contextlib.contextmanager
def _sealing(out: BinaryIO, passphrase: str | None) -> Iterator[BinaryIO]:
    if passphrase is None:
        yield out
        return
    writer = SealingWriter(out, passphrase)
    try:
        yield writer  # type: ignore[misc]
    finally:
        writer.close()


def read_manifest(source: Path, *, passphrase: str | None = None) -> Manifest:
    """The manifest of the backup ``source`` (its first member: read without unpacking)."""
    with (
        _unreadable(source),
        _opened(source, passphrase) as stream,
        tarfile.open(fileobj=stream, mode="r|gz") as tar,
    ):
        for member in tar:
            if member.name == MANIFEST:
                return _manifest(tar.extractfile(member), source)
            break
    raise UsageError(f"{source} is not a Steward backup (it has no manifest)")


@contextlib.contextmanager
def _unreadable(source: Path) -> Iterator[None]:
    """An archive the tar and gzip readers fail on, as one plain line."""
    try:
        yield
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise UsageError(f"{source} is damaged or not a Steward backup ({exc})") from None


def _manifest(raw: IO[bytes] | None, source: Path) -> Manifest:
    try:
        return Manifest(**json.loads(raw.read() if raw else b""))
    except (ValueError, TypeError) as exc:
        raise UsageError(f"{source} has a damaged manifest ({exc})") from None


@contextlib.contextmanager
def _opened(source: Path, passphrase: str | None) -> Iterator[BinaryIO]:
    if not source.is_file():
        raise UsageError(f"no backup file at {source}")
    with source.open("rb") as raw:
        sealed = is_sealed(raw.read(64))
        raw.seek(0)
        if not sealed:
            yield raw
            return
        if passphrase is None:
            raise UsageError(
                f"{source} is sealed with a passphrase: give it with --passphrase-env VAR "
                "(the name of an environment variable holding it)"
            )
        yield OpeningReader(raw, passphrase)  # type: ignore[misc]


def in_the_way(*, url: str, data_dir: Path) -> list[str]:
    """What a restore into ``url`` and ``data_dir`` would replace, in plain words (empty: the
    place is empty)."""
    found: list[str] = []
    held = db.holdings(url)
    if not held.empty:
        found.append(
            f"the database at {_where(url)} ({held.persons} people, {held.tasks} tasks, "
            f"{held.memories} memories, {held.secrets} secrets)"
        )
    skip = _not_data(url, data_dir)
    if data_dir.is_dir():
        for entry in sorted(data_dir.iterdir()):
            if entry.name not in _KEPT and f"data/{entry.name}" not in skip:
                found.append(str(entry) + ("/" if entry.is_dir() else ""))
    return found


def restore_backup(
    *,
    source: Path,
    url: str,
    data_dir: Path,
    passphrase: str | None = None,
    force: bool = False,
    environ: Mapping[str, str] | None = None,
) -> RestoreResult:
    """Restore the backup ``source`` into the database at ``url`` and ``data_dir``, which
    must be empty unless ``force``; checked first, so a refused restore changes nothing."""
    env = os.environ if environ is None else environ
    manifest = read_manifest(source, passphrase=passphrase)
    _check(manifest, url=url, has_env_key=bool(env.get(KEY_ENV, "").strip()))
    replaced = in_the_way(url=url, data_dir=data_dir)
    if replaced and not force:
        raise UsageError(
            "the place to restore into is not empty; restoring would replace "
            + "; ".join(replaced)
            + ". Stop Steward, then run again with --force to replace them"
        )
    with tempfile.TemporaryDirectory(prefix="steward-restore-") as scratch:
        root = Path(scratch)
        with (
            _unreadable(source),
            _opened(source, passphrase) as stream,
            tarfile.open(fileobj=stream, mode="r|gz") as tar,
        ):
            # the "data" filter refuses absolute paths, links out of the folder, devices
            tar.extractall(root, filter="data")
        dump = root / _DUMP[manifest.backend]
        if not dump.is_file():
            raise UsageError(f"{source} is damaged: its database copy is missing")
        private_dir(data_dir)
        _clear(data_dir, url)
        if manifest.backend == "sqlite":
            db.place_sqlite(dump, url)
        else:
            # a Steward schema already there (even with no data in it) is replaced whole
            schema = db.holdings(url).revision is not None
            db.restore_postgres(dump, url, replace=schema)
        kept_config = _place_files(root / "data", data_dir)
    return RestoreResult(manifest=manifest, replaced=replaced, kept_config=kept_config)


def _check(manifest: Manifest, *, url: str, has_env_key: bool) -> None:
    backend = db.backend_name(url)
    if manifest.backend != backend:
        raise UsageError(
            f"this backup is of a {manifest.backend} database and the target is {backend}: "
            f"restore it into a {manifest.backend} database (--db or STEWARD_DATABASE_URL)"
        )
    if manifest.schema_revision is not None and not db.known_revision(manifest.schema_revision):
        raise UsageError(
            f"this backup was made by Steward {manifest.steward_version}, whose database "
            f"schema is newer than this Steward's ({steward.__version__}, schema "
            f"{head_revision()}): install Steward {manifest.steward_version} or newer, then "
            "restore with it. Nothing was changed"
        )
    if manifest.secrets and not manifest.vault_key and not has_env_key:
        raise UsageError(
            f"this backup holds {manifest.secrets} secret(s) but not the vault key that opens "
            f"them (it was given by ${KEY_ENV} when the backup was taken): set ${KEY_ENV} to "
            "that key and restore again. Without it the secrets (account passwords, tokens) "
            "could never be read. Nothing was changed"
        )


def _clear(data_dir: Path, url: str) -> None:
    """Remove what a forced restore replaces (the config file and backups stay)."""
    if db.backend_name(url) == "sqlite":
        path = db.sqlite_path(url)
        for suffix in db.SQLITE_SUFFIXES:
            path.with_name(path.name + suffix).unlink(missing_ok=True)
    for entry in data_dir.iterdir():
        if entry.name in _KEPT:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def _place_files(unpacked: Path, data_dir: Path) -> bool:
    """Move the archive's data files into ``data_dir``; True if the config file there was
    kept rather than replaced."""
    kept = False
    if not unpacked.is_dir():
        return kept
    for entry in unpacked.iterdir():
        target = data_dir / entry.name
        if entry.name == BACKUPS_DIR:
            continue
        if entry.name == CONFIG_FILE and target.exists():
            kept = True
            continue
        shutil.move(entry, target)
    return kept


def _where(url: str) -> str:
    if db.backend_name(url) == "sqlite":
        return str(db.sqlite_path(url))
    return db.masked(url)
