"""CLI commands of the security plane: the audit log and API tokens."""

from __future__ import annotations

import typer

from steward.cli.common import (
    DbOption,
    JsonOption,
    PersonOption,
    console,
    emit,
    emit_one,
    run,
    service,
)

audit_app = typer.Typer(help="The append-only, hash-chained audit log.", no_args_is_help=True)
token_app = typer.Typer(help="API tokens (stored hashed).", no_args_is_help=True)


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
            whole = await svc.resolve_id(token_id, "tok", person_id=who.id)
            token = await svc.revoke_token(whole, person_id=who.id)
        console.print(f"{token.id} revoked")

    run(main)


connection_app = typer.Typer(
    help="Connected accounts and the scopes they expose.", no_args_is_help=True
)
grant_app = typer.Typer(help="Authority you gave, with lifetimes.", no_args_is_help=True)
rule_app = typer.Typer(
    help="Per-action rules: do, do_if_preapproved, ask, handoff, deny.", no_args_is_help=True
)


@connection_app.command("add")
def connection_add(
    name: str,
    kind: str = typer.Option(..., help="mail, calendar, http, mcp..."),
    scope: list[str] = typer.Option(..., help="A scope it exposes, e.g. mail.read (repeatable)."),
    host: list[str] = typer.Option([], help="A host its credentials may go to (repeatable)."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Connect an account: the most the agent can ever do through it."""

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            added = await svc.add_connection(
                person_id=who.id, kind=kind, name=name, scopes=scope, hosts=host
            )
            emit_one(added, as_json=as_json)

    run(main)


@connection_app.command("list")
def connection_list(
    person: str | None = PersonOption, db: str | None = DbOption, as_json: bool = JsonOption
) -> None:
    """Your connections."""

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            items = await svc.list_connections(person_id=who.id)
            emit(items, ["id", "kind", "name", "scopes", "hosts", "active"], as_json=as_json)

    run(main)


@connection_app.command("disconnect")
def connection_disconnect(
    connection_id: str,
    forget: bool = typer.Option(
        False,
        "--forget",
        help="Also forget, for good, every memory derived from what came through it.",
    ),
    person: str | None = PersonOption,
    db: str | None = DbOption,
) -> None:
    """Disconnect: the next action through it is refused; grants it covered are revoked."""

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            whole = await svc.resolve_id(connection_id, "con", person_id=who.id)
            done = await svc.disconnect(whole, person_id=who.id)
            forgotten = (
                await svc.forget_source(f"connector:{done.connection.id}", person_id=who.id)
                if forget
                else None
            )
        revoked = ", ".join(g.id for g in done.revoked) or "none"
        console.print(f"{done.connection.id} disconnected; grants revoked: {revoked}")
        if forgotten is not None:
            console.print(f"memories forgotten: {forgotten.purged}")

    run(main)


_PERIOD_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}


def _period_seconds(text: str) -> float:
    """``90s``, ``30m``, ``12h``, ``1d``, ``2w`` in seconds."""
    number, unit = text[:-1], text[-1:].lower()
    try:
        value = float(number)
    except ValueError:
        value = -1.0
    if unit not in _PERIOD_UNITS or value <= 0:
        raise typer.BadParameter(f"a period like 12h, 1d or 2w, got {text!r}")
    return value * _PERIOD_UNITS[unit]


@grant_app.command("add")
def grant_add(
    scope: list[str] = typer.Option(..., "--scope", help="A scope it gives (repeatable)."),
    to: list[str] = typer.Option([], "--to", help="Only these recipients (repeatable)."),
    domain: list[str] = typer.Option([], "--domain", help="Only these domains (repeatable)."),
    host: list[str] = typer.Option([], "--host", help="Only these hosts (repeatable)."),
    path: str | None = typer.Option(None, help="Only URLs under this path."),
    tool: str | None = typer.Option(None, help="Only this tool."),
    max_amount: float | None = typer.Option(None, help="Most `amount` per action."),
    per_period: float | None = typer.Option(
        None, help="Most `amount` in total per --period (e.g. 100 per 1d)."
    ),
    period: str | None = typer.Option(None, help="The window of --per-period: 12h, 1d, 1w."),
    hours: float | None = typer.Option(None, help="Expires after this many hours."),
    reason: str = typer.Option("", help="Why, for the audit log."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Give your agent standing (or --hours) authority, within constraints."""
    if (per_period is None) != (period is None):
        raise typer.BadParameter("--per-period and --period go together")
    constraints: dict[str, object] = {}
    for key, values in (("recipients", to), ("domains", domain), ("hosts", host)):
        if values:
            constraints[key] = list(values)
    for key, value in (("path_prefix", path), ("tool", tool), ("max_amount", max_amount)):
        if value is not None:
            constraints[key] = value
    if per_period is not None and period is not None:
        constraints["period_amount"] = per_period
        constraints["period_seconds"] = _period_seconds(period)

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            grant = await svc.add_grant(
                person_id=who.id,
                scopes=scope,
                constraints=constraints,
                hours=hours,
                reason=reason,
            )
            emit_one(grant, as_json=as_json)

    run(main)


@grant_app.command("list")
def grant_list(
    all_: bool = typer.Option(False, "--all", help="Include revoked, spent and expired ones."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Your grants (live ones unless --all)."""

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            items = await svc.list_grants(person_id=who.id, live=not all_)
            emit(
                items,
                ["id", "scopes", "lifetime", "constraints", "expires_at", "revoked_at", "reason"],
                as_json=as_json,
            )

    run(main)


@grant_app.command("revoke")
def grant_revoke(
    grant_id: str, person: str | None = PersonOption, db: str | None = DbOption
) -> None:
    """Revoke a grant: it stops at the very next action, inside running tasks too."""

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            whole = await svc.resolve_id(grant_id, "grt", person_id=who.id)
            grant = await svc.revoke_grant(whole, person_id=who.id)
        console.print(f"{grant.id} revoked")

    run(main)


@rule_app.command("add")
def rule_add(
    pattern: str,
    mode: str,
    priority: int = typer.Option(0, help="Higher wins; ties go to the stricter mode."),
    reason: str = typer.Option("", help="Shown when it decides."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Add a rule for a tool or scope pattern (`*` wildcard)."""

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            rule = await svc.add_rule(
                person_id=who.id, pattern=pattern, mode=mode, priority=priority, reason=reason
            )
            emit_one(rule, as_json=as_json)

    run(main)


@rule_app.command("list")
def rule_list(
    person: str | None = PersonOption, db: str | None = DbOption, as_json: bool = JsonOption
) -> None:
    """Your rules, highest priority first."""

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            items = await svc.list_rules(person_id=who.id)
            emit(items, ["id", "pattern", "mode", "priority", "reason"], as_json=as_json)

    run(main)


@rule_app.command("delete")
def rule_delete(rule_id: str, person: str | None = PersonOption, db: str | None = DbOption) -> None:
    """Delete a rule."""

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            whole = await svc.resolve_id(rule_id, "rul", person_id=who.id)
            await svc.delete_rule(whole, person_id=who.id)
        console.print(f"{whole} deleted")

    run(main)
