"""Settings from the environment (``STEWARD_*``) and flags. Pydantic lives here, at the edge."""

from __future__ import annotations

from pathlib import Path

from platformdirs import user_data_dir
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_data_dir() -> Path:
    return Path(user_data_dir("steward", appauthor=False))


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="STEWARD_", extra="ignore")

    data_dir: Path = Field(default_factory=default_data_dir)
    """Where the embedded database and the person's workspace live."""
    database_url: str | None = None
    """``sqlite:///path`` or ``postgresql://…``; default: SQLite in :attr:`data_dir`."""
    person: str | None = None
    """Which person the CLI acts for (id); default: the only/first person."""

    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.data_dir / 'steward.db'}"
