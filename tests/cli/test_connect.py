"""``steward connect``, ``connection test|status`` and ``disconnect`` against a real CalDAV
server (Radicale), on both store backends: what the person types and reads."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from steward.cli.main import app
from steward.domain.memory import MemoryKind, Source, SourceKind
from steward.service import Service
from steward.store import Store
from steward.testing.model_server import serve_in_thread
from support.caldavserver import PersonCalendars
from support.cli import WIDE, cli_json
from support.mailserver import MailServer, dovecot_missing, running_mail, skip_or_fail
from support.oauth_server import AuthorizationServer, caldav_gateway


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**WIDE, "STEWARD_DATA_DIR": str(tmp_path / "data"), "STEWARD_VAULT_KEY": ""}


async def steward(
    db: str, env: dict[str, str], *args: str, stdin: str | None = None
) -> tuple[int, str]:
    """``steward <args> --db <db>`` in a thread (the command runs its own event loop): its
    exit code and what it printed."""
    result = await asyncio.to_thread(
        CliRunner().invoke, app, [*args, "--db", db], input=stdin, env=env
    )
    return result.exit_code, result.output


async def listing(db: str, env: dict[str, str], *args: str) -> Any:
    """What ``steward <args> --json`` printed, parsed."""
    return await asyncio.to_thread(cli_json, db, *args, env=env)


def flat(text: str) -> str:
    return " ".join(text.split())


async def test_connecting_a_calendar_from_the_terminal(
    db_url: str, env: dict[str, str], calendars: PersonCalendars
) -> None:
    user, password = calendars.user, calendars.server.passwords[calendars.user]
    where = ("--url", calendars.server.url, "--username", user)
    code, out = await steward(
        db_url, env, "connect", "calendar", "--name", "home", *where, stdin=f"{password}\n"
    )
    assert code == 0, out
    assert password not in out  # the prompt hides it
    assert flat(out).endswith(
        f"Connected home (calendar). Signed in to 127.0.0.1 as {user}: 2 calendars (Home, "
        "Work). Steward may read calendars, add and change events, answer invitations through it."
    )

    code, out = await steward(
        db_url, env, "connect", "calendar", "--name", "work", *where, "--password-stdin",
        "--read-only", "--calendar", "Work", stdin="wrong\n",
    )  # fmt: skip
    assert code == 1
    assert f"refused the sign-in as {user}" in flat(out)
    code, out = await steward(
        db_url, env, "connect", "calendar", "--name", "work", *where, "--password-stdin",
        "--read-only", "--calendar", "Work", stdin=f"{password}\n",
    )  # fmt: skip
    assert code == 0, out
    assert "1 calendar (Work). Steward may read calendars through it." in flat(out)
    listed = await listing(db_url, env, "connection", "list")
    assert [(c["name"], c["scopes"]) for c in listed] == [
        ("home", ["calendar.read", "calendar.write", "calendar.respond"]),
        ("work", ["calendar.read"]),
    ]

    code, out = await steward(db_url, env, "connection", "test", "work")
    assert (code, flat(out)) == (
        0,
        f"work works. Signed in to 127.0.0.1 as {user}: 1 calendar (Work).",
    )
    code, out = await steward(db_url, env, "connection", "status")
    assert code == 0, out
    assert flat(out) == (
        "home — Calendar (CalDAV) may read calendars, add and change events, answer "
        "invitations not watched yet work — Calendar (CalDAV) may read calendars only the "
        "calendar work not watched yet"
    )
    code, out = await steward(db_url, env, "connection", "test", "office")
    assert (code, flat(out)) == (1, "error: connected account 'office' not found")


async def test_disconnecting_asks_before_forgetting(
    db_url: str, env: dict[str, str], calendars: PersonCalendars
) -> None:
    password = calendars.server.passwords[calendars.user]
    code, out = await steward(
        db_url, env, "connect", "calendar", "--name", "home", "--url", calendars.server.url,
        "--username", calendars.user, "--password-stdin", stdin=f"{password}\n",
    )  # fmt: skip
    assert code == 0, out
    store = await Store.open(db_url)
    try:
        svc = Service(store, data_dir=Path(env["STEWARD_DATA_DIR"]))
        me = (await svc.ensure_person()).id
        [home] = await svc.list_connections(person_id=me)
        await svc.memory.write(
            person_id=me,
            content="Dentist on Friday",
            kind=MemoryKind.FACT,
            source=Source(kind=SourceKind.CONNECTOR, ref=f"{home.id}/e1", trusted=False),
            actor="connector",
        )
    finally:
        await store.close()

    code, out = await steward(db_url, env, "disconnect", "home", "--forget", stdin="n\n")
    assert code == 1
    assert "Forget everything Steward learned through home? This cannot be undone" in out
    assert [c["active"] for c in await listing(db_url, env, "connection", "list")] == [True]

    code, out = await steward(db_url, env, "disconnect", "home", "--forget", stdin="y\n")
    assert code == 0, out
    assert flat(out).endswith(
        "Disconnected home: nothing goes through it any more. Its password or tokens are "
        "deleted from the vault. Forgot 1 memory learned through it."
    )
    assert [c["active"] for c in await listing(db_url, env, "connection", "list")] == [False]
    assert await listing(db_url, env, "secret", "list") == []


async def test_an_oauth_calendar_is_authorized_in_the_browser(
    db_url: str, env: dict[str, str], calendars: PersonCalendars
) -> None:
    """``--provider custom``: the command listens on a loopback port, the "browser" ($BROWSER,
    here a script that follows redirects) is sent to the authorization server, which sends it
    back with a code; the command exchanges it and connects."""
    issuer = AuthorizationServer()
    server, user = calendars.server, calendars.user
    gateway = caldav_gateway(issuer, server.url, user, server.passwords[user])
    browser = f"{sys.executable} {Path(__file__).parent.parent / 'support' / 'oauth_server.py'} %s"
    with serve_in_thread(issuer.app()) as auth, serve_in_thread(gateway) as caldav:
        code, out = await steward(
            db_url, {**env, "BROWSER": browser}, "connect", "calendar", "--name", "google",
            "--provider", "custom", "--client-id", issuer.client_id, "--username", user,
            "--url", f"{caldav}/", "--authorization-endpoint", f"{auth}/authorize",
            "--token-endpoint", f"{auth}/token", "--oauth-scope", "calendar",
        )  # fmt: skip
    assert code == 0, out
    said = flat(out)
    assert f"Allow Steward access at your OAuth provider: {auth}/authorize?" in said
    assert f"Connected google (calendar). Signed in to 127.0.0.1 as {user}: 2 calendars" in said
    assert issuer.grants == ["authorization_code"]
    [secret] = await listing(db_url, env, "secret", "list")
    assert secret["hosts"] == ["127.0.0.1"]


@pytest.fixture(scope="module")
def mail_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MailServer]:
    missing = dovecot_missing()
    if missing is not None:
        skip_or_fail(missing)
    with running_mail(tmp_path_factory.mktemp("dovecot")) as server:
        yield server


async def test_connecting_a_mailbox_from_the_terminal(
    db_url: str, env: dict[str, str], mail_server: MailServer
) -> None:
    user = mail_server.add_user()
    where = (
        *("--imap-host", "127.0.0.1", "--imap-port", str(mail_server.imap_port)),
        *("--smtp-host", "127.0.0.1", "--smtp-port", str(mail_server.smtp_port)),
        *("--set", "imap_security=plain", "--set", "smtp_security=plain"),
        *("--username", user, "--set", f"address={user}@example.test", "--password-stdin"),
    )
    code, out = await steward(
        db_url, env, "connect", "mail", "--name", "work", *where, stdin="wrong\n"
    )
    assert code == 1, out
    assert await listing(db_url, env, "connection", "list") == []
    assert await listing(db_url, env, "secret", "list") == []

    password = mail_server.passwords[user]
    code, out = await steward(
        db_url, env, "connect", "mail", "--name", "work", *where, stdin=f"{password}\n"
    )
    assert code == 0, out
    assert flat(out) == (
        f"Connected work (mail). Signed in to 127.0.0.1 as {user}: 6 folders, 0 unread in "
        "Inbox. Steward may read mail, sort mail (mark, move, archive, label), write drafts, "
        "send mail through it."
    )
    code, out = await steward(
        db_url, env, "connect", "mail", "--name", "news", *where, "--read-only",
        "--allow-domain", "example.test", stdin=f"{password}\n",
    )  # fmt: skip
    assert code == 0, out
    assert flat(out).endswith("Steward may read mail through it.")
    code, out = await steward(db_url, env, "connection", "status")
    assert "news — Mail (IMAP and SMTP) may read mail sends only to anyone at example.test" in (
        flat(out)
    )


async def test_a_mail_account_that_cannot_be_reached_is_not_kept(
    db_url: str, env: dict[str, str]
) -> None:
    closed = "1"  # nothing listens on port 1
    code, out = await steward(
        db_url, env, "connect", "mail", "--name", "work", "--imap-host", "127.0.0.1",
        "--imap-port", closed, "--smtp-host", "127.0.0.1", "--smtp-port", closed,
        "--username", "ana@example.test", "--password-stdin", stdin="secret\n",
    )  # fmt: skip
    assert code == 1, out
    assert await listing(db_url, env, "connection", "list") == []
    assert await listing(db_url, env, "secret", "list") == []


async def test_a_kind_that_takes_no_password_is_not_asked_for_one_and_refuses_one(
    db_url: str, env: dict[str, str], tmp_path: Path
) -> None:
    files = tmp_path / "files"
    files.mkdir()
    roots = f"roots={files}"
    given = ("connect", "folder", "--name", "files", "--set", roots, "--password-stdin")
    code, out = await steward(db_url, env, *given, stdin="hunter2\n")
    assert code == 1, out
    assert "Folders on this machine takes no password: connect it without one" in flat(out)
    assert await listing(db_url, env, "connection", "list") == []
    assert await listing(db_url, env, "secret", "list") == []
    # no prompt: nothing on standard input is read, and it connects
    code, out = await steward(db_url, env, *given[:-1], stdin="hunter2\n")
    assert code == 0, out
    assert "Password" not in out
    assert await listing(db_url, env, "secret", "list") == []
