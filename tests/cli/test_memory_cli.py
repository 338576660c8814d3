"""`steward memory` end to end against a real SQLite database: what an ask learned is listed
with its provenance and is forgotten with its conversation; add, show, edit, delete, restore;
MEMORY.md export, edit and import with a conflict; bad input is one clear error line.

Each command runs in this process through the Typer app, as the other CLI tests do: what is
checked is each command's exit code, output streams and effect on the database, not the
process around it (``steward ask`` as a process is covered by ``test_agent_cli.py``); a process
per command cost seconds of interpreter start-up and imports each.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from steward.cli.main import app
from steward.models.scripted import ScriptedModel, call_tool, say
from steward.testing.model_server import run_model_server


@dataclass(frozen=True)
class Done:
    """What a command left behind, as a finished process would: exit code, stdout, stderr."""

    returncode: int
    stdout: str
    stderr: str


def steward(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Done:
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    result = CliRunner().invoke(
        app,
        [*args, "--db", db],
        env=(env or {}) | {"STEWARD_DATA_DIR": str(tmp_path), "COLUMNS": "200"},
        input="",
    )
    # a crash is not an answer: only a clean exit (code 0, or 1 after one clear error line)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Done(result.exit_code, result.stdout, result.stderr)


def ok(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = steward(tmp_path, *args, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return str(done.stdout)


def listed(tmp_path: Path, *args: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads(ok(tmp_path, "memory", "list", "--json", *args))
    return found


def test_what_an_ask_learned_is_forgotten_with_its_conversation(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            call_tool("propose_memory", content="Lives in Berlin", kind="fact", slot="home_city"),
            say("Noted."),
        ]
    )
    with run_model_server(model) as server:
        env = {
            "STEWARD_MODEL": "scripted",
            "STEWARD_MODEL_BASE_URL": server.url,
            "STEWARD_MODEL_API_KEY": server.api_key,
        }
        ok(tmp_path, "ask", "I moved to Berlin", env=env)
    [task] = json.loads(ok(tmp_path, "task", "list", "--json"))
    [memory] = listed(tmp_path)
    assert [(s["kind"], s["ref"]) for s in memory["sources"]] == [("task", task["id"])]
    shown = ok(tmp_path, "memory", "show", memory["id"])
    assert f"from: task:{task['id']}" in shown
    assert "created" in shown

    forgot = ok(tmp_path, "memory", "forget", "--conversation", task["id"])

    assert "1 memories and 0 skills purged" in forgot
    assert listed(tmp_path) == []
    assert listed(tmp_path, "--status", "deleted") == []
    stones = json.loads(ok(tmp_path, "memory", "forgotten", "--json"))
    assert {s["source_key"] for s in stones} == {f"task:{task['id']}", f"conversation:{task['id']}"}


def test_add_edit_delete_restore_and_history(tmp_path: Path) -> None:
    added = ok(tmp_path, "memory", "add", "Coffee: flat white [oat]", "--kind", "preference")
    memory_id = added.split("(")[1].rstrip(")\n")
    edit = ["memory", "edit", memory_id, "--expect-version", "1", "--content"]
    ok(tmp_path, *edit, "Coffee: cortado")
    stale = steward(tmp_path, *edit, "Tea")
    assert stale.returncode == 1
    assert "changed meanwhile" in stale.stderr
    ok(tmp_path, "memory", "delete", memory_id)
    assert listed(tmp_path) == []
    ok(tmp_path, "memory", "restore", memory_id)
    ok(tmp_path, "memory", "restore", memory_id, "--version", "1")

    [memory] = listed(tmp_path)
    history = json.loads(ok(tmp_path, "memory", "history", memory_id, "--json"))
    assert memory["content"] == "Coffee: flat white [oat]"
    assert [v["reason"] for v in history] == [
        "created",
        "edited",
        "deleted",
        "restored",
        "restored version 1",
    ]
    assert "[oat]" in ok(tmp_path, "memory", "list")  # shown as written, not as markup
    found = json.loads(ok(tmp_path, "memory", "search", "coffee", "--json"))
    assert [h["memory"]["id"] for h in found] == [memory_id]


def test_export_edit_import_reports_the_conflict(tmp_path: Path) -> None:
    ok(tmp_path, "memory", "add", "Prefers aisle seats", "--kind", "preference")
    gym = ok(tmp_path, "memory", "add", "Gym on Mondays").split("(")[1].rstrip(")\n")
    exported = tmp_path / "MEMORY.md"
    ok(tmp_path, "memory", "export", "--output", str(exported))
    printed = ok(tmp_path, "memory", "export")
    assert printed.splitlines()[3:] == exported.read_text().splitlines()[3:]  # after the header
    ok(tmp_path, "memory", "edit", gym, "--content", "Gym on Wednesdays")
    exported.write_text(
        exported.read_text()
        .replace("aisle seats", "window seats")
        .replace("Gym on Mondays", "Gym on Fridays")
        .replace("## Facts\n", "## Facts\n\n- Allergic to peanuts\n")
    )

    done = steward(tmp_path, "memory", "import", str(exported))

    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 created, 1 edited, 0 unchanged, 0 archived" in done.stdout
    assert "conflict: line " in done.stdout
    assert "changed since the export (now version 2: edited)" in " ".join(done.stdout.split())
    contents = sorted(m["content"] for m in listed(tmp_path))
    assert contents == ["Allergic to peanuts", "Gym on Wednesdays", "Prefers window seats"]
    [peanuts] = [m for m in listed(tmp_path) if m["content"] == "Allergic to peanuts"]
    assert peanuts["sources"][0]["ref"] == "MEMORY.md"


def test_bad_input_is_one_clear_line_and_changes_nothing(tmp_path: Path) -> None:
    ok(tmp_path, "memory", "add", "Tea, no sugar")
    before = listed(tmp_path)
    bad_file = tmp_path / "bad.md"
    bad_file.write_text("## Facts\n- Lives in Rome <!-- audience=everyone -->\n- Fine\n")
    for argv, message in [
        (["memory", "show", "mem_nope"], "no memory starts with 'mem_nope'"),
        (["memory", "add", "x", "--audience", "everyone"], "bad audience 'everyone'"),
        (["memory", "forget", "gossip:x"], "bad source 'gossip:x'"),
        (["memory", "forget", "--conversation", "tsk_nope"], "no task starts with 'tsk_nope'"),
        (["memory", "search", "tea", "--mode", "semantic"], "needs an embedder"),
        (["memory", "import", str(tmp_path / "none.md")], "cannot read"),
    ]:
        done = steward(tmp_path, *argv)
        assert done.returncode == 1, (argv, done.stdout)
        assert done.stderr.strip().startswith("error:"), (argv, done.stderr)
        assert message in " ".join(done.stderr.split()), (argv, done.stderr)
    malformed = steward(tmp_path, "memory", "import", str(bad_file))
    assert malformed.returncode == 1
    assert "line 2: bad audience 'everyone'" in malformed.stdout
    assert "nothing was applied" in malformed.stdout
    assert listed(tmp_path) == before


def test_statements_import_in_parts_once_and_a_bad_line_refuses_the_file(tmp_path: Path) -> None:
    lines = [
        json.dumps({"content": f"Ada's diary, day {n}: a walk of {n} km", "ref": f"d{n}"})
        for n in range(1, 1201)
    ]
    lines += [
        json.dumps({"content": "Ada's diary, day 7: a walk of 7 km", "ref": "again"}),
        "",
        json.dumps(
            {
                "content": "Ada lives in Porto",
                "kind": "fact",
                "slot": "home_city",
                "observed_at": "2025-01-01T10:00:00Z",
            }
        ),
        json.dumps({"content": "Bob says Ada owes him 50 euros", "trusted": False}),
    ]
    diary = tmp_path / "diary.jsonl"
    diary.write_text("\n".join(lines) + "\n")

    first = ok(tmp_path, "memory", "import", str(diary))
    assert first.strip() == (
        "Imported 1,202 memories (1 already known; 1 kept for you to confirm)."
    )
    again = ok(tmp_path, "memory", "import", str(diary))
    assert again.strip() == "Imported 0 memories (1,203 already known)."
    assert len(listed(tmp_path, "--limit", "1000")) == 1000
    (porto,) = listed(tmp_path, "--kind", "fact")
    assert porto["content"] == "Ada lives in Porto"
    assert porto["sources"][0]["ref"].startswith("diary/")

    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"content": "Ada likes figs"}) + "\n\n" + json.dumps({"kind": "fact"}) + "\n"
    )
    refused = steward(tmp_path, "memory", "import", str(bad))
    assert refused.returncode == 1
    assert "line 3: a memory needs content" in refused.stderr
    assert json.loads(ok(tmp_path, "memory", "search", "figs", "--json")) == []

    forgotten = ok(tmp_path, "memory", "forget", "import:diary")
    assert "1202 memories and 0 skills purged" in forgotten
    assert listed(tmp_path) == []
