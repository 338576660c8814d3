"""The person's workspace as files the agent can list, read and write.

Paths are relative to the workspace (``notes/plan.txt``), or start with ``/workspace/``, where
the shell sees the same files. Everything else is refused in plain words before any file is
touched: an absolute path elsewhere, ``..``, a NUL. Files are then reached the way the folder
connector reaches the person's folders (:mod:`steward.connectors.folder.paths`): one component
at a time from the workspace's own directory, never through a symbolic link, so a link the
shell made (to ``/``, to another person's workspace) leads nowhere.

Writing is atomic (a new file beside the old one, renamed over it) and private (0600). The
``artifacts`` folder holds stored tool outputs: readable, never written by the agent.

All of it is blocking I/O: callers run it in a worker thread.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from steward.connectors.folder.files import list_folder, read_file
from steward.connectors.folder.paths import MAX_DEPTH, MAX_NAME_BYTES, Located, folder, open_file
from steward.connectors.folder.settings import Root
from steward.connectors.folder.wording import size
from steward.environment import quota
from steward.environment.provenance import MAX_HASHED_BYTES, sha256_of
from steward.environment.sandbox import READ_ONLY_INSIDE
from steward.filemodes import PRIVATE_FILE, private_dir
from steward.harness.tools import ToolError

INSIDE = "/workspace"
"""Where the shell sees the workspace; paths may start with it."""
MAX_PATH_BYTES = 4096
MAX_WRITE_BYTES = 1_000_000
"""The largest text written in one go."""
UTC = ZoneInfo("UTC")


def locate(workspace: Path, path: str) -> Located:
    """``path`` inside ``workspace`` (made if missing), checked as text; :class:`ToolError`
    saying what is wrong otherwise."""
    if "\x00" in path:
        raise ToolError("a path cannot contain a NUL character")
    if len(path.encode(errors="replace")) > MAX_PATH_BYTES:
        raise ToolError(f"that path is too long (at most {MAX_PATH_BYTES} bytes)")
    given = path.strip()
    if given == INSIDE or given.startswith(INSIDE + "/"):
        given = given[len(INSIDE) :]
    elif given.startswith(("/", "~")):
        raise ToolError(
            f"only your workspace can be reached: give a path inside it (notes.txt or "
            f"{INSIDE}/notes.txt), not {given}"
        )
    parts = tuple(p for p in given.split("/") if p not in ("", "."))
    if ".." in parts:
        raise ToolError("a path cannot go up with ..: only your workspace can be reached")
    if len(parts) > MAX_DEPTH:
        raise ToolError(f"that path is too deep (at most {MAX_DEPTH} folders)")
    long = next((p for p in parts if len(p.encode(errors="replace")) > MAX_NAME_BYTES), None)
    if long is not None:
        raise ToolError(f"the name {long[:40]}… is too long")
    found = os.stat(private_dir(workspace))
    root = Root(name=INSIDE, path=str(workspace), identity=f"{found.st_dev}:{found.st_ino}")
    return Located(root=root, parts=parts)


def list_files(workspace: Path, path: str) -> dict[str, Any]:
    """The folders and files in a workspace folder, folders first."""
    return list_folder(locate(workspace, path), UTC)


def read_text(workspace: Path, path: str, offset: int) -> dict[str, Any]:
    """A text file's contents from byte ``offset`` (a bounded page; ``more`` says where the
    next one starts), or what a binary file is."""
    return read_file(locate(workspace, path), offset, UTC)


def write_text(
    workspace: Path, path: str, content: str, *, most: int = quota.DEFAULT_QUOTA_BYTES
) -> dict[str, str]:
    """Write ``content`` (UTF-8) to the file, replacing it whole, making missing folders;
    refused when the workspace would then hold more than ``most`` bytes."""
    located = locate(workspace, path)
    if not located.parts:
        raise ToolError("name a file to write, not the workspace itself")
    if located.parts[0] == READ_ONLY_INSIDE:
        raise ToolError(
            f"{READ_ONLY_INSIDE}/ holds stored tool outputs, which are kept as they were: "
            "write somewhere else; nothing was written"
        )
    data = content.encode()
    if len(data) > MAX_WRITE_BYTES:
        raise ToolError(f"that text is too long to write ({size(len(data))}; at most 1 MB)")
    name = located.parts[-1]
    with folder(located, located.parts[:-1], create=True) as fd:
        try:
            there: os.stat_result | None = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            there = None
        if there is not None and stat.S_ISDIR(there.st_mode):
            raise ToolError(f"{located.text} is a folder; nothing was written")
        _check_room(workspace, most, len(data), there)
        temporary = f".steward-{secrets.token_hex(8)}.part"
        try:
            opened = os.open(
                temporary,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                PRIVATE_FILE,
                dir_fd=fd,
            )
            with os.fdopen(opened, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            # a link in its place is replaced, never followed
            os.replace(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
        except OSError as exc:
            raise ToolError(
                f"{located.text} could not be written ({exc.strerror}); nothing was written"
            ) from None
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary, dir_fd=fd)
        os.fsync(fd)
    return {
        "path": located.text,
        "written": "created" if there is None else "replaced",
        "size": size(len(data)),
    }


def _check_room(workspace: Path, most: int, adding: int, there: os.stat_result | None) -> None:
    """:class:`ToolError` when writing ``adding`` bytes over ``there`` would take the workspace
    past ``most`` bytes, or it is full already."""
    usage = quota.measure(workspace)
    replaced = there.st_size if there is not None and stat.S_ISREG(there.st_mode) else 0
    full = quota.over(usage, most)
    if full is None and usage.used - replaced + adding > most:
        full = (
            f"writing {size(adding)} would take your workspace past its {size(most)} quota "
            f"(it holds {size(usage.used)}): remove files first"
        )
    if full is not None:
        raise ToolError(f"{full}; nothing was written")


def hashes(workspace: Path, paths: list[str], budget: int = MAX_HASHED_BYTES) -> dict[str, str]:
    """The sha256 of each of ``paths`` that is a plain file reached without a link, hashing at
    most ``budget`` bytes in all (files past it, gone or not plain are left out)."""
    found: dict[str, str] = {}
    for path in paths:
        try:
            located = locate(workspace, path)
            if not located.parts:
                continue
            with folder(located, located.parts[:-1]) as parent:
                fd, status = open_file(parent, located.parts[-1], located.text)
        except (ToolError, OSError):
            continue
        try:
            if status.st_size > budget:
                continue
            digest = sha256_of(fd)
        finally:
            os.close(fd)
        if digest is not None:
            budget -= status.st_size
            found[path] = digest
    return found
