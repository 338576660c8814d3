"""Confinement: a path the model gives reaches a file inside one of the person's roots, or is
refused in plain words — never anything outside them.

A path is relative and starts with a root's name (``Documents/taxes/2025.txt``). Its text is
checked first (no NUL, no absolute path, no ``..``, not overlong). Then it is opened one
component at a time, each relative to the directory opened before it (``openat``) and with
``O_NOFOLLOW``, so no symbolic link is followed at any depth — not one that was there all
along, and not one swapped in for a component (the last one too) between a check and the
open: there is no check apart from the open. Steward does not follow symbolic links in the
person's folders at all, since one could lead outside them; a link is shown as a link.

All of it is blocking I/O: callers run it in a worker thread.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from steward.connectors.folder.settings import FolderSettings, Root
from steward.harness.tools import ToolError

MAX_PATH_BYTES = 4096
"""The longest path accepted (Linux's own limit)."""
MAX_NAME_BYTES = 255
"""The longest name of one file or folder (most file systems' limit)."""
MAX_DEPTH = 64
"""How deep a walk through a folder goes (deeper folders are not looked into)."""
MAX_FOLDER_ENTRIES = 20_000
"""The most entries of one folder read: a folder holding more is not listed whole, searched or
watched (reading and sorting it would take the memory and time of a much larger walk)."""
DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
"""How each folder on a path is opened: never through a link."""
FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
"""How a file is opened to read: never through a link, and without blocking on a pipe."""

TEMPORARY_PREFIXES = ("~$", ".~lock.", ".#")
TEMPORARY_SUFFIXES = (
    "~",
    ".swp",
    ".swo",
    ".swx",
    ".tmp",
    ".temp",
    ".part",
    ".partial",
    ".crdownload",
    ".download",
)
SYSTEM_NAMES = frozenset({".DS_Store", "Thumbs.db", "desktop.ini", ".git", ".hg", ".svn"})


def ignored(name: str) -> bool:
    """A name the watch and the search pass over: a temporary or partial file (an office
    program's ``~$`` or ``.~lock.`` owner file, an editor's ``.swp`` or ``~`` backup, a download
    still running: ``.part``, ``.crdownload``), a system's own file (``.DS_Store``), or a
    version-control store (``.git``)."""
    return (
        name in SYSTEM_NAMES
        or name.startswith(TEMPORARY_PREFIXES)
        or name.lower().endswith(TEMPORARY_SUFFIXES)
    )


@dataclass(kw_only=True, frozen=True)
class Located:
    """A path inside one of the roots, checked as text (not yet opened)."""

    root: Root
    """The root it starts with."""
    parts: tuple[str, ...]
    """Its components below the root (none: the root itself)."""

    @property
    def text(self) -> str:
        """How the person reads it: ``Documents/taxes/2025.txt``."""
        return "/".join((self.root.name, *self.parts))


def locate(settings: FolderSettings, path: str) -> Located:
    """``path`` as a root and the components under it; :class:`ToolError` saying what is wrong
    with it otherwise."""
    names = ", ".join(r.name for r in settings.folders)
    if "\x00" in path:
        raise ToolError("a path cannot contain a NUL character")
    try:
        size = len(path.encode())
    except UnicodeEncodeError:
        raise ToolError("that path has characters no file name can have") from None
    if size > MAX_PATH_BYTES:
        raise ToolError(f"that path is too long ({size} bytes; at most {MAX_PATH_BYTES})")
    if path.startswith(("/", "~")):
        raise ToolError(
            "give the path from one of your folders, starting with its name "
            f"({names}), not an absolute path"
        )
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ToolError("a path cannot go up with ..: give it from one of your folders")
    long = next((p for p in parts if len(p.encode()) > MAX_NAME_BYTES), None)
    if long is not None:
        raise ToolError(f"the name {long[:40]}… is too long ({len(long.encode())} bytes)")
    if not parts:
        raise ToolError(f"name one of your folders first: {names}")
    root = settings.root(parts[0])
    if root is None:
        raise ToolError(f"{parts[0]} is not one of your folders; paths start with {names}")
    return Located(root=root, parts=tuple(parts[1:]))


def open_root(root: Root) -> int:
    """A descriptor of the root folder itself — the very folder connected: not through a link,
    and not another folder since put in its place (a parent the agent cannot write to is not
    trusted to stay as it was)."""
    try:
        fd = os.open(root.path, DIRECTORY)
    except FileNotFoundError:
        raise ToolError(f"your folder {root.name} ({root.path}) is not there any more") from None
    except NotADirectoryError:
        raise ToolError(f"your folder {root.name} ({root.path}) is now a file") from None
    except PermissionError:
        raise ToolError(f"this machine does not let Steward open {root.name}") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _replaced(root) from None
        raise ToolError(f"your folder {root.name} cannot be opened ({exc.strerror})") from None
    found = os.fstat(fd)
    if f"{found.st_dev}:{found.st_ino}" != root.identity:
        os.close(fd)
        raise _replaced(root)
    return fd


def _replaced(root: Root) -> ToolError:
    return ToolError(
        f"your folder {root.name} ({root.path}) is not the folder you connected any more (it "
        "was moved, replaced or made a link): nothing in it is reached; connect it again"
    )


def refuse_link(shown: str) -> ToolError:
    return ToolError(
        f"{shown} is a symbolic link; Steward does not follow links in your folders, so that "
        "nothing outside them is reached"
    )


def enter(fd: int, name: str, shown: str, *, create: bool = False) -> tuple[int, bool]:
    """The folder ``name`` in the folder ``fd``, opened without following a link (made first
    when ``create``), and whether it was made here; :class:`ToolError` when it is a link, a
    file or not there."""
    try:
        return os.open(name, DIRECTORY, dir_fd=fd), False
    except FileNotFoundError:
        if not create:
            raise ToolError(f"there is no {shown}") from None
    except OSError as exc:
        raise _not_entered(exc, fd, name, shown) from None
    made = True
    try:
        os.mkdir(name, 0o777, dir_fd=fd)
    except FileExistsError:
        made = False  # made meanwhile: opened below like any other
    except OSError as exc:
        raise ToolError(f"{shown} cannot be made ({exc.strerror})") from None
    try:
        return os.open(name, DIRECTORY, dir_fd=fd), made
    except OSError as exc:
        raise _not_entered(exc, fd, name, shown) from None


def _not_entered(exc: OSError, fd: int, name: str, shown: str) -> ToolError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        try:
            found = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            return ToolError(f"there is no {shown}")
        if stat.S_ISLNK(found.st_mode):
            return refuse_link(shown)
        return ToolError(f"{shown} is a file, not a folder")
    if exc.errno == errno.EACCES:
        return ToolError(f"this machine does not let Steward open {shown}")
    return ToolError(f"{shown} cannot be opened ({exc.strerror})")


@contextlib.contextmanager
def folder(located: Located, parts: tuple[str, ...], *, create: bool = False) -> Iterator[int]:
    """A descriptor of the folder ``parts`` under ``located``'s root, reached one component at
    a time without following links (missing folders made when ``create``). When the work in it
    fails, the folders made on the way are removed again (those still empty)."""
    fd = open_root(located.root)
    made: list[tuple[int, str]] = []
    """Each folder made here, with its parent's descriptor (kept open to remove it)."""
    try:
        for depth, name in enumerate(parts, start=1):
            shown = "/".join((located.root.name, *parts[:depth]))
            inner, new = enter(fd, name, shown, create=create)
            if new:
                made.append((fd, name))
            else:
                os.close(fd)
            fd = inner
        yield fd
    except BaseException:
        for parent, name in reversed(made):
            with contextlib.suppress(OSError):  # not empty any more: someone else's now
                os.rmdir(name, dir_fd=parent)
        raise
    finally:
        os.close(fd)
        for parent, _ in made:
            os.close(parent)


def open_file(fd: int, name: str, shown: str) -> tuple[int, os.stat_result]:
    """The regular file ``name`` in the folder ``fd``, opened to read without following a link
    (and without waiting on a pipe), with its status read from the open file itself."""
    try:
        opened = os.open(name, FILE, dir_fd=fd)
    except FileNotFoundError:
        raise ToolError(f"there is no {shown}") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise refuse_link(shown) from None
        if exc.errno == errno.EACCES:
            raise ToolError(f"this machine does not let Steward read {shown}") from None
        raise ToolError(f"{shown} cannot be opened ({exc.strerror})") from None
    found = os.fstat(opened)
    if stat.S_ISREG(found.st_mode) and found.st_nlink == 1:
        return opened, found
    os.close(opened)
    if stat.S_ISREG(found.st_mode):  # the same file under another name, maybe outside
        raise ToolError(
            f"{shown} has other names on this machine (a hard link), maybe outside your "
            "folders: it is not read"
        )
    if stat.S_ISDIR(found.st_mode):
        raise ToolError(f"{shown} is a folder: list it instead")
    raise ToolError(f"{shown} is not a plain file (a device or a pipe): it is not read")


class TooLarge(ToolError):
    """A folder holding more than :data:`MAX_FOLDER_ENTRIES` entries."""


def entries_of(fd: int, shown: str) -> list[os.DirEntry[str]]:
    """The entries of the folder ``fd`` (at most :data:`MAX_FOLDER_ENTRIES`; :class:`TooLarge`
    beyond, before more are read)."""
    with os.scandir(fd) as listing:
        found = list(itertools.islice(listing, MAX_FOLDER_ENTRIES + 1))
    if len(found) > MAX_FOLDER_ENTRIES:
        raise TooLarge(f"{shown} holds more than {MAX_FOLDER_ENTRIES:,} files and folders")
    return found


@dataclass(kw_only=True)
class Tally:
    """How many folders a walk went into: they count against its bounds too (a tree of
    empty folders is no cheaper to walk than one of files)."""

    most: int
    """The most folders it may enter (:class:`TooLarge` beyond)."""
    folders: int = 0
    """Folders entered so far."""


@dataclass(kw_only=True, frozen=True)
class Walked:
    """A file found walking a folder."""

    parts: tuple[str, ...]
    """Its components below the root."""
    status: os.stat_result
    """Its size and times (of the file itself: links are not followed)."""
    folder_fd: int
    """The folder it is in, open while the walk waits at it."""


def walk(
    fd: int,
    prefix: tuple[str, ...] = (),
    stop: threading.Event | None = None,
    tally: Tally | None = None,
) -> Iterator[Walked]:
    """Every regular file under the folder ``fd``, in name order, passing over links, ignored
    names (:func:`ignored`), folders this machine does not let Steward open, and anything
    deeper than :data:`MAX_DEPTH`; it ends early once ``stop`` is set. The folders it enters
    are counted in ``tally``; a folder too large to read raises :class:`TooLarge`."""
    try:
        entries = sorted(entries_of(fd, "/".join(prefix) or "the folder"), key=lambda e: e.name)
    except OSError:  # unreadable, or removed meanwhile
        return
    for entry in entries:
        if stop is not None and stop.is_set():
            return
        if ignored(entry.name) or entry.is_symlink():
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                if len(prefix) >= MAX_DEPTH:
                    continue
                inner = os.open(entry.name, DIRECTORY, dir_fd=fd)
                if tally is not None:
                    tally.folders += 1
                    if tally.folders > tally.most:
                        os.close(inner)
                        raise TooLarge(f"there are more than {tally.most:,} folders")
                try:
                    yield from walk(inner, (*prefix, entry.name), stop, tally)
                finally:
                    os.close(inner)
            elif entry.is_file(follow_symlinks=False):
                found = entry.stat(follow_symlinks=False)
                yield Walked(parts=(*prefix, entry.name), status=found, folder_fd=fd)
        except OSError:  # removed, swapped for a link or unreadable meanwhile: passed over
            continue
