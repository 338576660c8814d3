"""``steward doctor``: checks this installation, and says how to fix what is wrong."""

from __future__ import annotations

import typer

from steward.cli.common import DbOption, JsonOption


def doctor(db: str | None = DbOption, as_json: bool = JsonOption) -> None:
    """Check the database, the vault key, the model server, connected accounts, disk space,
    file permissions and the clock; exit 1 if something is wrong."""
    import json

    from steward.cli.common import run
    from steward.config import Settings
    from steward.domain.clock import Clock
    from steward.service.doctor import Level, diagnose
    from steward.service.encode import to_jsonable

    settings = Settings()

    async def main() -> bool:
        findings = await diagnose(
            settings, database_url=db or settings.resolved_database_url(), clock=Clock()
        )
        if as_json:
            print(json.dumps([to_jsonable(f) for f in findings], indent=2))
        for finding in [] if as_json else findings:
            print(f"{finding.level.value.upper():8} {finding.check}: {finding.said}")
            if finding.fix:
                print(f"{'':8} fix: {finding.fix}")
        return any(f.level is Level.PROBLEM for f in findings)

    if run(main):
        raise typer.Exit(1)
