"""How much of the disk a person's workspace takes, and what that allows.

A workspace is measured by walking it from its own directory without following any link
(``os.fwalk``): every plain file's size counts (its apparent size: a sparse file counts whole),
``artifacts/`` and the browser's downloads included — it is all the person's disk. The walk also
remembers each file's size and times, so that what one shell command created or changed can be
told from a walk before and a walk after it (:func:`changed`), within bounds: the first
:data:`MAX_TRACKED` files are remembered; past :data:`MAX_FILES` files, or folders nested deeper
than :data:`MAX_DEPTH`, the workspace counts as over its limits (a walk must stay quick, and what
it could not reach must not escape the quota).

All of it is blocking I/O: callers run it in a worker thread.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from steward.connectors.folder.wording import size
from steward.environment.sandbox import READ_ONLY_INSIDE

DEFAULT_QUOTA_BYTES = 1 << 30
"""A person's workspace, by default: 1 GiB."""
MAX_FILES = 500_000
"""Past this many files the workspace counts as full."""
MAX_DEPTH = 64
"""Folders nested deeper count as full too (the file tools go no deeper)."""
MAX_TRACKED = 20_000
"""The most files one walk remembers for telling what a command changed."""


@dataclass(kw_only=True, frozen=True)
class Seen:
    """A file as a walk found it."""

    size: int
    """Bytes."""
    mtime_ns: int
    """Last written (a command can set it back: compared with the others)."""
    ctime_ns: int
    """Last changed in any way (no command can set it)."""
    inode: int
    """Which file it is (a file replaced by another has another)."""


@dataclass(kw_only=True, frozen=True)
class Usage:
    """What one walk of a workspace found."""

    used: int
    """Bytes of every plain file."""
    files: dict[str, Seen]
    """Workspace-relative paths of the first :data:`MAX_TRACKED` plain files found (stored
    outputs left out: no command can change them)."""
    complete: bool
    """Every file is in :attr:`files`."""
    problem: str | None
    """Why the workspace counts as full whatever its size (too many files, too deep)."""


def measure(workspace: Path) -> Usage:
    """Walk ``workspace`` (nothing there: empty)."""
    if not workspace.is_dir():
        return Usage(used=0, files={}, complete=True, problem=None)
    used = count = 0
    files: dict[str, Seen] = {}
    problem = None
    unreadable: list[OSError] = []

    def failed(exc: OSError) -> None:
        # a folder the shell made unreadable (chmod 000) would hide what is in it: counted as
        # full; one removed meanwhile (by another command) holds nothing
        if isinstance(exc, PermissionError):
            unreadable.append(exc)

    walk = os.fwalk(workspace, follow_symlinks=False, onerror=failed)
    for folder, folders, names, fd in walk:
        relative = os.path.relpath(folder, workspace)
        prefix = "" if relative == "." else relative + "/"
        if prefix.count("/") >= MAX_DEPTH and folders:
            problem = f"it has folders nested more than {MAX_DEPTH} deep"
            folders.clear()
        for name in names:
            try:
                found = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:  # removed meanwhile
                continue
            if not stat.S_ISREG(found.st_mode):
                continue
            used += found.st_size
            count += 1
            path = prefix + name
            if len(files) < MAX_TRACKED and not path.startswith(READ_ONLY_INSIDE + "/"):
                files[path] = Seen(
                    size=found.st_size,
                    mtime_ns=found.st_mtime_ns,
                    ctime_ns=found.st_ctime_ns,
                    inode=found.st_ino,
                )
        if count > MAX_FILES:
            problem = f"it holds more than {MAX_FILES:,} files"
            break
    if unreadable and problem is None:
        problem = (
            "a folder in it cannot be read (give it back its permissions: chmod -R u+rwX "
            "/workspace)"
        )
    return Usage(used=used, files=files, complete=count <= len(files), problem=problem)


def over(usage: Usage, quota: int) -> str | None:
    """Why nothing more may be written, in words, or None."""
    if usage.problem is not None:
        return f"your workspace is full: {usage.problem}"
    if usage.used > quota:
        return (
            f"your workspace holds {size(usage.used)}, more than its {size(quota)} quota: "
            "remove files before writing anything else"
        )
    return None


def changed(before: Usage, after: Usage) -> tuple[list[str], list[str]]:
    """The files created or changed between two walks, and the files gone (both in path
    order; only files either walk remembered)."""
    made = sorted(path for path, seen in after.files.items() if before.files.get(path) != seen)
    gone = sorted(path for path in before.files if path not in after.files and after.complete)
    return made, gone
