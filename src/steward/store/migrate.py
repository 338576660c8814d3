"""Schema migrations (Alembic), run programmatically against a backend's engine."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError
from sqlalchemy import Connection, Engine

_HERE = Path(__file__).parent / "migrations"


def _config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(_HERE))
    return cfg


def head_revision() -> str:
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None
    return head


def revisions() -> list[str]:
    """Every revision, first to head."""
    script = ScriptDirectory.from_config(_config())
    return [rev.revision for rev in reversed(list(script.walk_revisions()))]


def is_known(revision: str) -> bool:
    """Whether this code has the migration ``revision`` (an unknown one was written by a newer
    Steward)."""
    try:
        return ScriptDirectory.from_config(_config()).get_revision(revision) is not None
    except CommandError:
        return False


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return connection_revision(conn)


def connection_revision(conn: Connection) -> str | None:
    return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> None:
    cfg = _config()
    with engine.connect() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)
        conn.commit()


def downgrade(engine: Engine, revision: str) -> None:
    cfg = _config()
    with engine.connect() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, revision)
        conn.commit()
