"""The CLI end to end against a real SQLite database (and one real `steward up` process)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from steward.cli.main import app
from support.cli import cli, cli_json, runner
from support.startup import scaled


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'cli.db'}"


def test_goal_and_task_lifecycle(db: str) -> None:
    """Create a goal and a task under it; list, pause, resume and cancel them as JSON."""
    goal = cli_json(db, "goal", "create", "Track bug reports", "--report-policy", "actionable")
    assert isinstance(goal, dict)
    assert goal["status"] == "active"
    task = cli_json(db, "task", "create", "noop", "--goal", goal["id"], "--input", '{"steps": 2}')
    assert isinstance(task, dict)
    assert task["status"] == "pending"
    listed = cli_json(db, "task", "list", "--goal", goal["id"])
    assert [t["id"] for t in listed] == [task["id"]]  # type: ignore[union-attr]
    assert cli_json(db, "task", "pause", task["id"])["status"] == "paused"  # type: ignore[index]
    assert cli_json(db, "task", "resume", task["id"])["status"] == "pending"  # type: ignore[index]
    cancelled = cli_json(db, "task", "cancel", task["id"])
    assert cancelled["status"] == "cancelled"  # type: ignore[index]
    goals = cli_json(db, "goal", "list")
    assert [g["id"] for g in goals] == [goal["id"]]  # type: ignore[union-attr]


def test_bad_input_is_one_clear_line_and_changes_nothing(db: str) -> None:
    """A bad cron expression exits non-zero with one error line and stores no trigger."""
    code, out = cli(db, "trigger", "add", "cron", "not a cron")
    assert code == 1
    assert "bad cron expression" in out
    assert cli_json(db, "trigger", "list") == []
    code, out = cli(db, "task", "pause", "tsk_missing")
    assert code == 1
    assert "no task starts with 'tsk_missing'" in out  # ids may be given shortened
    code, out = cli(db, "goal", "create", "x", "--deadline", "2020-01-01T00:00:00+00:00")
    assert code == 1
    assert "already past" in out
    assert cli_json(db, "goal", "list") == []


def test_event_delivered_twice_is_stored_once(db: str) -> None:
    """The same dedupe key sent twice is reported as a duplicate the second time."""
    first = cli_json(db, "event", "send", "email.received", "--dedupe-key", "m-1")
    second = cli_json(db, "event", "send", "email.received", "--dedupe-key", "m-1")
    assert first["duplicate"] is False  # type: ignore[index]
    assert second["duplicate"] is True  # type: ignore[index]
    assert first["id"] == second["id"]  # type: ignore[index]
    assert len(cli_json(db, "event", "list")) == 1  # type: ignore[arg-type]


def test_trigger_enable_disable(db: str) -> None:
    """Disabling a trigger clears its schedule; enabling sets the next fire time again."""
    trigger = cli_json(db, "trigger", "add", "interval", "3600", "--task", "noop")
    assert trigger["next_fire_at"] is not None  # type: ignore[index]
    off = cli_json(db, "trigger", "disable", trigger["id"])  # type: ignore[index]
    assert off["enabled"] is False
    assert off["next_fire_at"] is None
    on = cli_json(db, "trigger", "enable", trigger["id"])  # type: ignore[index]
    assert on["enabled"] is True
    assert on["next_fire_at"] is not None


@pytest.mark.slow
def test_up_runs_work_and_stops_cleanly(db: str, tmp_path: Path) -> None:
    """`steward up` prints where data lives, where to open the dashboard and how to stop;
    serves the API there; runs a task created from another process; exits cleanly on
    SIGTERM."""
    env = {**os.environ, "STEWARD_DATA_DIR": str(tmp_path / "data")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "steward.cli.main", "up", "--db", db, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        banner = [proc.stdout.readline() for _ in range(7)]  # type: ignore[union-attr]
        text = "".join(banner)
        assert "data:" in text, text
        assert "stop:" in text, text
        assert "model:   none set" in text, text
        [address] = re.findall(r"open:\s+(http://127\.0\.0\.1:\d+)/", text)
        # a first start: a one-time link that signs a browser in with a control token
        [link] = re.findall(r"open:\s+(http://\S+/login\?code=\S+)", text)
        signed_in = httpx.get(link)
        assert signed_in.status_code == 303, signed_in.text
        assert "steward_session=" in signed_in.headers["set-cookie"]
        tokens = cli_json(db, "token", "list")
        assert [t["scopes"] for t in tokens] == [["control"]]
        assert httpx.get(link).status_code == 401  # used up
        refused = httpx.get(f"{address}/api/v1/goals")
        assert refused.status_code == 401, refused.text
        assert refused.headers["content-type"] == "application/problem+json"
        task = cli_json(db, "task", "create", "noop", "--input", '{"steps": 3}')
        deadline = time.monotonic() + scaled(30)
        status = ""
        while time.monotonic() < deadline:
            shown = cli_json(db, "task", "show", task["id"])  # type: ignore[index]
            status = shown["status"]  # type: ignore[index]
            if status == "succeeded":
                break
            time.sleep(0.2)
        assert status == "succeeded"
        assert shown["step_seq"] == 3  # type: ignore[index]
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=scaled(30))
    assert proc.returncode == 0, out
    assert "stopped" in out


def test_goal_budget_is_set_and_validated(db: str) -> None:
    goal = cli_json(db, "goal", "create", "Spend carefully")
    assert isinstance(goal, dict)
    updated = cli_json(
        db, "goal", "budget", goal["id"], "--max-cost-usd", "2.5", "--max-steps", "9"
    )
    budget = updated["budget"]  # type: ignore[index]
    assert (budget["max_steps"], budget["max_cost_usd"], budget["max_tokens"]) == (9, 2.5, None)
    code, out = cli(db, "goal", "budget", goal["id"], "--max-steps", "-1")
    assert code == 1
    assert "must not be negative" in out
    code, out = cli(db, "goal", "budget", "gol_missing", "--max-steps", "1")
    assert code == 1
    assert "no goal starts with 'gol_missing'" in out


def test_tokens_and_audit_from_the_cli(db: str) -> None:
    """A token is shown once and stored hashed; creating and revoking it is audited; the chain
    verifies."""
    code, out = cli(db, "token", "create", "phone", "--scope", "read")
    assert code == 0, out
    token_id, plaintext = out.split(":", 1)[0].split()[0], out.split(": ", 1)[1].split()[0]
    assert plaintext.startswith("stw_")
    listed = cli_json(db, "token", "list")
    assert [t["id"] for t in listed] == [token_id]  # type: ignore[union-attr]
    assert plaintext not in json.dumps(listed)
    code, out = cli(db, "token", "revoke", token_id)
    assert code == 0, out
    kinds = [e["kind"] for e in cli_json(db, "audit", "list")]  # type: ignore[union-attr]
    assert kinds == ["token", "revocation"]
    code, out = cli(db, "audit", "verify")
    assert code == 0, out
    assert "audit chain intact: 2 entries" in out
    code, out = cli(db, "token", "revoke", "tok_missing")
    assert code == 1
    assert "no token starts with 'tok_missing'" in out


def test_connections_rules_and_grants_from_the_cli(db: str) -> None:
    added = cli_json(db, "connection", "add", "mail", "--kind", "email", "--scope", "email.read")
    assert added["scopes"] == ["email.read"]  # type: ignore[index]
    rule = cli_json(db, "rule", "add", "email.*", "ask", "--priority", "5")
    assert rule["mode"] == "ask"  # type: ignore[index]
    code, out = cli(db, "rule", "add", "email.*", "sometimes")
    assert code == 1
    assert "unknown rule mode" in out
    assert [r["pattern"] for r in cli_json(db, "rule", "list")] == ["email.*"]  # type: ignore[union-attr]
    code, out = cli(db, "rule", "delete", rule["id"])  # type: ignore[index]
    assert code == 0, out
    assert cli_json(db, "grant", "list") == []
    code, out = cli(db, "connection", "disconnect", added["id"])  # type: ignore[index]
    assert code == 0, out
    assert "disconnected" in out
    [listed] = cli_json(db, "connection", "list")  # type: ignore[misc]
    assert listed["active"] is False
    kinds = [e["kind"] for e in cli_json(db, "audit", "list")]  # type: ignore[union-attr]
    assert kinds == ["connection", "rule", "rule", "revocation"]


def test_a_grant_with_an_allowance_per_period_from_the_cli(db: str) -> None:
    cli_json(db, "connection", "add", "bank", "--kind", "bank", "--scope", "payment.send")
    grant = cli_json(
        db,
        "grant",
        "add",
        "--scope",
        "payment.send",
        "--per-period",
        "100",
        "--period",
        "1w",
        "--to",
        "Shop@Example.com",
        "--reason",
        "groceries",
    )
    assert grant["lifetime"] == "standing"  # type: ignore[index]
    assert grant["constraints"] == {  # type: ignore[index]
        "period_amount": 100.0,
        "period_seconds": 604_800.0,
        "recipients": ["shop@example.com"],
    }
    code, out = cli(db, "grant", "add", "--scope", "payment.send", "--per-period", "5")
    assert code != 0
    assert "go together" in out
    code, out = cli(
        db, "grant", "add", "--scope", "payment.send", "--per-period", "5", "--period", "soon"
    )
    assert code != 0
    assert "12h" in out
    code, out = cli(db, "grant", "add", "--scope", "email.send")
    assert code == 1
    assert "no active connection allows email.send" in out
    assert [g["id"] for g in cli_json(db, "grant", "list")] == [grant["id"]]  # type: ignore[index, union-attr]


def test_secrets_are_read_from_stdin_listed_without_values_and_survive_rotation(
    db: str, tmp_path: Path
) -> None:
    env = {"STEWARD_DATA_DIR": str(tmp_path), "STEWARD_VAULT_KEY": ""}

    def run(*args: str, stdin: str = "") -> tuple[int, str]:
        result = runner.invoke(app, [*args, "--db", db], env=env, input=stdin)
        return result.exit_code, result.output

    code, out = run("secret", "set", "github", "--host", "api.github.com", stdin="ghp_s3cret\n")
    assert code == 0, out
    assert "ghp_s3cret" not in out
    code, out = run("secret", "set", "bad", "--host", "https://x.io/path", stdin="v")
    assert code == 1
    assert "bare host name" in out
    code, out = run("secret", "set", "empty", "--host", "x.io", stdin="")
    assert code == 1
    assert "empty" in out
    code, out = run("secret", "list", "--json")
    assert code == 0, out
    assert [s["name"] for s in json.loads(out)] == ["github"]
    assert "ghp_s3cret" not in out
    key_before = (tmp_path / "vault.key").read_text()
    code, out = run("vault", "rotate")
    assert code == 0, out
    assert "1 secret(s) re-encrypted" in out
    key_after = (tmp_path / "vault.key").read_text()
    assert key_after != key_before
    assert len(key_after.split()) == 1  # the old key is retired

    async def value() -> str:
        from steward.sentinel.vault import Vault, VaultKeys
        from steward.store import Store

        store = await Store.open(db)
        try:
            person = (await store.persons.list_persons())[0]
            _, ciphertext = await store.secrets.secret_ciphertext(person.id, "github")
            return Vault(VaultKeys.load(tmp_path, environ={})).decrypt(ciphertext)
        finally:
            await store.close()

    import asyncio

    assert asyncio.run(value()) == "ghp_s3cret"
    code, out = run("secret", "delete", "github")
    assert code == 0, out
    code, out = run("secret", "delete", "github")
    assert code == 1
    assert "not found" in out
    kinds = [e["kind"] for e in json.loads(run("audit", "list", "--json")[1])]
    assert kinds.count("secret") == 2


def test_a_heartbeat_with_hours_and_a_budget_in_plain_words(db: str) -> None:
    """``trigger add heartbeat 10m`` with active hours and a budget; ``trigger list`` says
    them in words; bad hours, a negative budget and a heartbeat without a goal are refused
    and store nothing."""
    goal = cli_json(db, "goal", "create", "Watch the roof")
    assert isinstance(goal, dict)
    common = ["trigger", "add", "heartbeat", "10m", "--tz", "Europe/Berlin"]
    for bad, says in [
        ([], "give the goal it serves"),
        (["--goal", goal["id"], "--active-hours", "20:00-08:00"], "must end after they start"),
        (["--goal", goal["id"], "--active-hours", "8-20"], "like 08:00"),
        (["--goal", goal["id"], "--budget-runs", "-1"], "cannot be negative"),
        (["--goal", goal["id"], "--days", "mon-fri"], "days go with active hours"),
    ]:
        code, out = cli(db, *common, *bad)
        assert code == 1, bad
        assert says in out, out
    assert cli_json(db, "trigger", "list") == []

    added = cli_json(
        db,
        *common,
        "--goal",
        goal["id"],
        "--active-hours",
        "08:00-20:00",
        "--days",
        "mon-fri",
        "--watch",
        "web.changed",
        "--budget-runs",
        "20",
        "--budget-tokens",
        "200000",
        "--budget-cost",
        "1.50",
    )
    assert isinstance(added, dict)
    assert added["spec"] == "600"
    assert added["task"]["kind"] == "agent"  # it reads what it found; a noop would not
    [listed] = cli_json(db, "trigger", "list")  # type: ignore[misc]
    assert listed["schedule"] == (
        "heartbeat every 10 min, 08:00-20:00 Mon-Fri, watching web.changed"
    )
    assert listed["budget"] == "20 runs / 200,000 tokens / $1.50 a day"
    assert listed["state"] == "on"
    assert listed["checks"] == "0 checks found nothing"
    code, out = cli(db, "trigger", "list")
    assert code == 0
    assert "20 runs" in out
