"""Every command block of README.md, run in order in one fresh data directory: a block that
fails fails its test. A block that cannot run here says why in the comment before it
(``<!-- readme-test: skip (reason) -->``); one whose output must show something says what
(``<!-- readme-test: expect (text) -->``); one using a command that another branch brings is
marked ``<!-- readme-test: after-merge -->`` and runs as soon as the command exists."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.readme import Block, blocks, steward_on_path

README = Path(__file__).parent.parent / "README.md"
BLOCKS = blocks(README)
MARKERS = {"skip", "after-merge", "expect"}
SCRIPT = [{"say": "This week: nothing needed you; your goals ran as planned."}] * 20
"""The model ``steward ask`` meets: a script, so the README needs no model server."""


@dataclass(kw_only=True, frozen=True)
class Shell:
    """Where the blocks run: a working directory and an environment with the test's
    ``steward`` first on the PATH."""

    cwd: Path
    env: dict[str, str]

    def run(self, script: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", script],
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=300,
        )


@pytest.fixture(scope="module")
def shell(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shell]:
    home = tmp_path_factory.mktemp("readme")
    (home / "script.json").write_text(json.dumps(SCRIPT))
    with steward_on_path(home / "bin") as bin_dir:
        env = {k: v for k, v in os.environ.items() if not k.startswith("STEWARD_")}
        env |= {
            "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / "config"),
            "STEWARD_DATA_DIR": str(home / "data"),
            "STEWARD_MODEL_PROVIDER": "scripted",
            "STEWARD_MODEL_SCRIPT": str(home / "script.json"),
            "COLUMNS": "200",
        }
        work = home / "work"
        work.mkdir()
        yield Shell(cwd=work, env=env)


def test_the_readme_has_command_blocks_and_every_marker_is_known_and_explained() -> None:
    assert len([b for b in BLOCKS if b.marker is None]) >= 5
    for block in BLOCKS:
        assert block.marker in MARKERS | {None}, f"README line {block.line}: {block.marker}"
        if block.marker in ("skip", "expect"):
            assert block.why, f"README line {block.line}: say why it is skipped, or what to expect"


@pytest.mark.parametrize("block", BLOCKS, ids=[f"line-{b.line}" for b in BLOCKS])
def test_block_runs(block: Block, shell: Shell) -> None:
    if block.marker == "skip":
        pytest.skip(f"README line {block.line}: {block.why}")
    if block.marker == "after-merge":
        missing = [c for c in block.commands if shell.run(f"steward {c} --help").returncode]
        if missing:
            pytest.skip(f"after merge: `steward {' / '.join(missing)}` is not in this branch yet")
    done = shell.run(block.script)
    assert done.returncode == 0, (
        f"README line {block.line} failed (exit {done.returncode}):\n{block.script}\n"
        f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    )
    if block.marker == "expect":  # a command that works but finds nothing is wrong too
        assert block.why in " ".join(done.stdout.split()), done.stdout
