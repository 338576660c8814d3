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


def list_folder(located: Located, zone: ZoneInfo) -> dict[str, Any]:
    """The folders and files in a folder, folders first, each with its size and time."""
    with folder(located, located.parts) as fd:
        try:
            with os.scandir(fd) as listing:
                entries = sorted(listing, key=lambda e: (not _is_folder(e), e.name.casefold()))
        except PermissionError:
            raise ToolError(f"this machine does not let Steward list {located.text}") from None
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
    with folder(located, located.parts) as fd:
        for item in walk(fd, located.parts, stop):
            looked += 1
            if looked > MAX_SEARCHED_FILES or read > MAX_SEARCHED_BYTES:
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
    out: dict[str, Any] = {"found": found}
    if not complete:
        matches = counted(len(found), "match", "matches")
        out["stopped"] = (
            f"the search stopped after {counted(looked, 'file')} and {matches}: look in a "
            "smaller folder or with a narrower pattern"
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
    there is left as it is (``unchanged``); another is replaced only when ``replace``. The new
    file is written beside the old one and renamed over it, so nobody ever reads half of it."""
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
    with folder(located, located.parts[:-1], create=True) as fd:
        try:
            there: os.stat_result | None = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            there = None
        if there is not None:
            if stat.S_ISLNK(there.st_mode):
                raise refuse_link(located.text)
            if _same(fd, name, located.text, there, data):
                return {"path": located.text, "written": "unchanged", "size": size(len(data))}
            if not replace:
                raise ToolError(
                    f"{located.text} already exists; nothing was written (to overwrite it, "
                    "write again with replace)"
                )
        temporary = f".steward-{secrets.token_hex(8)}.part"
        mode = stat.S_IMODE(there.st_mode) if there is not None else 0o644
        try:
            _write_new(fd, temporary, data, mode)
            if there is None:  # a link fails if the name was taken meanwhile: nothing replaced
                os.link(temporary, name, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
            else:
                os.replace(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
        except FileExistsError:
            raise ToolError(f"{located.text} appeared meanwhile; nothing was written") from None
        except OSError as exc:  # its folder removed meanwhile, say
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
