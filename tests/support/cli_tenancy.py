"""Every CLI command, aimed at another person's objects, at the owner's business, or at no one's
data, and a database with two tenants to run them on: for the CLI's tenant-isolation tests,
local and remote."""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from steward.cli.main import app
from steward.domain.clock import Clock
from steward.store import Store
from support.screenshots import png, record_look
from support.tenancy import Tenant, make_tenant, state_of

Argv = Callable[[Tenant], list[str]]


def _statements() -> str:
    """A file of two statements to import (one written once per process)."""
    path = Path(tempfile.gettempdir()) / f"steward-cli-tenancy-{os.getpid()}.jsonl"
    if not path.exists():
        path.write_text('{"content": "Likes tea"}\n{"content": "Walks to work", "ref": "w1"}\n')
    return str(path)


TARGETED: dict[str, Argv] = {
    "ask": lambda t: ["ask", "hello", "--person", t.person.id],
    "chat": lambda t: ["chat", "--task", t.task.id],
    "answer": lambda t: ["answer", t.task.id, "yes"],
    "inbox": lambda t: ["inbox", "--person", t.person.id],
    "goal create": lambda t: ["goal", "create", "x", "--person", t.person.id],
    "goal list": lambda t: ["goal", "list", "--person", t.person.id],
    "goal show": lambda t: ["goal", "show", t.goal.id],
    "goal budget": lambda t: ["goal", "budget", t.goal.id, "--max-steps", "3"],
    "goal pause": lambda t: ["goal", "pause", t.goal.id],
    "goal resume": lambda t: ["goal", "resume", t.goal.id],
    "goal cancel": lambda t: ["goal", "cancel", t.goal.id],
    "goal complete": lambda t: ["goal", "complete", t.goal.id],
    "goal timeline": lambda t: ["goal", "timeline", t.goal.id],
    "task create": lambda t: ["task", "create", "noop", "--person", t.person.id],
    "task list": lambda t: ["task", "list", "--person", t.person.id],
    "task show": lambda t: ["task", "show", t.task.id],
    "task cancel": lambda t: ["task", "cancel", t.task.id],
    "task pause": lambda t: ["task", "pause", t.task.id],
    "task resume": lambda t: ["task", "resume", t.task.id],
    "trigger add": lambda t: ["trigger", "add", "cron", "0 9 * * *", "--person", t.person.id],
    "trigger list": lambda t: ["trigger", "list", "--person", t.person.id],
    "trigger enable": lambda t: ["trigger", "enable", t.trigger.id],
    "trigger disable": lambda t: ["trigger", "disable", t.trigger.id],
    "trigger budget": lambda t: ["trigger", "budget", t.trigger.id, "--runs", "3"],
    "trigger follow-ups": lambda t: ["trigger", "follow-ups", t.goal.id],
    "event send": lambda t: ["event", "send", "ping", "--person", t.person.id],
    "event list": lambda t: ["event", "list", "--person", t.person.id],
    "effect list": lambda t: ["effect", "list", "--task", t.task.id],
    "effect resolve": lambda t: ["effect", "resolve", t.effect.id, "--applied"],
    "approval list": lambda t: ["approval", "list", "--person", t.person.id],
    "approval approve": lambda t: ["approval", "approve", t.approval.id, "--for", "always"],
    "approval deny": lambda t: ["approval", "deny", t.approval.id],
    "audit list": lambda t: ["audit", "list", "--person", t.person.id],
    "token create": lambda t: [
        "token",
        "create",
        "x",
        "--scope",
        "control",
        "--person",
        t.person.id,
    ],
    "token list": lambda t: ["token", "list", "--person", t.person.id],
    "token revoke": lambda t: ["token", "revoke", t.token.id, "--person", t.person.id],
    # the person is looked up before the token is read: for A, the empty one is refused
    "channel add matrix": lambda t: [
        *("channel", "add", "matrix", "matrix", "--homeserver", "http://127.0.0.1:9"),
        *("--user", "@bot:x.io", "--person", "@me:x.io", "--for", t.person.id),
    ],
    "connection add": lambda t: [
        *("connection", "add", "x", "--kind", "x", "--scope", "x.read"),
        *("--person", t.person.id),
    ],
    "connection list": lambda t: ["connection", "list", "--person", t.person.id],
    "connection status": lambda t: ["connection", "status", "--person", t.person.id],
    "connection test": lambda t: ["connection", "test", t.connection.id, "--person", t.person.id],
    # the person is looked up before the password is read: for A, the empty one is refused
    "connect": lambda t: [
        *("connect", "calendar", "--name", "x", "--url", "http://127.0.0.1:9/"),
        *("--username", "x", "--password-stdin", "--person", t.person.id),
    ],
    "disconnect": lambda t: ["disconnect", t.connection.id, "--person", t.person.id],
    "codehost connect": lambda t: [
        *("codehost", "connect", "github", "--name", "x", "--repo", "octo/widgets"),
        *("--person", t.person.id),
    ],
    "codehost secret": lambda t: ["codehost", "secret", t.connection.id, "--person", t.person.id],
    "connection disconnect": lambda t: [
        *("connection", "disconnect", t.connection.id, "--person", t.person.id)
    ],
    "grant add": lambda t: ["grant", "add", "--scope", "email.send", "--person", t.person.id],
    "grant list": lambda t: ["grant", "list", "--person", t.person.id],
    "grant revoke": lambda t: ["grant", "revoke", t.grant.id, "--person", t.person.id],
    "rule add": lambda t: ["rule", "add", "x.*", "deny", "--person", t.person.id],
    "rule list": lambda t: ["rule", "list", "--person", t.person.id],
    "rule delete": lambda t: ["rule", "delete", t.rule.id, "--person", t.person.id],
    "secret set": lambda t: ["secret", "set", "mail", "--host", "evil.io", "--person", t.person.id],
    "secret list": lambda t: ["secret", "list", "--person", t.person.id],
    "secret delete": lambda t: ["secret", "delete", "mail", "--person", t.person.id],
    "memory list": lambda t: ["memory", "list", "--person", t.person.id],
    "memory search": lambda t: ["memory", "search", "Lisbon", "--person", t.person.id],
    "memory show": lambda t: ["memory", "show", t.memory.id],
    "memory history": lambda t: ["memory", "history", t.memory.id],
    "memory add": lambda t: ["memory", "add", "Likes tea", "--person", t.person.id],
    "memory edit": lambda t: ["memory", "edit", t.memory.id, "--content", "Lives in Porto"],
    "memory delete": lambda t: ["memory", "delete", t.memory.id],
    "memory archive": lambda t: ["memory", "archive", t.memory.id],
    "memory restore": lambda t: ["memory", "restore", t.memory.id, "--version", "1"],
    "memory promote": lambda t: ["memory", "promote", t.memory.id],
    "memory forget": lambda t: ["memory", "forget", "--conversation", t.task.id],
    "memory forgotten": lambda t: ["memory", "forgotten", "--person", t.person.id],
    "memory export": lambda t: ["memory", "export", "--person", t.person.id],
    # statements (JSON lines): the bulk import, remember_many, through the server too
    "memory import": lambda t: ["memory", "import", _statements(), "--person", t.person.id],
    "memory passes": lambda t: ["memory", "passes", "--person", t.person.id],
    "memory review": lambda t: ["memory", "review", t.memory_pass.id, "--reject"],
    "skill list": lambda t: ["skill", "list", "--person", t.person.id],
    "skill show": lambda t: ["skill", "show", t.skill.id],
    "skill history": lambda t: ["skill", "history", t.skill.id],
    "skill diff": lambda t: ["skill", "diff", t.skill.id],
    "skill restore": lambda t: ["skill", "restore", t.skill.id, "1"],
    "skill archive": lambda t: ["skill", "archive", t.skill.id],
    "skill approve": lambda t: ["skill", "approve", t.skill.id],
    "skill reject": lambda t: ["skill", "reject", t.skill.id],
    "watch add": lambda t: [
        *("watch", "add", "https://shop.example/x", "--select", ".price", "--below", "900"),
        *("--person", t.person.id),
    ],
    "watch list": lambda t: ["watch", "list", "--person", t.person.id],
    "report list": lambda t: ["report", "list", "--person", t.person.id],
    "reach quiet": lambda t: ["reach", "quiet", "22:00-07:00", "--person", t.person.id],
    "reach digest": lambda t: ["reach", "digest", "19:00", "--person", t.person.id],
    "watch show": lambda t: ["watch", "show", t.watch.id],
    "watch history": lambda t: ["watch", "history", t.watch.id],
    "watch pause": lambda t: ["watch", "pause", t.watch.id],
    "watch resume": lambda t: ["watch", "resume", t.watch.id],
    "watch remove": lambda t: ["watch", "remove", t.watch.id],
    "channel add apprise": lambda t: ["channel", "add", "apprise", "desk", "--person", t.person.id],
    "channel list": lambda t: ["channel", "list", "--person", t.person.id],
    "channel test": lambda t: ["channel", "test", t.channel.id],
    "channel disable": lambda t: ["channel", "disable", t.channel.id],
    "channel enable": lambda t: ["channel", "enable", t.channel.id],
    "channel remove": lambda t: ["channel", "remove", t.channel.id],
    "browser views": lambda t: ["browser", "views", "--person", t.person.id],
    "browser clear": lambda t: ["browser", "clear", "--yes", "--person", t.person.id],
    "channel add email": lambda t: [
        *("channel", "add", "email", "email", "--connection", t.connection.name),
        *("--address", "me@x.io", "--person", t.person.id),
    ],
}
OWNER_ONLY = {
    "prune": ["prune"],
    "audit verify": ["audit", "verify"],
    "vault rotate": ["vault", "rotate"],
    "backup": ["backup", "--to", "refused.tar.gz"],
    "restore": ["restore", "refused.tar.gz"],
    "upgrade": ["upgrade"],
}
"""Maintenance over everyone's data: refused to any token."""
NOT_DATA = {
    "up": "runs the runtime process",
    "worker": "runs a worker process",
    "scheduler": "runs the scheduler process",
    "simulate": "replays a simulation in a throwaway database",
    "db upgrade": "migrates the schema",
    "mcp": "serves MCP for one token: its tenancy is tested in tests/mcp_server",
    "demo": "runs the offline demo in a database of its own",
    "login": "checks a token with a server and saves it: tested in test_remote.py",
    "logout": "forgets the saved login",
    "logs": "reads this machine's log files, not the database",
    "service install": "writes a systemd unit for steward up",
    "service uninstall": "removes that unit",
    "init": "first-run setup of this machine's settings file, database and control token",
    "status": "names no one: its counts are the token's own person's (in LISTINGS)",
    "doctor": "checks this machine's installation (files, database, model server, accounts)",
}
"""Commands that read or change no person's data through the facade."""
LISTINGS = [
    ["inbox"],
    ["goal", "list", "--json"],
    ["task", "list", "--json"],
    ["trigger", "list", "--json"],
    ["event", "list", "--json"],
    ["effect", "list", "--json"],
    ["effect", "list", "--in-doubt", "--json"],
    ["approval", "list", "--all", "--json"],
    ["audit", "list", "--json"],
    ["token", "list", "--json"],
    ["connection", "list", "--json"],
    ["connection", "status"],
    ["grant", "list", "--all", "--json"],
    ["rule", "list", "--json"],
    ["secret", "list", "--json"],
    ["skill", "list", "--json"],
    ["memory", "list", "--json"],
    ["memory", "search", "Lisbon", "--json"],
    ["memory", "forgotten", "--json"],
    ["memory", "passes", "--json"],
    ["memory", "export"],
    ["watch", "list", "--json"],
    ["channel", "list", "--json"],
    ["report", "list", "--json"],
    ["browser", "views", "--json"],
    ["status", "--json"],
]


