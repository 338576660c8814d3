"""``steward codehost connect`` and ``steward codehost secret``, on both store backends: what
the person pastes into GitHub's or GitLab's settings is printed once, and works."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from steward.cli.main import app
from steward.domain.clock import SimulatedClock
from steward.errors import Unauthorized
from steward.service import Service
from steward.store import Store
from support.cli import WIDE
from support.codehost import encoded, github_headers, github_pull_request


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**WIDE, "STEWARD_DATA_DIR": str(tmp_path / "data"), "STEWARD_VAULT_KEY": ""}


async def steward(db: str, env: dict[str, str], *args: str) -> tuple[int, str]:
    result = await asyncio.to_thread(CliRunner().invoke, app, [*args, "--db", db], env=env)
    return result.exit_code, result.output


def shown(out: str, field: str) -> str:
    found = re.search(rf"^\s+{field}:\s+(\S+)$", out, re.MULTILINE)
    assert found is not None, out
    return found.group(1)


async def test_connecting_github_prints_what_to_paste_and_a_new_secret_replaces_it(
    db_url: str, env: dict[str, str], clock: SimulatedClock
) -> None:
    code, out = await steward(
        db_url,
        env,
        *("codehost", "connect", "github", "--name", "work", "--repo", "octo/widgets"),
        *("--url", "https://steward.example.com/"),
    )
    assert code == 0, out
    assert "Connected work (github). Takes GitHub deliveries about octo/widgets." in out
    assert "Settings → Webhooks → Add webhook" in out
    url = shown(out, "URL")
    assert re.fullmatch(r"https://steward\.example\.com/api/v1/hooks/github/con_\w+", url), url
    assert shown(out, "Content type") == "application/json"
    assert "Events:        Pull requests, Issue comments, Check runs, Workflow runs" in out
    first = shown(out, "Secret")

    code, out = await steward(db_url, env, "codehost", "secret", "work")
    assert code == 0, out
    assert "New secret for work: the old one no longer works." in out
    second = shown(out, "Secret")
    assert second != first
    path = url.removeprefix("https://steward.example.com")
    assert shown(out, "URL") == f"https://<steward-address>{path}"  # no --url given

    store = await Store.open(db_url)
    try:
        svc = Service(store, clock, data_dir=Path(env["STEWARD_DATA_DIR"]))
        connection_id = url.rsplit("/", 1)[1]
        body = encoded(github_pull_request())
        headers = {k.lower(): v for k, v in github_headers(first, body).items()}
        with pytest.raises(Unauthorized):
            await svc.receive_codehost("github", connection_id, body, headers)
        headers = {k.lower(): v for k, v in github_headers(second, body).items()}
        received = await svc.receive_codehost("github", connection_id, body, headers)
        assert received.event is not None
        assert received.event.type == "pr.opened"
    finally:
        await store.close()


async def test_a_gitlab_connection_names_its_secret_token_and_a_bad_repository_is_refused(
    db_url: str, env: dict[str, str]
) -> None:
    code, out = await steward(
        db_url, env, "codehost", "connect", "gitlab", "--name", "lab", "--repo", "group/sub/proj"
    )
    assert code == 0, out
    assert "Secret token:" in out
    assert "Content type" not in out  # GitLab always sends JSON
    assert "Events:        Merge request events, Pipeline events, Comments" in out
    code, out = await steward(
        db_url, env, "codehost", "connect", "gitlab", "--name", "x", "--repo", "nothing"
    )
    assert code == 1
    assert "'nothing' is not owner/name or owner/*" in out
