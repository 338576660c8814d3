"""Running a command in the person's workspace under bubblewrap, within limits.

What the command sees: its workspace at ``/workspace`` (read-write, the working directory; the
``artifacts`` folder in it read-only, so stored tool outputs stay as they were recorded), the
system's programs and libraries read-only (``/usr`` and the ``/bin``, ``/lib*`` links to it, a
few files of ``/etc``), a fresh ``/proc`` of its own processes, a minimal ``/dev`` and a small
``/tmp`` in memory. Nothing else is mounted: not the data directory (database, vault key), not
other persons' workspaces, not the machine's root (``/proc/1/root`` is the sandbox's own root,
since the command is in a new process namespace).

New namespaces for the network (no network at all: it has only a loopback of its own),
processes, IPC, host name and users; every capability dropped; ``--die-with-parent`` and
``--new-session`` (no terminal to inject keystrokes into).

Given an ``egress`` directory (:mod:`steward.environment.proxy`: a private directory holding the
unix socket of a proxy outside), the network namespace stays empty, the directory is mounted
read-only at ``/run/steward-egress``, and the command runs under a small forwarder
(:data:`FORWARDER`, the system's ``python3``) that listens on ``127.0.0.1:3128`` inside and
relays each connection to that socket; the usual proxy variables name it. A program that ignores
them finds no route anywhere.

Limits, set inside the sandbox with ``prlimit`` so that they count only its own processes:
processor seconds, address space, processes, file size, no core files; a wall-clock deadline
after which the whole process group is killed; the output kept up to a number of bytes (the rest
is read and dropped, and the result says so). The kernel does not count processes of the root
user against a process limit, so when Steward runs as root the process count is held by a
``pids`` control group instead, and without one the sandbox refuses to run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

from steward.errors import UsageError
from steward.filemodes import private_dir

BWRAP = "/usr/bin/bwrap"
"""Debian's bubblewrap."""
PRLIMIT = "/usr/bin/prlimit"
"""util-linux's prlimit (Debian: required), run inside the sandbox to set its limits."""
SHELL = "/bin/sh"
PYTHON = "/usr/bin/python3"
"""The system's Python (Debian: the forwarder of an online command runs on it)."""
EGRESS_INSIDE = "/run/steward-egress"
"""Where an online command's proxy directory is mounted."""
EGRESS_SOCKET = "proxy.sock"
"""The proxy's unix socket in that directory."""
PROXY_PORT = 3128
"""Where the forwarder listens inside (the sandbox's own loopback)."""
PROXY_URL = f"http://127.0.0.1:{PROXY_PORT}"
PROXY_VARIABLES = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
)
FORWARDER = r"""
import os, socket, subprocess, sys, threading
threading.stack_size(256 << 10)
path, port, command = sys.argv[1], int(sys.argv[2]), sys.argv[3]
listener = socket.create_server(("127.0.0.1", port), backlog=64)
def pump(a, b):
    try:
        while data := a.recv(65536):
            b.sendall(data)
    except OSError:
        pass
    try:
        b.shutdown(socket.SHUT_WR)
    except OSError:
        pass
def serve(client):
    with client, socket.socket(socket.AF_UNIX) as out:
        try:
            out.connect(path)
        except OSError:
            return
        back = threading.Thread(target=pump, args=(out, client), daemon=True)
        back.start()
        pump(client, out)
        back.join()
def accept():
    while True:
        client, _ = listener.accept()
        threading.Thread(target=serve, args=(client,), daemon=True).start()
threading.Thread(target=accept, daemon=True).start()
status = subprocess.call(["/bin/sh", "-c", command])
os._exit(128 - status if status < 0 else status)
"""
"""Run inside the sandbox of an online command: listens on the sandbox's own loopback, relays
each connection to the proxy's socket, runs the command as its child and ends with its status
(a signal ``N`` as ``128 + N``, as the shell reports it). Threads, not processes: each counts
against the process limit, two per open connection."""
ETC_FILES = (
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/ssl/certs",
    "/etc/mime.types",
)
"""The parts of ``/etc`` programs need to start (libraries, command alternatives) and little
else: no accounts, no host names, no configuration of this machine's services."""
PIDS_CGROUPS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))
"""Where a ``pids`` control group may be made when running as root (v1, then v2)."""
READ_ONLY_INSIDE = "artifacts"
PATH_ONLY = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
"""How the directories mounted into the sandbox are opened: as themselves, never through a
link."""
"""The workspace folder the command may read but not change: stored tool outputs."""


class SandboxUnavailable(UsageError):
    """The sandbox cannot run here (bubblewrap missing, no way to hold the process count)."""


