"""Schema migrations (Alembic), run programmatically against a backend's engine.

Alembic is imported only to migrate or to walk the history: opening a current database (every
command) reads its revision with one query and compares it with the newest migration's file
name, which costs no import of Alembic's ~120 ms.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, String, column, inspect, select, table

if TYPE_CHECKING:
    from alembic.config import Config

_HERE = Path(__file__).parent / "migrations"
_VERSION_TABLE = "alembic_version"
"""Where Alembic keeps a database's revision (its default name)."""


def _config() -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(_HERE))
    return cfg


def head_revision() -> str:
    """The newest migration's revision: each file in ``versions`` is named after its revision
    (``0017_workers.py`` is ``0017``, a test holds them together), so the greatest name is the
    head."""
    return max(path.name.split("_", 1)[0] for path in (_HERE / "versions").glob("[0-9]*_*.py"))


def revisions() -> list[str]:
    """Every revision, first to head."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(_config())
    return [rev.revision for rev in reversed(list(script.walk_revisions()))]


def is_known(revision: str) -> bool:
    """Whether this code has the migration ``revision`` (an unknown one was written by a newer
    Steward)."""
    from alembic.script import ScriptDirectory
    from alembic.util.exc import CommandError

    try:
        return ScriptDirectory.from_config(_config()).get_revision(revision) is not None
    except CommandError:
        return False


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return connection_revision(conn)


def connection_revision(conn: Connection) -> str | None:
    """The revision the database is at, as Alembic reads it (None: not set up)."""
    if not inspect(conn).has_table(_VERSION_TABLE):
        return None
    version = column("version_num", String)
    found = conn.execute(select(version).select_from(table(_VERSION_TABLE))).scalars().all()
    # a linear history leaves one row (none only before the first migration)
    return max(found) if found else None


def upgrade(engine: Engine, revision: str = "head") -> None:
    from alembic import command

    cfg = _config()
    with engine.connect() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)
        conn.commit()


def downgrade(engine: Engine, revision: str) -> None:
    from alembic import command

    cfg = _config()
    with engine.connect() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, revision)
        conn.commit()
