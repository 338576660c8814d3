"""What the folder tools do with the person's files: list a folder, read a text file, search
names and contents, write a text file. Everything reaches files only through
:mod:`~steward.connectors.folder.paths` (inside a root, no link followed), and is blocking I/O
run in a worker thread by the tools.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
import secrets
import stat
import threading
from typing import Any
from zoneinfo import ZoneInfo

from steward.connectors.folder.paths import (
    MAX_DEPTH,
    Located,
    Tally,
    TooLarge,
    entries_of,
    folder,
    ignored,
    open_file,
    refuse_link,
    walk,
)
from steward.connectors.folder.text import SAMPLE_BYTES, decode, encoding_of
from steward.connectors.folder.wording import counted, kind_of, size, when
from steward.harness.tools import ToolError

MAX_LISTED = 500
"""The most entries one listing shows (the rest are counted)."""
MAX_READ_BYTES = 200_000
"""The most of a file one read returns; the rest is read on with ``offset``."""
MAX_WRITE_BYTES = 1_000_000
"""The largest text the agent may write in one go."""
MAX_FOUND = 50
"""The most files one search returns."""
MAX_SEARCHED_FILES = 20_000
"""The most files one search looks at."""
MAX_SEARCHED_BYTES = 64_000_000
"""The most bytes of contents one search reads."""
MAX_CONTENT_BYTES = 2_000_000
"""Larger files are searched by name only."""
SNIPPET_CHARS = 160
"""Text shown around a match."""
MAX_KEPT = 999
"""The most old versions of one file kept beside it (``notes.txt.~1~`` ...)."""
EXECUTABLE = stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH
RUN_WHEN_OPENED = (
    ".desktop",
    ".command",
    ".app",
    ".exe",
    ".com",
    ".bat",
    ".cmd",
    ".scr",
    ".pif",
    ".msi",
    ".ps1",
    ".vbs",
    ".vbe",
    ".wsf",
    ".hta",
    ".jar",
    ".lnk",
    ".url",
)
"""Names a desktop (Windows, macOS, a Linux file manager) runs when the file is opened."""


def list_folder(located: Located, zone: ZoneInfo) -> dict[str, Any]:
    """The folders and files in a folder, folders first, each with its size and time."""
    with folder(located, located.parts) as fd:
        try:
            found = entries_of(fd, located.text)
        except PermissionError:
            raise ToolError(f"this machine does not let Steward list {located.text}") from None
        entries = sorted(found, key=lambda e: (not _is_folder(e), e.name.casefold()))
        shown = [_entry(e, zone) for e in entries[:MAX_LISTED]]  # stat relative to ``fd``
    out: dict[str, Any] = {"folder": located.text, "entries": shown}
    if len(entries) > MAX_LISTED:
        out["not_shown"] = len(entries) - MAX_LISTED
    return out


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _entry(entry: os.DirEntry[str], zone: ZoneInfo) -> dict[str, str]:
    try:
        found = entry.stat(follow_symlinks=False)
    except OSError:  # removed meanwhile
        return {"name": entry.name, "kind": "gone"}
    if stat.S_ISLNK(found.st_mode):  # not followed: where it leads is not looked at
        return {"name": entry.name, "kind": "link (not followed)"}
    shown = {"name": entry.name, "modified": when(found.st_mtime_ns, zone)}
    if stat.S_ISDIR(found.st_mode):
        return shown | {"kind": "folder"}
    if stat.S_ISREG(found.st_mode):
        return shown | {"kind": "file", "size": size(found.st_size)}
    return shown | {"kind": "other (not a plain file)"}


def read_file(located: Located, offset: int, zone: ZoneInfo) -> dict[str, Any]:
    """A text file's contents from byte ``offset`` (at most :data:`MAX_READ_BYTES`), or what a
    binary file is, without its contents."""
    if not located.parts:
        raise ToolError(f"{located.text} is one of your folders: list it instead")
    with folder(located, located.parts[:-1]) as parent:
        fd, found = open_file(parent, located.parts[-1], located.text)
    with os.fdopen(fd, "rb") as opened:
        about = {
            "path": located.text,
            "size": size(found.st_size),
            "modified": when(found.st_mtime_ns, zone),
        }
        encoding = encoding_of(os.pread(fd, SAMPLE_BYTES, 0))
        if encoding is None:
            kind = kind_of(located.parts[-1])
            return about | {"binary": f"{kind}, not text: its contents are not shown"}
        name, mark = encoding
        start = max(offset, mark)
        opened.seek(start)
        data = opened.read(MAX_READ_BYTES)
        end = start + len(data) >= found.st_size
        text, used = decode(data, name, final=end)
    out = about | {"encoding": name, "text": text}
    if not end:
        out["more"] = f"the file goes on: read it again with offset={start + used}"
    return out


def search(
    located: Located, pattern: str | None, text: str | None, stop: threading.Event
) -> dict[str, Any]:
    """Files under a folder whose name matches ``pattern`` (a glob, any case) and whose text
    contains ``text`` (any case), in name order, within the bounds above; ``stop`` ends it
    early (the tool's time ran out)."""
    wanted = text.casefold() if text else None
    found: list[dict[str, str]] = []
    looked = read = 0
    complete = False
    tally = Tally(most=MAX_SEARCHED_FILES)
    too_large = None
    with folder(located, located.parts) as fd:
        try:
            for item in walk(fd, located.parts, stop, tally):
                looked += 1
                if looked + tally.folders > MAX_SEARCHED_FILES or read > MAX_SEARCHED_BYTES:
                    break
                name = item.parts[-1]
                if pattern and not fnmatch.fnmatch(name.casefold(), pattern.casefold()):
                    continue
                hit: dict[str, str] = {
                    "path": "/".join((located.root.name, *item.parts)),
                    "size": size(item.status.st_size),
                }
                if wanted is not None:
                    if item.status.st_size > MAX_CONTENT_BYTES:
                        continue
                    read += item.status.st_size
                    snippet = _contains(item.folder_fd, name, wanted)
                    if snippet is None:
                        continue
                    hit["match"] = snippet
                found.append(hit)
                if len(found) >= MAX_FOUND:
                    break
            else:
                complete = not stop.is_set()
        except TooLarge as exc:  # a folder too large to read: said, like any early stop
            too_large = str(exc)
    out: dict[str, Any] = {"found": found}
    if not complete:
        matches = counted(len(found), "match", "matches")
        out["stopped"] = (
            f"the search stopped after {counted(looked, 'file')} and {matches}"
            f"{f' ({too_large})' if too_large else ''}: look in a smaller folder or with a "
            "narrower pattern"
        )
    return out


def _contains(fd: int, name: str, wanted: str) -> str | None:
    """The text around the first place the file ``name`` contains ``wanted`` (case folded);
    None when it does not, or is not text, or cannot be read."""
    try:
        opened, _ = open_file(fd, name, name)
    except ToolError:  # swapped for a link, or unreadable: passed over
        return None
    with os.fdopen(opened, "rb") as file:
        data = file.read(MAX_CONTENT_BYTES)
    encoding = encoding_of(data[:SAMPLE_BYTES])
    if encoding is None:
        return None
    content, _ = decode(data[encoding[1] :], encoding[0], final=True)
    at = content.casefold().find(wanted)
    if at < 0:
        return None
    begin = max(0, at - SNIPPET_CHARS // 2)
    return " ".join(content[begin : begin + SNIPPET_CHARS].split())


def write_file(located: Located, content: str, replace: bool) -> dict[str, str]:
    """Write ``content`` (UTF-8) to the file, making missing folders. The same content already
    there is left as it is (``unchanged``); another is replaced only when ``replace``, and then
    the old file is kept beside it first (``notes.txt.~1~``: :func:`_keep`). The new file is
    written beside the old one and renamed over it, so nobody ever reads half of it. Hidden
    files and programs are never written (:func:`_refuse_unsafe`)."""
    if not located.parts:
        raise ToolError(f"{located.text} is one of your folders, not a file")
    data = content.encode()
    if len(data) > MAX_WRITE_BYTES:
        raise ToolError(f"that text is too long to write ({size(len(data))}; at most 1 MB)")
    if len(located.parts) > MAX_DEPTH:
        raise ToolError(f"that path is too deep (at most {MAX_DEPTH} folders below yours)")
    name = located.parts[-1]
    if ignored(name):
        raise ToolError(f"{name} is named like a temporary file; choose another name")
    _refuse_unsafe(located)
    with folder(located, located.parts[:-1], create=True) as fd:
        try:
            there: os.stat_result | None = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            there = None
        kept = None
        if there is not None:
            if stat.S_ISLNK(there.st_mode):
                raise refuse_link(located.text)
            if _same(fd, name, located.text, there, data):
                return {"path": located.text, "written": "unchanged", "size": size(len(data))}
            if not replace:
                raise ToolError(
                    f"{located.text} already exists; nothing was written (to replace it, "
                    "call folder_replace: the person is asked first)"
                )
            if there.st_mode & EXECUTABLE:
                raise ToolError(
                    f"{located.text} is a program (it may be run): Steward does not write over "
                    "programs; nothing was written"
                )
            kept = _keep(fd, name, there, located)
        try:
            _put(fd, name, data, there, located)
        except BaseException:
            if kept is not None:  # nothing was replaced: nothing to keep
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(kept, dir_fd=fd)
            raise
        os.fsync(fd)
    written = {
        "path": located.text,
        "written": "created" if there is None else "replaced",
        "size": size(len(data)),
    }
    if kept is not None:
        written["old_text_kept_in"] = "/".join((located.root.name, *located.parts[:-1], kept))
    return written


def _put(fd: int, name: str, data: bytes, there: os.stat_result | None, located: Located) -> None:
    """Write ``data`` beside ``name`` and put it in its place: a new name (failing if it was
    taken meanwhile), or over the old file, keeping its permissions (never the right to run)."""
    temporary = f".steward-{secrets.token_hex(8)}.part"
    mode = stat.S_IMODE(there.st_mode) & 0o666 if there is not None else 0o644
    try:
        _write_new(fd, temporary, data, mode)
        if there is None:  # a link fails if the name was taken meanwhile: nothing replaced
            os.link(temporary, name, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
        else:
            os.replace(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
    except FileExistsError:
        raise ToolError(f"{located.text} appeared meanwhile; nothing was written") from None
    except OSError as exc:  # its folder removed meanwhile, or the disk is full, say
        raise ToolError(
            f"{located.text} could not be written ({exc.strerror}); nothing was written"
        ) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary, dir_fd=fd)


def _refuse_unsafe(located: Located) -> None:
    """Refuse a hidden file or folder (where programs keep their settings: ``.bashrc``,
    ``.ssh/``, ``.config/autostart/``) and a name a desktop runs when it is opened."""
    hidden = next((part for part in located.parts if part.startswith(".")), None)
    if hidden is not None:
        raise ToolError(
            f"{hidden} is hidden: Steward does not write hidden files or in hidden folders, "
            "where programs keep their settings; nothing was written"
        )
    if located.parts[-1].lower().endswith(RUN_WHEN_OPENED):
        raise ToolError(
            f"{located.parts[-1]} would be a program (opening it runs it): Steward does not "
            "write programs into your folders; nothing was written"
        )


def _keep(fd: int, name: str, there: os.stat_result, located: Located) -> str:
    """Keep the file about to be replaced under the first free ``NAME.~N~`` beside it (a
    second name for the same file: nothing is copied), and say where. Such names end with
    ``~``, so the watch does not report them and folder_write does not write them. Its name
    in the folder is returned."""
    for number in range(1, MAX_KEPT + 1):
        kept = f"{name}.~{number}~"
        try:
            os.link(name, kept, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
        except FileExistsError:
            continue
        except OSError as exc:
            raise ToolError(
                f"the old text of {located.text} could not be kept ({exc.strerror}); nothing "
                "was written"
            ) from None
        found = os.stat(kept, dir_fd=fd, follow_symlinks=False)
        if (found.st_dev, found.st_ino) != (there.st_dev, there.st_ino):
            os.unlink(kept, dir_fd=fd)  # swapped meanwhile (for a link, say): not ours to keep
            raise ToolError(f"{located.text} changed meanwhile; nothing was written")
        return kept
    raise ToolError(
        f"{MAX_KEPT} old versions of {located.text} are kept beside it already: remove some "
        "first; nothing was written"
    )


def _same(fd: int, name: str, shown: str, there: os.stat_result, data: bytes) -> bool:
    if not stat.S_ISREG(there.st_mode):
        raise ToolError(f"{shown} is a folder or not a plain file: it is not written")
    if there.st_size != len(data):
        return False
    opened, _ = open_file(fd, name, shown)
    with os.fdopen(opened, "rb") as file:
        return file.read(len(data) + 1) == data


def _write_new(fd: int, name: str, data: bytes, mode: int) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        opened = os.open(name, flags, mode, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EROFS, errno.EPERM):
            raise ToolError("this machine does not let Steward write in that folder") from None
        raise ToolError(f"the file cannot be written ({exc.strerror})") from None
    with os.fdopen(opened, "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
