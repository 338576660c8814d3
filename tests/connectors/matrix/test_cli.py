"""``steward channel add matrix`` against the real Synapse: the token read from standard input
and kept in the vault, the direct room opened and the person invited; a token that is not the
bot's refused with nothing stored."""

from __future__ import annotations

import asyncio
from pathlib import Path

from typer.testing import CliRunner

from steward.cli.main import app
from steward.domain.channel import ChannelKind
from steward.service import Service
from steward.store import Store
from support.cli import WIDE
from support.matrixserver import MatrixServer


async def test_adding_a_matrix_channel_from_the_terminal(
    db_url: str, tmp_path: Path, matrix_server: MatrixServer, store: Store
) -> None:
    env = {**WIDE, "STEWARD_DATA_DIR": str(tmp_path / "data"), "STEWARD_VAULT_KEY": ""}
    bot, me = [await asyncio.to_thread(matrix_server.register) for _ in range(2)]
    where = ("--homeserver", matrix_server.url, "--user", bot.user_id, "--person", me.user_id)

    async def steward(stdin: str, *args: str) -> tuple[int, str]:
        argv = ["channel", "add", "matrix", *args, *where, "--db", db_url]
        result = await asyncio.to_thread(CliRunner().invoke, app, argv, input=stdin, env=env)
        return result.exit_code, result.output

    code, out = await steward(f"{me.token}\n", "wrong")
    assert code == 1
    assert f"is {me.user_id}'s, not {bot.user_id}'s" in " ".join(out.split())
    code, out = await steward(f"{bot.token}\n", "matrix")
    assert code == 0, out
    assert bot.token not in out
    said = " ".join(out.split())
    assert f"Added the Matrix channel matrix: {bot.user_id} writes to {me.user_id}." in said
    assert "accept its invitation" in said

    svc = Service(store, data_dir=tmp_path / "data")
    person = await svc.ensure_person()
    [channel] = await store.channels.list_for(person.id)
    assert channel.kind is ChannelKind.MATRIX
    assert bot.token not in str(channel.config)
    [secret] = await store.secrets.list_secrets(person.id)
    assert secret.name == channel.config["secret"]
    invited = await asyncio.to_thread(
        matrix_server.call, "GET", "/_matrix/client/v3/sync?timeout=0", token=me.token
    )
    assert channel.config["room"] in invited["rooms"]["invite"]
