"""CLI commands of the credential vault: secrets (values are read from stdin or a hidden
prompt, never from the command line, where they would land in the shell's history) and key
rotation."""

from __future__ import annotations

import sys

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
    working,
)

secret_app = typer.Typer(
    help="Secrets in the encrypted vault; tools see only {{secret:NAME}}.", no_args_is_help=True
)
vault_app = typer.Typer(help="The vault's encryption key.", no_args_is_help=True)


def _read_value() -> str:
    if sys.stdin is not None and not sys.stdin.isatty():
        return sys.stdin.read().rstrip("\r\n")
    return str(typer.prompt("value", hide_input=True, confirmation_prompt=True))


@secret_app.command("set")
def secret_set(
    name: str,
    host: list[str] = typer.Option(
        ..., "--host", help="A host it may be sent to, exactly (repeatable)."
    ),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Store or replace a secret (value from stdin, or asked for without echo)."""
    value = _read_value()

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            info = await svc.put_secret(person_id=who.id, name=name, value=value, hosts=host)
            emit_one(info, as_json=as_json)

    run(main)


@secret_app.command("list")
def secret_list(
    person: str | None = PersonOption, db: str | None = DbOption, as_json: bool = JsonOption
) -> None:
    """Your secrets: names and hosts, never values."""

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            items = await svc.list_secrets(person_id=who.id)
            emit(items, ["name", "hosts", "created_at", "rotated_at"], as_json=as_json)

    run(main)


@secret_app.command("delete")
def secret_delete(name: str, person: str | None = PersonOption, db: str | None = DbOption) -> None:
    """Delete a secret."""

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            await svc.delete_secret(name, person_id=who.id)
        console.print(f"secret {name} deleted")

    run(main)


@vault_app.command("rotate")
def vault_rotate(db: str | None = DbOption) -> None:
    """Re-encrypt every secret under a new key, then retire the old one."""

    async def main() -> None:
        async with service(db) as svc:
            with working("re-encrypting every secret"):
                count = await svc.rotate_vault_key()
        console.print(f"vault key rotated; {count} secret(s) re-encrypted")

    run(main)
