"""A person's folders on disk (``Documents`` and ``Invoices`` under a home, and a ``private``
folder beside it that no connection reaches), connected through the facade, and the folder
tools called as the harness calls them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from steward.connectors.base import ConnectorEnv
from steward.connectors.folder.connector import CONNECTOR
from steward.connectors.folder.sources import FilesSource
from steward.domain.authority import Connection
from steward.domain.clock import Clock
from steward.harness.tools import Tool, ToolContext
from steward.harness.workspace import Workspace
from steward.sentinel.egress import EgressBroker
from steward.sentinel.vault import Vault, VaultKeys, generate_key
from steward.service import Service
from steward.store import Store

SECRET = "the private diary, outside every root"


@dataclass(kw_only=True)
class Folders:
    """One person, their folders, and a facade to connect them with."""

    home: Path
    """Where ``Documents`` and ``Invoices`` are."""
    outside: Path
    """A folder no connection reaches, holding ``diary.txt`` (:data:`SECRET`)."""
    store: Store
    clock: Clock
    svc: Service
    env: ConnectorEnv
    person_id: str
    _tools: dict[str, Tool] = field(default_factory=dict)

    @property
    def documents(self) -> Path:
        return self.home / "Documents"

    @property
    def invoices(self) -> Path:
        return self.home / "Invoices"

    async def connect(self, *, name: str = "files", read_only: bool = False) -> Connection:
        """Both folders, connected through the facade (no credential: none is asked for)."""
        done = await self.svc.connect(
            person_id=self.person_id,
            kind="folder",
            name=name,
            settings={
                "roots": f"{self.documents}, Invoices={self.invoices}",
                "time_zone": "Europe/Paris",
            },
            read_only=read_only,
        )
        return done.connection

    def tools(self) -> dict[str, Tool]:
        if not self._tools:
            self._tools.update({t.name: t for t in CONNECTOR.tools(self.env)})
        return self._tools

    def context(self) -> ToolContext:
        return ToolContext(
            person_id=self.person_id,
            task_id="tsk_test",
            goal_id=None,
            idempotency_key=None,
            workspace=self.env.workspace.person_dir(self.person_id),
            now=self.clock.now(),
        )

    async def call(self, tool: str, /, **args: Any) -> Any:
        found = self.tools()[tool]
        return await found.invoke(found.validate(args), self.context())

    def source(self) -> FilesSource:
        [source] = CONNECTOR.sources(self.env)
        assert isinstance(source, FilesSource)
        return source


async def folders_of(store: Store, clock: Clock, tmp_path: Path) -> Folders:
    """The folders under ``tmp_path``, and a person on ``store`` to connect them."""
    home = tmp_path / "home"
    (home / "Documents" / "taxes").mkdir(parents=True)
    (home / "Invoices").mkdir()
    (home / "Documents" / "taxes" / "2025.txt").write_text("Income: 1,000\n")
    (home / "Documents" / "notes.md").write_text("# Notes\nCall Dana about the lease.\n")
    (home / "Invoices" / "shop-0042.txt").write_text("Invoice 42: 19.99 EUR\n")
    outside = tmp_path / "private"
    outside.mkdir()
    (outside / "diary.txt").write_text(SECRET)
    svc = Service(store, clock, data_dir=tmp_path / "data")
    person = await svc.ensure_person()
    env = ConnectorEnv(
        store=store,
        broker=EgressBroker(store, Vault(VaultKeys(keys=(generate_key(),), source="test"))),
        clock=clock,
        workspace=Workspace(tmp_path / "data" / "workspace"),  # as the service has it
    )
    return Folders(
        home=home,
        outside=outside,
        store=store,
        clock=clock,
        svc=svc,
        env=env,
        person_id=person.id,
    )