class World:
    """Two tenants, ann and bob, in a SQLite database, each with what their browser last
    showed; commands run in this process."""

    def __init__(self, tmp_path: Path) -> None:
        self.db = f"sqlite:///{tmp_path / 'cli.db'}"
        self.data_dir = tmp_path
        self.a, self.b = asyncio.run(self._make())

    async def _make(self) -> tuple[Tenant, Tenant]:
        store = await Store.open(self.db)
        try:
            clock = Clock()
            tenants = (
                await make_tenant(store, clock, "ann", self.data_dir),
                await make_tenant(store, clock, "bob", self.data_dir),
            )
            for t in tenants:  # what each one's browser last showed
                record_look(self.data_dir, t.person.id, t.task.id, at=clock.now(), picture=png())
            return tenants
        finally:
            await store.close()

    def state_of_b(self) -> Any:
        async def read() -> Any:
            store = await Store.open(self.db)
            try:
                return await state_of(store, Clock(), self.b)
            finally:
                await store.close()

        return asyncio.run(read())

    def run(
        self, argv: list[str], env: dict[str, str], *, local: bool = True, input: str = ""
    ) -> tuple[int, str]:
        """Run a command in this process: on the world's database, or (not ``local``) where
        ``env`` points it."""
        where = ["--db", self.db] if local else []
        result = CliRunner().invoke(
            app, [*argv, *where], env={"COLUMNS": "300", **env}, input=input
        )
        return result.exit_code, result.output
