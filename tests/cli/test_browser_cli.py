"""``steward browser``: ``views`` lists what the browser last showed each task, in words;
``clear`` asks first (unless ``--yes``), logs the browser out of every site, and is refused in
one line, changing nothing, while a task uses the browser."""

from __future__ import annotations

from pathlib import Path

from support.cli_tenancy import World
from support.screenshots import profiles, sign_in


def test_views_lists_each_tasks_last_look(tmp_path: Path) -> None:
    world = World(tmp_path)  # each tenant's task looked at a cart, with a screenshot
    env = {"STEWARD_TOKEN": world.a.read, "STEWARD_DATA_DIR": str(tmp_path)}
    code, out = world.run(["browser", "views"], env)
    assert code == 0, out
    assert "Your cart" in out
    assert "shop.example" in out
    assert "noop" in out
    assert f"browser/{world.a.task.id}/1.png" in out
    assert world.b.task.id not in out


def test_clear_asks_then_logs_out_everywhere(tmp_path: Path) -> None:
    world = World(tmp_path)
    env = {"STEWARD_TOKEN": world.a.control, "STEWARD_DATA_DIR": str(tmp_path)}
    cookies = sign_in(tmp_path, world.a.person.id)
    code, out = world.run(["browser", "clear"], env, input="n\n")
    assert code == 1, out
    assert "Log the browser out of every site?" in out
    assert cookies.exists()
    with profiles(tmp_path).hold(world.a.person.id, "tsk_busy"):  # a task is using it
        code, out = world.run(["browser", "clear", "--yes"], env)
    assert code == 1, out
    assert out.strip() == (
        "error: a task is using the browser right now; try again when it has finished"
    )
    assert cookies.exists()
    code, out = world.run(["browser", "clear"], env, input="y\n")
    assert code == 0, out
    assert "Logged out of every site" in out
    assert not cookies.exists()
