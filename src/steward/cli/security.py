"""CLI commands of the security plane: the audit log and API tokens."""

from __future__ import annotations

import typer

from steward.cli.common import DbOption, JsonOption, console, emit, emit_one, run, service

audit_app = typer.Typer(help="The append-only, hash-chained audit log.", no_args_is_help=True)
token_app = typer.Typer(help="API tokens (stored hashed).", no_args_is_help=True)
PersonOption = typer.Option(None, "--person", envvar="STEWARD_PERSON", help="Person id.")


@audit_app.command("list")
def audit_list(
    after: int = typer.Option(0, help="Only entries after this seq."),
    limit: int = typer.Option(200, help="Most entries."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Your audit entries: decisions, credential uses, effects, approvals, grants."""

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            entries = await svc.audit_log(person_id=who.id, after_seq=after, limit=limit)
            emit(entries, ["seq", "at", "kind", "actor", "data"], as_json=as_json, title="audit")

    run(main)


@audit_app.command("verify")
def audit_verify(db: str | None = DbOption, as_json: bool = JsonOption) -> None:
    """Verify the whole chain; exit 1 and name the first bad entry if it was tampered with."""

    async def main() -> None:
        async with service(db) as svc:
            verdict = await svc.verify_audit()
        if as_json:
            emit_one(verdict, as_json=True)
        elif verdict.ok:
            console.print(
                f"audit chain intact: {verdict.checked} entries, head #{verdict.last_seq} "
                f"{verdict.last_hash}"
            )
        if not verdict.ok:
            if not as_json:
                console.print(
                    f"[red]audit chain broken at #{verdict.bad_seq}: {verdict.problem}[/red] "
                    f"({verdict.checked} entries good before it)"
                )
            raise typer.Exit(1)

    run(main)


@token_app.command("create")
def token_create(
    name: str,
    scope: list[str] = typer.Option(["read"], help="read or control (repeatable)."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
) -> None:
    """Issue an API token; it is shown once."""

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            token, plaintext = await svc.create_token(person_id=who.id, name=name, scopes=scope)
        console.print(f"{token.id} ({', '.join(token.scopes)}): {plaintext}")
        console.print("[dim]store it now: only its hash is kept[/dim]")

    run(main)


@token_app.command("list")
def token_list(
    person: str | None = PersonOption, db: str | None = DbOption, as_json: bool = JsonOption
) -> None:
    """Your API tokens (never their values)."""

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            tokens = await svc.list_tokens(person_id=who.id)
            emit(
                tokens,
                ["id", "name", "scopes", "created_at", "last_used_at", "revoked_at"],
                as_json=as_json,
                title="tokens",
            )

    run(main)


@token_app.command("revoke")
def token_revoke(
    token_id: str, person: str | None = PersonOption, db: str | None = DbOption
) -> None:
    """Revoke a token; it stops working at once."""

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            token = await svc.revoke_token(token_id, person_id=who.id)
        console.print(f"{token.id} revoked")

    run(main)