@dataclass(kw_only=True, frozen=True)
class Limits:
    """What one command may use."""

    wall_seconds: float = 30.0
    """Real time, after which every process of the command is killed."""
    cpu_seconds: int = 20
    """Processor time (of each process; the deadline bounds them together)."""
    memory_bytes: int = 1 << 30
    """Address space of each process."""
    processes: int = 64
    """Processes and threads at once."""
    file_bytes: int = 64 << 20
    """The largest file it may write (0: it may make no file grow, only read, move and
    remove)."""
    tmp_bytes: int = 64 << 20
    """The size of its ``/tmp`` (kept in memory)."""
    output_bytes: int = 100_000
    """The most output (standard output and error together) kept."""

    def __post_init__(self) -> None:
        numbers = (self.cpu_seconds, self.memory_bytes, self.processes, self.tmp_bytes)
        if self.wall_seconds <= 0 or min(numbers) <= 0 or self.file_bytes < 0:
            raise UsageError("sandbox limits must be positive")
        if self.output_bytes <= 0:
            raise UsageError("sandbox output limit must be positive")


@dataclass(kw_only=True, frozen=True)
class Ran:
    """What a command did."""

    status: int | None
    """Its exit status (128 + N: ended by signal N); None when it was stopped at its deadline."""
    output: str
    """Its standard output and error, interleaved, as text (bytes that are not UTF-8 replaced),
    up to the output limit."""
    dropped: int
    """Bytes of output beyond the limit, read and not kept."""
    stopped: str | None
    """Why it was stopped, in plain words (a limit it reached), if it was."""

    @property
    def summary(self) -> str:
        """How it ended, in one sentence."""
        if self.stopped is not None:
            return self.stopped
        if self.status == 0:
            return "finished"
        return f"ended with status {self.status}"


def available() -> bool:
    """Bubblewrap and prlimit are installed."""
    return all(os.access(p, os.X_OK) for p in (BWRAP, PRLIMIT))


class Sandbox:
    """Runs commands in a person's workspace (see the module docstring)."""

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()

    async def run(
        self,
        workspace: Path,
        command: str,
        *,
        limits: Limits | None = None,
        egress: Path | None = None,
    ) -> Ran:
        """Run ``command`` with ``/bin/sh -c`` in ``workspace`` (made if missing); with
        ``egress`` (a proxy's private directory, see the module docstring), able to reach what
        that proxy lets through."""
        limits = limits or self.limits
        if not available():
            raise SandboxUnavailable(
                "the sandbox needs bubblewrap (Debian package bubblewrap), which is not "
                "installed on this machine"
            )
        if "\x00" in command:
            raise UsageError("a command cannot contain a NUL character")
        if egress is not None and not os.access(PYTHON, os.X_OK):
            raise SandboxUnavailable(f"a command with the network needs {PYTHON}, which is missing")
        private_dir(workspace)
        with _opened(workspace) as (where, stored):
            async with _process_cap(limits.processes) as wrap:
                argv = [*wrap, *bwrap_args(where, stored, limits, egress)]
                if egress is None:
                    argv += [SHELL, "-c", command]
                else:
                    inside = f"{EGRESS_INSIDE}/{EGRESS_SOCKET}"
                    argv += [PYTHON, "-I", "-S", "-c", FORWARDER, inside, str(PROXY_PORT), command]
                kept = tuple(fd for fd in (where, stored) if fd is not None)
                return await _supervise(argv, limits, kept)


@contextlib.contextmanager
def _opened(workspace: Path) -> Iterator[tuple[int, int | None]]:
    """The workspace directory, and its ``artifacts`` folder if it is one, opened without
    following a link: bubblewrap mounts these very directories (by descriptor), so a link the
    sandbox put in a folder's place between a check and the mount cannot lead it elsewhere."""
    where = os.open(workspace, PATH_ONLY)
    stored = None
    try:
        # made here when missing, so the shell can never be first to put a link or a folder
        # of its own there (stored outputs written through it would be the shell's to forge)
        with contextlib.suppress(FileExistsError):
            os.mkdir(READ_ONLY_INSIDE, 0o700, dir_fd=where)
        try:
            stored = os.open(READ_ONLY_INSIDE, PATH_ONLY, dir_fd=where)
        except OSError as exc:
            raise UsageError(
                f"the workspace's {READ_ONLY_INSIDE} folder has been replaced by a link or a "
                "file; nothing was run (remove it to go on)"
            ) from exc
        yield where, stored
    finally:
        os.close(where)
        if stored is not None:
            os.close(stored)


