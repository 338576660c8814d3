"""``steward connect``, ``steward connection test|status`` and ``steward disconnect``: the
person's mail and calendar accounts, connected from a terminal.

A password is read with a hidden prompt or from standard input (``--password-stdin``), never
from a flag, which would leave it in the shell's history and the process list. An OAuth
account (``--provider``) is authorized in the browser: the command listens on a loopback port
for the provider's redirect, exchanges the code (PKCE) and keeps the tokens in the vault.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import webbrowser
from typing import TYPE_CHECKING, Any

import typer
from rich.text import Text

from steward.cli.common import DbOption, PersonOption, console, err_console, run, service
from steward.errors import UsageError

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse

    from steward.service import Service
    from steward.service.connections import AccountStatus, Connected

AUTHORIZE_TIMEOUT_SECONDS = 600.0
"""How long ``connect --provider`` waits for the person to allow access in the browser."""


def connect(
    kind: str = typer.Argument(..., help="mail, calendar, folder, web, feed or browser."),
    name: str = typer.Option(..., "--name", help="What you call this account (work, home)."),
    url: str | None = typer.Option(None, help="Calendar: the CalDAV URL."),
    username: str | None = typer.Option(None, help="The name you sign in with."),
    imap_host: str | None = typer.Option(None, help="Mail: the IMAP server."),
    imap_port: int | None = typer.Option(None, help="Mail: the IMAP port."),
    smtp_host: str | None = typer.Option(None, help="Mail: the SMTP server."),
    smtp_port: int | None = typer.Option(None, help="Mail: the SMTP port."),
    time_zone: str | None = typer.Option(None, help="Your IANA time zone (Europe/Paris)."),
    setting: list[str] = typer.Option(
        [],
        "--set",
        help="Another setting, KEY=VALUE: address (mail) or email (calendar) when the user "
        "name is not your address, imap_security/smtp_security, folders...",
    ),
    password_stdin: bool = typer.Option(
        False, "--password-stdin", help="Read the password from standard input."
    ),
    provider: str | None = typer.Option(
        None, help="Sign in with OAuth 2.0 at gmail, microsoft365 or custom."
    ),
    client_id: str | None = typer.Option(None, help="OAuth: your OAuth client's id."),
    client_secret_stdin: bool = typer.Option(
        False, "--client-secret-stdin", help="OAuth: read your client's secret from stdin."
    ),
    authorization_endpoint: str | None = typer.Option(None, help="OAuth custom: authorize URL."),
    token_endpoint: str | None = typer.Option(None, help="OAuth custom: token URL."),
    oauth_scope: str | None = typer.Option(None, help="OAuth custom: the scopes to ask for."),
    redirect_port: int = typer.Option(
        0, help="OAuth: the loopback port for the redirect (0: any free one)."
    ),
    no_browser: bool = typer.Option(
        False, "--no-browser", help="OAuth: print the address instead of opening a browser."
    ),
    read_only: bool = typer.Option(False, "--read-only", help="Only ever read, never change."),
    scope: list[str] = typer.Option(
        [], help="Offer only this scope, e.g. mail.read (repeatable; default: all)."
    ),
    allow_recipient: list[str] = typer.Option(
        [], help="Mail may go only to this address (repeatable)."
    ),
    allow_domain: list[str] = typer.Option(
        [], help="Mail may go only to this domain (repeatable)."
    ),
    calendar: list[str] = typer.Option([], help="Use only this calendar (repeatable)."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
) -> None:
    """Connect a mail or calendar account (Steward signs in once to check it, and keeps the
    password or OAuth tokens only in the vault), folders on this machine, hosts on your network
    Steward may read (web: --set hosts=nas.local), or a news feed (feed: --set url=...); these
    take no password."""
    given: dict[str, Any] = {
        key: value
        for key, value in (
            ("url", url),
            ("username", username),
            ("imap_host", imap_host),
            ("imap_port", imap_port),
            ("smtp_host", smtp_host),
            ("smtp_port", smtp_port),
            ("time_zone", time_zone),
        )
        if value is not None
    }
    given |= _key_values(setting)
    bounds = {
        key: values
        for key, values in (
            ("recipients", allow_recipient),
            ("domains", allow_domain),
            ("calendars", calendar),
        )
        if values
    }
    common: dict[str, Any] = {
        "kind": kind,
        "name": name,
        "read_only": read_only,
        "scopes": scope or None,
        "bounds": bounds,
    }

    async def main() -> Connected:
        async with service(db) as svc:
            who = await svc.person(person)
            if provider is None:
                takes = any(k.kind == kind and k.credential for k in await svc.account_kinds())
                # one given for a kind that takes none is refused by the service, nothing stored
                secret = (
                    _read_secret(password_stdin, f"Password for {given.get('username', name)}")
                    if takes or password_stdin
                    else None
                )
                return await svc.connect(
                    person_id=who.id, settings=given, credential=secret, **common
                )
            if not client_id or "username" not in given:
                raise UsageError("an OAuth account needs --client-id and --username")
            client_secret = _read_secret(True, "") if client_secret_stdin else None
            return await _authorize(
                svc,
                person_id=who.id,
                provider=provider,
                client_id=client_id,
                client_secret=client_secret,
                authorization_endpoint=authorization_endpoint,
                token_endpoint=token_endpoint,
                scope=oauth_scope,
                port=redirect_port,
                open_browser=not no_browser,
                username=str(given.pop("username")),
                settings=given,
                **common,
            )

    from steward.service.connections import scopes_in_words

    done = run(main)
    connection = done.connection
    console.print(Text(f"Connected {connection.name} ({connection.kind}). {done.check}."))
    console.print(Text(f"Steward may {scopes_in_words(connection.scopes)} through it."))


async def _authorize(
    svc: Service,
    *,
    person_id: str,
    provider: str,
    client_id: str,
    client_secret: str | None,
    authorization_endpoint: str | None,
    token_endpoint: str | None,
    scope: str | None,
    port: int,
    open_browser: bool,
    username: str,
    settings: dict[str, Any],
    **common: Any,
) -> Connected:
    """The authorization-code flow with a loopback redirect: listen, send the person to the
    provider, wait for the code, connect with it."""
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from steward.api.server import serving

    arrived: asyncio.Future[dict[str, str]] = asyncio.get_running_loop().create_future()

    async def callback(request: Request) -> PlainTextResponse:
        if not arrived.done():
            arrived.set_result(dict(request.query_params))
        return PlainTextResponse("Steward got the answer: you can close this tab.")

    app = Starlette(routes=[Route("/callback", callback)])
    async with serving(app, port=port) as base:
        redirect_uri = f"{base}/callback"
        start = await svc.start_oauth(
            person_id=person_id,
            kind=common["kind"],
            provider=provider,
            client_id=client_id,
            redirect_uri=redirect_uri,
            authorization_endpoint=authorization_endpoint,
            token_endpoint=token_endpoint,
            scope=scope,
        )
        err_console.print(Text(f"Allow Steward access at {start.provider}:"))
        err_console.print(Text(start.url), soft_wrap=True)
        if open_browser:
            # a browser run from $BROWSER is waited for; the redirect must be served meanwhile
            threading.Thread(target=webbrowser.open, args=(start.url,), daemon=True).start()
        try:
            answer = await asyncio.wait_for(arrived, AUTHORIZE_TIMEOUT_SECONDS)
        except TimeoutError:
            raise UsageError("no answer came from the browser in 10 minutes; try again") from None
    if answer.get("state") != start.state:
        raise UsageError("the answer from the browser was not for this request; try again")
    if "code" not in answer:
        why = answer.get("error_description") or answer.get("error") or "no reason given"
        raise UsageError(f"access was not allowed: {why}")
    return await svc.connect_oauth(
        person_id=person_id,
        provider=provider,
        username=username,
        client_id=client_id,
        client_secret=client_secret,
        redirect_uri=redirect_uri,
        code=answer["code"],
        code_verifier=start.code_verifier,
        token_endpoint=token_endpoint,
        settings=settings,
        **common,
    )


def connection_test(
    name: str = typer.Argument(..., help="The account's name."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
) -> None:
    """Sign in to a connected account again and say what was found (exit 1 when it fails)."""

    async def main() -> tuple[bool, str]:
        async with service(db) as svc:
            who = await svc.person(person)
            checked = await svc.test_connection(name, person_id=who.id)
        return checked.ok, checked.said

    ok, said = run(main)
    if not ok:
        err_console.print(Text(f"{name} does not work: {said}"))
        raise typer.Exit(1)
    console.print(Text(f"{name} works. {said}."))


def connection_status(person: str | None = PersonOption, db: str | None = DbOption) -> None:
    """Your connected accounts: what Steward may do through each, and how watching goes."""

    async def main() -> list[AccountStatus]:
        async with service(db) as svc:
            who = await svc.person(person)
            return await svc.connection_status(person_id=who.id)

    accounts = run(main)
    if not accounts:
        console.print("No accounts are connected. Connect one with: steward connect mail|calendar")
    for account in accounts:
        console.print(Text(f"{account.connection.name} — {account.title}", style="bold"))
        console.print(Text(f"  may {account.may}"))
        if account.bounds:
            console.print(Text(f"  {account.bounds}"))
        console.print(Text(f"  {account.watch}", style="red" if account.failing else ""))


def disconnect(
    name: str = typer.Argument(..., help="The account's name."),
    forget: bool = typer.Option(
        False, "--forget", help="Also forget, for good, what Steward learned through it."
    ),
    yes: bool = typer.Option(False, "--yes", help="Do not ask before forgetting."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
) -> None:
    """Disconnect an account: nothing goes through it any more, grants it alone covered are
    revoked, and its password or tokens leave the vault."""
    if forget and not yes:
        typer.confirm(
            f"Forget everything Steward learned through {name}? This cannot be undone",
            abort=True,
        )

    async def main() -> tuple[str, int, bool, int | None]:
        async with service(db) as svc:
            who = await svc.person(person)
            done = await svc.disconnect_account(name, person_id=who.id, forget=forget)
        return done.connection.name, len(done.revoked), done.secret_deleted, done.forgotten

    shown, revoked, deleted, forgotten = run(main)
    said = [f"Disconnected {shown}: nothing goes through it any more."]
    if revoked:
        said.append(f"{revoked} grant{'s' if revoked > 1 else ''} it covered revoked.")
    if deleted:
        said.append("Its password or tokens are deleted from the vault.")
    if forgotten is not None:
        said.append(
            f"Forgot {forgotten} memor{'y' if forgotten == 1 else 'ies'} learned through it."
        )
    console.print(Text(" ".join(said)))


def _read_secret(from_stdin: bool, prompt: str) -> str:
    """A password from standard input (its first line) or a hidden prompt."""
    if from_stdin:
        secret = sys.stdin.readline().rstrip("\r\n")
    else:
        secret = typer.prompt(prompt, hide_input=True)
    if not secret:
        raise UsageError("the password is empty")
    return secret


def _key_values(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"--set takes KEY=VALUE, not {pair!r}")
        out[key.strip()] = value
    return out
