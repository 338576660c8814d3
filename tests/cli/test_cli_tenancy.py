"""Tenant isolation over every CLI command: with person A's token in ``$STEWARD_TOKEN``, each
command aimed at person B's objects (or naming B) fails with one "not found" line and changes
nothing of B's; aimed at A's own, it passes the check; listings show none of B's ids. A new
command fails :func:`test_every_command_is_covered` until it has a case here."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer

from steward.cli.main import app
from steward.models.scripted import ScriptedModel, say
from steward.testing.model_server import run_model_server
from support.cli_tenancy import LISTINGS, NOT_DATA, OWNER_ONLY, TARGETED, World
from support.tenancy import ids_of


def _commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[str]:
    subcommands = getattr(command, "commands", None)  # a group (Typer's own Group class)
    if subcommands is not None:
        for name, sub in subcommands.items():
            yield from _commands(sub, (*path, name))
    else:
        yield " ".join(path)


def test_every_command_is_covered() -> None:
    every = set(_commands(typer.main.get_command(app)))
    assert every == set(TARGETED) | set(OWNER_ONLY) | set(NOT_DATA)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[World, dict[str, str]]]:
    model = ScriptedModel(lambda _messages, _tools: say("done"))
    with run_model_server(model) as server:
        w = World(tmp_path)
        env = {
            "STEWARD_TOKEN": w.a.control,
            "STEWARD_MODEL": "scripted",
            "STEWARD_MODEL_BASE_URL": server.url,
            "STEWARD_MODEL_API_KEY": server.api_key,
            "STEWARD_DATA_DIR": str(tmp_path),
        }
        yield w, env


@pytest.mark.parametrize("command", sorted(TARGETED))
def test_a_token_cannot_reach_another_persons_data_from_the_cli(
    command: str, world: tuple[World, dict[str, str]]
) -> None:
    w, env = world
    before = w.state_of_b()
    code, out = w.run(TARGETED[command](w.b), env)
    assert code == 1, out
    assert "not found" in out, out
    assert w.state_of_b() == before
    # the same command on A's own passes the ownership check
    code, out = w.run(TARGETED[command](w.a), env)
    assert "not found" not in out, out
    assert not ids_of(w.b) & set(out.replace('"', " ").split()), out
    assert w.state_of_b() == before


def test_owner_only_commands_refuse_a_token(world: tuple[World, dict[str, str]]) -> None:
    w, env = world
    for argv in OWNER_ONLY.values():
        code, out = w.run(argv, env)
        assert code == 1, out
        assert "owner" in out, out
    code, out = w.run(["audit", "verify"], {})  # the owner, at the console
    assert code == 0, out


def test_listings_show_only_the_tokens_person(world: tuple[World, dict[str, str]]) -> None:
    w, env = world
    for argv in LISTINGS:
        code, out = w.run(argv, env)
        assert code == 0, (argv, out)
        assert not ids_of(w.b) & set(out.replace('"', " ").split()), (argv, out)
    code, out = w.run(["goal", "list", "--json"], env)
    assert w.a.goal.id in out
    code, out = w.run(["goal", "list", "--json"], {})  # the owner sees the first person's
    assert code == 0, out


def test_a_bad_token_is_one_clear_line(world: tuple[World, dict[str, str]]) -> None:
    w, env = world
    code, out = w.run(["goal", "list"], env | {"STEWARD_TOKEN": "stw_wrong"})
    assert code == 1
    assert out.strip().startswith("error:"), out
    assert len(out.strip().splitlines()) == 1, out