def bwrap_args(
    workspace: int, stored: int | None, limits: Limits, egress: Path | None = None
) -> list[str]:
    """The bubblewrap command line (through ``prlimit``) up to the command itself, mounting
    the workspace from the descriptor ``workspace``, its stored outputs read-only from
    ``stored`` and a proxy's directory from ``egress``."""
    args = [
        BWRAP,
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--clearenv",
        "--setenv",
        "PATH",
        "/usr/local/bin:/usr/bin:/bin",
        "--setenv",
        "HOME",
        "/workspace",
        "--setenv",
        "LANG",
        "C.UTF-8",
        "--setenv",
        "TMPDIR",
        "/tmp",
        "--hostname",
        "sandbox",
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):  # merged /usr: the same link inside
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for path in ETC_FILES:
        args += ["--ro-bind-try", path, path]
    args += ["--proc", "/proc", "--dev", "/dev", "--size", str(limits.tmp_bytes), "--tmpfs", "/tmp"]
    args += ["--bind-fd", str(workspace), "/workspace"]
    if stored is not None:
        args += ["--ro-bind-fd", str(stored), f"/workspace/{READ_ONLY_INSIDE}"]
    if egress is not None:
        args += ["--ro-bind", str(egress), EGRESS_INSIDE]
        for name in PROXY_VARIABLES:
            args += ["--setenv", name, PROXY_URL]
    # bubblewrap's root is a tmpfs of its own: read-only, so only /tmp (bounded) and the
    # workspace take writes, and a command cannot fill the machine's memory through it
    args += ["--remount-ro", "/", "--chdir", "/workspace", PRLIMIT]
    args += [
        f"--cpu={limits.cpu_seconds}:{limits.cpu_seconds + 1}",  # SIGXCPU, then SIGKILL
        f"--as={limits.memory_bytes}",
        f"--nproc={limits.processes}",
        f"--fsize={limits.file_bytes}",
        "--core=0",
        "--",
    ]
    return args


async def _supervise(argv: list[str], limits: Limits, fds: tuple[int, ...]) -> Ran:
    """Start ``argv`` in a process group of its own, keep its output up to the limit, and kill
    the group at the deadline (or when the caller gives up on it)."""
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
        pass_fds=fds,
    )
    assert process.stdout is not None
    kept = bytearray()
    dropped = 0

    async def drain() -> None:
        nonlocal dropped
        assert process.stdout is not None
        while chunk := await process.stdout.read(65536):
            room = limits.output_bytes - len(kept)
            kept.extend(chunk[: max(room, 0)])
            dropped += max(len(chunk) - max(room, 0), 0)

    stopped = None
    try:
        try:
            await asyncio.wait_for(asyncio.gather(drain(), process.wait()), limits.wall_seconds)
        except TimeoutError:
            stopped = (
                f"stopped after {limits.wall_seconds:g} s, the time one command may take; "
                "what it printed until then is shown"
            )
    finally:
        _kill_group(process.pid)
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
    status = None if stopped else process.returncode
    if status is not None and stopped is None:
        stopped = _limit_reached(status, limits)
    output = kept.decode(errors="replace")
    return Ran(status=status, output=output, dropped=dropped, stopped=stopped)


def _limit_reached(status: int, limits: Limits) -> str | None:
    """The limit an exit status says the command reached, in words."""
    if status == 128 + signal.SIGXCPU:
        return f"stopped: it used up its {limits.cpu_seconds} s of processor time"
    if status == 128 + signal.SIGXFSZ and limits.file_bytes == 0:
        return "stopped: it tried to write to a file, and this command may make no file grow"
    if status == 128 + signal.SIGXFSZ:
        return f"stopped: it tried to write a file larger than {limits.file_bytes:,} bytes"
    return None


def _kill_group(pid: int) -> None:
    """Kill bubblewrap's process group; its sandboxed processes die with it (their namespace's
    first process is killed when bubblewrap goes, and the kernel then kills the rest)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


@contextlib.asynccontextmanager
async def _process_cap(most: int) -> AsyncIterator[list[str]]:
    """What to start bubblewrap through so that at most ``most`` processes run: nothing for an
    ordinary user (``prlimit`` inside counts the sandbox's own user namespace); as root, whose
    processes the kernel never counts, a ``pids`` control group made for this command and
    removed after it."""
    if os.geteuid() != 0:
        yield []
        return
    group = _make_pids_group(most)
    try:
        # the shell joins the group before bubblewrap starts: every process after it is counted
        yield [SHELL, "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(group)]
    finally:
        await _remove_group(group)


def _make_pids_group(most: int) -> Path:
    for root in PIDS_CGROUPS:
        if not (root / "cgroup.procs").exists() or not os.access(root, os.W_OK):
            continue
        if root.name != "pids" and "pids" not in _read(root / "cgroup.controllers").split():
            continue
        group = root / f"steward-sandbox-{uuid.uuid4().hex}"
        try:
            group.mkdir()
            (group / "pids.max").write_text(str(most))
        except OSError:
            with contextlib.suppress(OSError):
                group.rmdir()
            continue
        return group
    raise SandboxUnavailable(
        "Steward runs as root here, and the kernel does not hold root's processes to a "
        "count: the sandbox needs a pids control group it can make (none is writable), or "
        "Steward running as an ordinary user"
    )


async def _remove_group(group: Path) -> None:
    """Kill what is left in the group (nothing, normally) and remove it once empty."""
    for _ in range(200):
        for pid in _read(group / "cgroup.procs").split():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
        try:
            os.rmdir(group)
            return
        except OSError:  # its last processes are still being reaped
            await asyncio.sleep(0.01)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
