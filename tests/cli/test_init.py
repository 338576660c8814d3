"""``steward init`` against a real endpoint on a socket that answers like OpenAI's ``/v1/models``
(and refuses a wrong key), by flags and by prompts."""

from __future__ import annotations

import asyncio
import json
import stat
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import tomlkit

from steward.cli.main import app
from steward.config import Settings
from steward.service import Service
from steward.store import Store
from support.cli import runner

GOOD_KEY = "sk-good"


class Models(BaseHTTPRequestHandler):
    """``GET /v1/models``: the list with the right key, 401 with any other."""

    def do_GET(self) -> None:
        if self.path != "/v1/models":
            self._send(404, {"error": {"message": "not found"}})
        elif self.headers.get("Authorization") != f"Bearer {GOOD_KEY}":
            self._send(401, {"error": {"message": "Incorrect API key provided"}})
        else:
            listed = [{"id": "llama3.1:latest", "object": "model", "created": 0, "owned_by": "me"}]
            self._send(200, {"object": "list", "data": listed})

    def _send(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # quiet test output
        pass


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Models)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def init(home: Path, *args: str, stdin: str | None = None) -> tuple[int, str]:
    env = {"STEWARD_DATA_DIR": str(home), "STEWARD_CONFIG": None, "STEWARD_DATABASE_URL": None}
    result = runner.invoke(app, ["init", *args], input=stdin, env=env)  # type: ignore[arg-type]
    return result.exit_code, result.output


def saved(home: Path) -> dict[str, object]:
    return dict(tomlkit.parse((home / "steward.toml").read_text()).unwrap())


async def _person_and_goals(home: Path) -> tuple[str, list[str]]:
    store = await Store.open(Settings(data_dir=home).resolved_database_url())
    try:
        svc = Service(store)
        person = await svc.ensure_person()
        if not await svc.list_goals(person_id=person.id):
            await svc.create_goal(person_id=person.id, title="kept across inits")
        return person.timezone, [g.title for g in await svc.list_goals(person_id=person.id)]
    finally:
        await store.close()


def test_flags_check_the_endpoint_write_the_settings_and_a_rerun_keeps_everything(
    tmp_path: Path, endpoint: str
) -> None:
    home = tmp_path / "home"
    code, out = init(
        home,
        "--non-interactive",
        *("--provider", "openai", "--base-url", endpoint, "--model", "llama3.1"),
        *("--api-key", GOOD_KEY, "--timezone", "Europe/Lisbon"),
    )
    assert code == 0, out
    assert "ok: the endpoint answers and serves llama3.1" in out
    assert "stw_" in out
    assert "steward up" in out
    assert "steward service install" in out
    assert saved(home) == {
        "model_provider": "openai",
        "model": "llama3.1",
        "model_base_url": endpoint,
        "model_api_key": GOOD_KEY,
        "embeddings": "none",
    }
    assert stat.S_IMODE((home / "steward.toml").stat().st_mode) == 0o600
    zone, goals = asyncio.run(_person_and_goals(home))
    assert zone == "Europe/Lisbon"
    assert goals == ["kept across inits"]

    # the person's own additions to the file, and the database, survive a re-run
    with (home / "steward.toml").open("a") as f:
        f.write('# my own note\n[prices."llama3.1"]\ninput_per_mtok = 0\noutput_per_mtok = 0\n')
    code, out = init(home, "--non-interactive")
    assert code == 0, out
    assert "stw_" not in out
    assert "you have a control token" in out
    text = (home / "steward.toml").read_text()
    assert "# my own note" in text
    assert saved(home)["model"] == "llama3.1"
    assert asyncio.run(_person_and_goals(home)) == ("Europe/Lisbon", ["kept across inits"])


def test_a_failed_check_says_why_and_changes_nothing_unless_kept(
    tmp_path: Path, endpoint: str
) -> None:
    home = tmp_path / "home"
    flags = ("--non-interactive", "--base-url", endpoint, "--model", "llama3.1")
    code, out = init(home, *flags, "--provider", "openai", "--api-key", "sk-wrong")
    assert code == 1
    assert "refused the API key (Incorrect API key provided)" in out
    assert "nothing was changed" in out
    assert not (home / "steward.toml").exists()
    assert not (home / "steward.db").exists()

    code, out = init(home, *flags, "--provider", "openai", "--api-key", GOOD_KEY, "--model", "x")
    assert code == 1
    assert "does not serve a model named 'x'; it serves: llama3.1:latest" in out

    code, out = init(home, "--non-interactive", "--base-url", "http://127.0.0.1:9/v1")
    assert code == 1
    assert "cannot reach http://127.0.0.1:9/v1" in out

    code, out = init(home, *flags, "--provider", "openai", "--keep-unchecked", "--api-key", "k")
    assert code == 0, out
    assert saved(home)["model_api_key"] == "k"

    code, out = init(home, "--non-interactive", "--embeddings", "word2vec")
    assert code == 1
    assert "embeddings 'word2vec' cannot run here" in out

    code, out = init(home, "--non-interactive", "--timezone", "Mars/Olympus")
    assert code == 1
    assert "unknown time zone 'Mars/Olympus'" in out
    assert saved(home)["model_api_key"] == "k"


def test_prompts_offer_defaults_and_ask_again_after_a_failed_check(
    tmp_path: Path, endpoint: str
) -> None:
    home = tmp_path / "home"
    answers = [
        "",  # data directory: the default (STEWARD_DATA_DIR)
        "openai",
        endpoint,
        "llama3.1",
        "sk-wrong",  # refused...
        "",  # embeddings: none
        "Nowhere/Land",  # not a zone: asked again
        "Asia/Tokyo",
        "n",  # ...not kept: the model is asked again, with what was said as defaults
        "",
        "",
        "",
        GOOD_KEY,
    ]
    code, out = init(home, stdin="\n".join(answers) + "\n")
    assert code == 0, out
    assert "unknown time zone 'Nowhere/Land'" in out
    assert "refused the API key" in out
    assert "ok: the endpoint answers" in out
    assert saved(home)["model_api_key"] == GOOD_KEY
    assert asyncio.run(_person_and_goals(home))[0] == "Asia/Tokyo"

    # again: every value offered as the default; Enter keeps them all
    code, out = init(home, stdin="\n" * 8)
    assert code == 0, out
    assert f"[{endpoint}]" in out
    assert "[Asia/Tokyo]" in out
    assert saved(home)["model_api_key"] == GOOD_KEY
