"""CLI commands for skills: what the agent learned to do, its versions, and your decisions."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
from steward.errors import NotFound

if TYPE_CHECKING:
    from steward.service import Service

skill_app = typer.Typer(
    help="Skills the agent learned: inspect, diff, restore, approve.", no_args_is_help=True
)
SkillArgument = typer.Argument(..., help="The skill's name or id (skl_…).")
_COLUMNS = ["name", "status", "version", "description", "uses", "successes", "failures"]


async def _whose(svc: Service, skill: str, person: str | None) -> str | None:
    """The person a skill name belongs to (an id names its skill by itself)."""
    if person is None and skill.startswith("skl_"):
        return None
    return (await svc.person(person)).id


@skill_app.command("list")
def skill_list(
    status: str | None = typer.Option(None, help="Only active, proposed or archived ones."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Your skills; 'waiting' marks one that waits for your decision."""

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            skills = await svc.list_skills(person_id=who.id, status=status)
            emit(skills, [*_COLUMNS, "waiting"], as_json=as_json, title="skills")

    run(main)


@skill_app.command("show")
def skill_show(
    skill: str = SkillArgument,
    version: int | None = typer.Option(None, help="An earlier version."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """A skill in full, and the change that waits for your decision, if any."""

    async def main() -> None:
        async with service(db) as svc:
            pid = await _whose(svc, skill, person)
            found = await svc.get_skill(skill, person_id=pid)
            if version is not None:
                history = await svc.skill_history(found.id, person_id=pid)
                then = [v.skill for v in history if v.version == version]
                if not then:
                    raise NotFound("skill version", f"{found.name} v{version}")
                found = then[0]
            if as_json:
                emit_one(found, as_json=True)
                return
            console.print(found.render(), markup=False, highlight=False)
            if version is None and found.pending is not None:
                change = await svc.skill_diff(found.id, person_id=pid)
                console.print(
                    f"\nA change waits for you ({found.pending.reason}); "
                    f"'steward skill approve {found.name}' or 'reject':",
                    markup=False,
                )
                console.print(change, markup=False, highlight=False)

    run(main)


@skill_app.command("history")
def skill_history(
    skill: str = SkillArgument,
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Every version of a skill: when, who and why."""

    async def main() -> None:
        async with service(db) as svc:
            versions = await svc.skill_history(skill, person_id=await _whose(svc, skill, person))
            emit(versions, ["version", "at", "actor", "reason"], as_json=as_json, title=skill)

    run(main)


@skill_app.command("diff")
def skill_diff(
    skill: str = SkillArgument,
    from_version: int | None = typer.Option(None, "--from", help="The older version."),
    to_version: int | None = typer.Option(None, "--to", help="The newer version."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
) -> None:
    """What changed between two versions (default: the waiting change, else the last one)."""

    async def main() -> None:
        async with service(db) as svc:
            text = await svc.skill_diff(
                skill,
                person_id=await _whose(svc, skill, person),
                from_version=from_version,
                to_version=to_version,
            )
        console.print(text or "no difference", markup=False, highlight=False)

    run(main)


@skill_app.command("restore")
def skill_restore(
    skill: str = SkillArgument,
    version: int = typer.Argument(..., help="The version whose text becomes current."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Make an earlier version current again (as a new version); later tasks follow it."""

    async def main() -> None:
        async with service(db) as svc:
            pid = await _whose(svc, skill, person)
            restored = await svc.restore_skill(skill, version, person_id=pid)
            _done(restored.name, f"restored v{version} as v{restored.version}", restored, as_json)

    run(main)


@skill_app.command("archive")
def skill_archive(
    skill: str = SkillArgument,
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Set a skill aside: no task is shown it until you restore a version."""

    async def main() -> None:
        async with service(db) as svc:
            pid = await _whose(svc, skill, person)
            archived = await svc.archive_skill(skill, person_id=pid)
            _done(archived.name, f"archived (v{archived.version})", archived, as_json)

    run(main)


@skill_app.command("approve")
def skill_approve(
    skill: str = SkillArgument,
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Apply the new skill or change that waits for you."""
    _decide(skill, approve=True, person=person, db=db, as_json=as_json)


@skill_app.command("reject")
def skill_reject(
    skill: str = SkillArgument,
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Turn down the new skill or change that waits for you."""
    _decide(skill, approve=False, person=person, db=db, as_json=as_json)


def _decide(
    skill: str, *, approve: bool, person: str | None, db: str | None, as_json: bool
) -> None:
    async def main() -> None:
        async with service(db) as svc:
            pid = await _whose(svc, skill, person)
            decided = await svc.decide_skill_proposal(skill, approve=approve, person_id=pid)
            what = "approved" if approve else "rejected"
            _done(
                decided.name, f"{what}; now v{decided.version}, {decided.status}", decided, as_json
            )

    run(main)


def _done(name: str, what: str, skill: object, as_json: bool) -> None:
    if as_json:
        emit_one(skill, as_json=True)
    else:
        console.print(f"{name}: {what}", markup=False)
