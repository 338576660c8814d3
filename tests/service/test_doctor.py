"""``steward doctor`` on real databases, files and HTTP servers: each problem it diagnoses
(vault key missing or wrong, model server refusing or unreachable, database behind on its
migrations, files other users can read) with its fix, and a clean bill of health."""

from __future__ import annotations

import asyncio
import socket
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi import FastAPI, Header, HTTPException

from steward.config import Settings
from steward.domain.authority import Connection
from steward.domain.clock import Clock
from steward.domain.ids import new_id
from steward.sentinel.vault import VaultKeys
from steward.service import Service
from steward.service.doctor import Finding, Level, diagnose
from steward.store import Store, migrate
from steward.testing.http_server import serving
from support.cli import cli


def model_server() -> FastAPI:
    """An OpenAI-compatible server's model list, for the key ``good`` only."""
    app = FastAPI()

    @app.get("/v1/models")
    async def models(authorization: str = Header("")) -> dict[str, list[str]]:
        if authorization != "Bearer good":
            raise HTTPException(401)
        return {"data": []}

    return app


def refusing_url() -> str:
    """An address where nothing listens (the port was free a moment ago)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir(mode=0o700)
    return path


async def findings(data_dir: Path, db_url: str, **settings: object) -> dict[str, Finding]:
    found = await diagnose(
        Settings(data_dir=data_dir, database_url=db_url, **settings),
        database_url=db_url,
        clock=Clock(),
    )
    return {f.check: f for f in found}


def loosen(data_dir: Path) -> None:
    """The data directory and its key readable by everyone (copied with a careless umask)."""
    data_dir.chmod(0o755)
    (data_dir / "vault.key").chmod(0o644)


async def with_a_secret(store: Store, data_dir: Path) -> None:
    svc = Service(store, Clock(), data_dir=data_dir)
    person = await svc.ensure_person()
    await svc.put_secret(person_id=person.id, name="shop", value="s3cret", hosts=["x.io"])


async def test_a_healthy_installation_passes_every_check(
    store: Store, db_url: str, data_dir: Path
) -> None:
    await with_a_secret(store, data_dir)
    async with serving(model_server()) as url:
        found = await findings(
            data_dir, db_url, model="llama3.1", model_base_url=f"{url}/v1", model_api_key="good"
        )
    assert {c: f.level for c, f in found.items()} == dict.fromkeys(
        ["permissions", "disk", "database", "clock", "vault key", "model"], Level.OK
    )
    assert "opens the 1 stored secret(s)" in found["vault key"].said


async def test_a_missing_vault_key_with_secrets_stored_is_a_problem(
    store: Store, db_url: str, data_dir: Path
) -> None:
    await with_a_secret(store, data_dir)
    (data_dir / "vault.key").unlink()
    found = (await findings(data_dir, db_url))["vault key"]
    assert found.level is Level.PROBLEM
    assert found.said == (
        f"the vault key {data_dir / 'vault.key'} is missing, and the database holds 1 secret(s) "
        "encrypted with it"
    )
    assert found.fix == (
        f"restore {data_dir / 'vault.key'} from your backup (or set $STEWARD_VAULT_KEY to the key)"
    )
    assert not (data_dir / "vault.key").exists()  # the doctor made no new key


async def test_another_key_than_the_secrets_was_encrypted_with_is_a_problem(
    store: Store, db_url: str, data_dir: Path
) -> None:
    await with_a_secret(store, data_dir)
    (data_dir / "vault.key").unlink()
    VaultKeys.load(data_dir)  # a new key, as a start would make one while none is stored
    found = (await findings(data_dir, db_url))["vault key"]
    assert found.level is Level.PROBLEM
    assert found.said.startswith("the vault key does not open the stored secrets")


async def test_a_model_server_that_refuses_or_is_not_there(
    store: Store, db_url: str, data_dir: Path
) -> None:
    gone = refusing_url()
    found = (await findings(data_dir, db_url, model="llama3.1", model_base_url=gone))["model"]
    assert found.level is Level.PROBLEM
    assert found.said.startswith(f"the model server at {gone} does not answer (ConnectError")
    assert found.fix == "start it (for Ollama: ollama serve), or correct STEWARD_MODEL_BASE_URL"
    async with serving(model_server()) as url:
        wrong = (
            await findings(
                data_dir, db_url, model="gpt", model_base_url=f"{url}/v1", model_api_key="bad"
            )
        )["model"]
    assert wrong.said == f"the model server at {url}/v1 refused the API key (HTTP 401)"
    assert wrong.fix == "check STEWARD_MODEL_API_KEY"


async def test_a_database_behind_on_its_migrations_says_to_upgrade(
    store: Store, db_url: str, data_dir: Path
) -> None:
    await asyncio.to_thread(migrate.downgrade, store.backend.engine, "0016")
    found = (await findings(data_dir, db_url))["database"]
    assert found.level is Level.PROBLEM
    assert found.said == (
        f"the database schema is at revision 0016, behind this version's {migrate.head_revision()}"
    )
    assert found.fix == "run 'steward db upgrade'"
    assert migrate.current_revision(store.backend.engine) == "0016"  # left as it was


async def test_files_other_users_can_read_are_a_problem(
    store: Store, db_url: str, data_dir: Path
) -> None:
    await with_a_secret(store, data_dir)
    loosen(data_dir)
    found = await diagnose(Settings(data_dir=data_dir), database_url=db_url, clock=Clock())
    said = {f.said: f.fix for f in found if f.check == "permissions"}
    assert said == {
        f"{data_dir} can be opened by other users of this machine (mode 755)": (
            f"chmod 700 {data_dir} (Steward also tightens it when it next starts)"
        ),
        f"{data_dir / 'vault.key'} can be opened by other users of this machine (mode 644)": (
            f"chmod 600 {data_dir / 'vault.key'} (Steward also tightens it when it next starts)"
        ),
    }


def test_the_command_prints_each_finding_with_its_fix_and_fails(
    data_dir: Path, tmp_path: Path
) -> None:
    db = f"sqlite:///{tmp_path / 'never-upgraded.db'}"
    env = {"STEWARD_DATA_DIR": str(data_dir)}
    code, out = cli(db, "doctor", env=env)
    assert code == 1, out
    assert "PROBLEM  database: the database has no schema yet\n" in out
    assert "         fix: run 'steward db upgrade'\n" in out
    assert "Traceback" not in out


async def test_a_connected_account_that_no_longer_signs_in_is_a_problem(
    store: Store, db_url: str, data_dir: Path
) -> None:
    svc = Service(store, Clock(), data_dir=data_dir)
    person = await svc.ensure_person()
    # an account connected before its kind's connector went away (settings, a login)
    await store.authority.add_connection(
        Connection(
            id=new_id("con"),
            person_id=person.id,
            kind="email",
            name="home mail",
            scopes=("email.send",),
            created_at=datetime.now(UTC),
            settings={"host": "imap.example.com", "username": "me"},
        )
    )
    # a connection that only holds authority has no login to test
    await svc.add_connection(
        person_id=person.id, kind="http", name="shop", scopes=["payment.send"], hosts=["shop.io"]
    )
    everything = await findings(data_dir, db_url)
    assert "account shop" not in everything
    found = everything["account home mail"]
    assert found.level is Level.PROBLEM
    # a connection made before its kind had a connector: the connector test's own words
    assert found.said.startswith("no connector for 'email'; connectable: mail, calendar")
    assert found.fix == "steward connect email again, or disconnect it"
