"""`steward ask`, `answer`, `approval` and `inbox` as processes, against the scripted
OpenAI-compatible server over a real socket."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from steward.models.scripted import ScriptedModel, call_tool, say
from steward.testing.model_server import run_model_server
from support.startup import scaled


def steward(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    return subprocess.run(
        [sys.executable, "-m", "steward.cli.main", *args, "--db", db],
        env=os.environ | env | {"STEWARD_DATA_DIR": str(tmp_path), "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=scaled(60),
        stdin=subprocess.DEVNULL,
    )


def test_ask_streams_steps_and_prints_the_result(tmp_path: Path) -> None:
    model = ScriptedModel(
        [call_tool("update_progress", updates={"plan": "answer"}), say("The answer is 42.")]
    )
    with run_model_server(model) as server:
        env = {
            "STEWARD_MODEL": "scripted",
            "STEWARD_MODEL_BASE_URL": server.url,
            "STEWARD_MODEL_API_KEY": server.api_key,
        }
        done = steward(tmp_path, env, "ask", "What is the answer?")
    assert done.returncode == 0, done.stderr
    assert "→ update_progress" in done.stdout
    assert "← update_progress: progress saved" in done.stdout
    assert "done: The answer is 42." in done.stdout
    assert server.requests == 2


def test_ask_question_answered_later_from_another_command(tmp_path: Path) -> None:
    """Without a terminal, `ask` leaves a waiting question; `answer` resumes it and `inbox`
    lists the question."""
    model = ScriptedModel(
        [
            call_tool("ask_person", question="Which city?"),
            lambda messages, tools: say(f"Booked: {messages[-1].content}"),
        ]
    )
    with run_model_server(model) as server:
        env = {
            "STEWARD_MODEL": "scripted",
            "STEWARD_MODEL_BASE_URL": server.url,
            "STEWARD_MODEL_API_KEY": server.api_key,
        }
        first = steward(tmp_path, env, "ask", "Book a trip")
        assert first.returncode == 0, first.stderr
        assert "is waiting (input" in first.stdout
        task_id = first.stdout.split("task ", 1)[1].split()[0]
        inbox = steward(tmp_path, env, "inbox", "--json")
        assert [n["kind"] for n in json.loads(inbox.stdout)] == ["question"]
        answered = steward(tmp_path, env, "answer", task_id, "Lisbon")
        assert answered.returncode == 0, answered.stderr
        bad = steward(tmp_path, env, "answer", task_id, "again")
        assert bad.returncode == 1
        assert "not waiting for input" in bad.stderr + bad.stdout
        # the answer woke it: it is due for the next worker
        shown = steward(tmp_path, env, "task", "show", task_id, "--json")
        assert json.loads(shown.stdout)["status"] == "pending"


def test_ask_without_a_model_fails_with_a_clear_message(tmp_path: Path) -> None:
    env = {"STEWARD_MODEL": "", "STEWARD_CONFIG": str(tmp_path / "none.toml")}
    done = steward(tmp_path, {k: v for k, v in env.items() if v}, "ask", "hello")
    assert done.returncode == 1
    assert "no model is configured" in done.stdout + done.stderr


def test_ask_in_a_group_tells_the_agent_who_is_listening(tmp_path: Path) -> None:
    model = ScriptedModel(
        [lambda messages, tools: say(messages[0].content.splitlines()[-1])]  # echo its audience
    )
    with run_model_server(model) as server:
        env = {
            "STEWARD_MODEL": "scripted",
            "STEWARD_MODEL_BASE_URL": server.url,
            "STEWARD_MODEL_API_KEY": server.api_key,
        }
        done = steward(tmp_path, env, "ask", "Plan the picnic", "--audience", "group:family")
    assert done.returncode == 0, done.stderr
    assert "done: Audience: a group conversation." in done.stdout


def test_ask_with_a_bad_audience_is_one_clear_line_and_starts_nothing(tmp_path: Path) -> None:
    done = steward(tmp_path, {}, "ask", "hello", "--audience", "everyone")
    assert done.returncode != 0
    assert "bad audience 'everyone': use private, public or group:<name>" in done.stderr
    listed = steward(tmp_path, {}, "task", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == []


def test_ask_with_a_bad_skill_input_is_one_clear_line(tmp_path: Path) -> None:
    done = steward(tmp_path, {}, "ask", "total?", "--skill", "invoice-total", "--input", "page")
    assert done.returncode != 0
    assert "bad --input 'page': use name=value" in done.stderr
