"""The shell runs in the person's workspace and nowhere else: it cannot read the data directory,
the vault key or another person's workspace (by path, through ``/proc`` or through a link),
cannot reach the network, and is stopped at each of its limits."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from steward.environment.sandbox import Sandbox
from steward.errors import UsageError

SECRETS = ("steward.db", "vault.key")


def workspace_of(data_dir: Path, person: str) -> Path:
    path = data_dir / "workspace" / person
    path.mkdir(parents=True, exist_ok=True)
    return path


async def test_the_shell_reads_and_writes_its_workspace(box: Sandbox, data_dir: Path) -> None:
    ana = workspace_of(data_dir, "ana")
    (ana / "in.txt").write_text("three\nlines\nhere\n")
    ran = await box.run(ana, "wc -l < in.txt > count.txt && cat count.txt && pwd")
    assert (ran.status, ran.stopped) == (0, None)
    assert ran.output.split() == ["3", "/workspace"]
    assert (ana / "count.txt").read_text().strip() == "3"
    assert ran.summary == "finished"


async def test_nothing_outside_the_workspace_is_there(box: Sandbox, data_dir: Path) -> None:
    ana = workspace_of(data_dir, "ana")
    ben = workspace_of(data_dir, "ben")
    (ben / "diary.txt").write_text("ben's private diary")
    tries = [
        *(f"cat {data_dir / name}" for name in SECRETS),
        *(f"cat /proc/1/root{data_dir / name}" for name in SECRETS),
        *(f"cat /proc/self/root{data_dir / name}" for name in SECRETS),
        f"cat {ben / 'diary.txt'}",
        "cat ../ben/diary.txt",
        "cat /workspace/../ben/diary.txt",
        f"ln -s {ben} benlink; cat benlink/diary.txt",
        "ln -s / root; cat root" + str(data_dir / "vault.key"),
    ]
    for command in tries:
        ran = await box.run(ana, command)
        assert ran.status != 0, command
        assert "vault key" not in ran.output, command
        assert "database" not in ran.output, command
        assert "diary" not in ran.output.replace("diary.txt", ""), command
    listed = await box.run(ana, "ls / /proc/1/root; ls /workspace/..; cat /proc/mounts")
    assert str(data_dir) not in listed.output
    assert "ben" not in listed.output.split()
    # the host's own processes are not there to look through
    assert (await box.run(ana, "ls /proc | grep -c '^[0-9]'")).output.strip() in {"2", "3", "4"}


async def test_stored_outputs_are_read_only(box: Sandbox, data_dir: Path) -> None:
    ana = workspace_of(data_dir, "ana")
    (ana / "artifacts").mkdir()
    (ana / "artifacts" / "out.txt").write_text("a stored tool output")
    ran = await box.run(ana, "cat artifacts/out.txt; echo changed > artifacts/out.txt")
    assert ran.output.startswith("a stored tool output")
    assert ran.status != 0
    assert "Read-only file system" in ran.output
    assert (ana / "artifacts" / "out.txt").read_text() == "a stored tool output"


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP server on this machine's loopback, reachable from here (the test shows it)."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(30)
    accepted: list[socket.socket] = []
    thread = threading.Thread(target=lambda: accepted.append(server.accept()[0]), daemon=True)
    thread.start()
    with socket.create_connection(server.getsockname()):  # reachable outside the sandbox
        thread.join(30)
    yield server.getsockname()[1]
    for conn in accepted:
        conn.close()
    server.close()


async def test_there_is_no_network(box: Sandbox, data_dir: Path, listener: int) -> None:
    ana = workspace_of(data_dir, "ana")
    for port in (listener, 5432):
        script = (
            "import socket\n"
            "try:\n"
            f"    socket.create_connection(('127.0.0.1', {port}), timeout=5)\n"
            "    print('connected')\n"
            "except OSError as exc:\n"
            "    print('refused', exc)\n"
        )
        (ana / "connect.py").write_text(script)
        ran = await box.run(ana, "python3 connect.py")
        assert ran.output.startswith("refused"), ran.output
    lookup = "import socket; socket.getaddrinfo('example.com', 80)"
    outside = await box.run(ana, f'python3 -c "{lookup}"')
    assert outside.status != 0
    assert "gaierror" in outside.output


async def test_a_command_is_stopped_at_its_deadline(box: Sandbox, data_dir: Path) -> None:
    ana = workspace_of(data_dir, "ana")
    short = replace(box.limits, wall_seconds=1.0)
    ran = await box.run(ana, "echo started; sleep 1000", limits=short)
    assert ran.status is None
    assert ran.stopped is not None
    assert ran.stopped.startswith("stopped after 1 s")
    assert ran.output == "started\n"
    # nothing of it is left running: its sleep is gone with it
    assert (await box.run(ana, "ps -e -o comm | grep -c sleep")).output.strip() == "0"


async def test_a_command_is_stopped_at_its_processor_time(box: Sandbox, data_dir: Path) -> None:
    ran = await box.run(workspace_of(data_dir, "ana"), 'python3 -c "while True: pass"')
    assert ran.stopped == "stopped: it used up its 2 s of processor time"


async def test_a_command_cannot_take_more_memory(box: Sandbox, data_dir: Path) -> None:
    ran = await box.run(workspace_of(data_dir, "ana"), 'python3 -c "x = bytearray(1 << 30)"')
    assert ran.status != 0
    assert "MemoryError" in ran.output


async def test_a_command_cannot_write_a_huge_file(box: Sandbox, data_dir: Path) -> None:
    ana = workspace_of(data_dir, "ana")
    small = replace(box.limits, file_bytes=1 << 20)
    ran = await box.run(ana, "head -c 5000000 /dev/zero > big", limits=small)
    assert ran.stopped is not None
    assert "larger than 1,048,576 bytes" in ran.stopped
    assert (ana / "big").stat().st_size <= 1 << 20


async def test_a_fork_bomb_is_contained(box: Sandbox, data_dir: Path) -> None:
    ana = workspace_of(data_dir, "ana")
    (ana / "bomb.py").write_text(
        "import os, time\n"
        "made = failed = 0\n"
        "for _ in range(400):\n"
        "    try:\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(5)\n"
        "            os._exit(0)\n"
        "        made += 1\n"
        "    except OSError:\n"
        "        failed += 1\n"
        "print(made, failed)\n"
    )
    ran = await box.run(ana, "python3 bomb.py")
    made, failed = map(int, ran.output.split())
    assert made < box.limits.processes
    assert failed > 0
    # the shell's classic: held to the count, and gone with the command (its namespace goes)
    bomb = await box.run(ana, "b() { b | b & }; b; sleep 2")
    assert "Cannot fork" in bomb.output
    assert (await box.run(ana, "ps -e -o comm | grep -c sh")).output.strip() == "1"


async def test_output_is_kept_up_to_its_limit(box: Sandbox, data_dir: Path) -> None:
    small = replace(box.limits, output_bytes=1000)
    ran = await box.run(workspace_of(data_dir, "ana"), "seq 1 100000", limits=small)
    assert ran.status == 0
    assert len(ran.output) == 1000
    assert ran.dropped == len("\n".join(str(n) for n in range(1, 100001))) + 1 - 1000


async def test_the_stored_outputs_folder_cannot_be_replaced(box: Sandbox, data_dir: Path) -> None:
    """``artifacts`` is made before the first command, so the shell is never first to put a
    link or a folder of its own there (stored outputs written through it would be the
    shell's to forge); one found replaced runs nothing."""
    ana = workspace_of(data_dir, "ana")
    for command in ("ln -s / artifacts", "mv artifacts mine", "rm -r artifacts", "mkdir store"):
        await box.run(ana, command)
    assert (ana / "artifacts").is_dir()
    assert not (ana / "artifacts").is_symlink()
    ran = await box.run(ana, f"cat artifacts{data_dir / 'vault.key'}")
    assert ran.status != 0
    assert "vault key" not in ran.output
    # a link put there from outside (an older workspace, say): refused, nothing run
    ben = workspace_of(data_dir, "ben")
    (ben / "store").mkdir()
    (ben / "artifacts").symlink_to("store")
    with pytest.raises(UsageError, match="replaced by a link"):
        await box.run(ben, "touch ran.txt")
    assert not (ben / "ran.txt").exists()


async def test_nothing_but_the_workspace_and_tmp_takes_writes(box: Sandbox, data_dir: Path) -> None:
    """The sandbox's own root is read-only: a command cannot fill memory through it."""
    ana = workspace_of(data_dir, "ana")
    ran = await box.run(ana, "mkdir /big; echo x > /x; echo ok > /tmp/t; echo ok > here.txt")
    assert "Read-only file system" in ran.output
    assert (ana / "here.txt").read_text() == "ok\n"
    assert (await box.run(ana, "cat /tmp/t 2>&1 || true")).status == 0
