"""A look at every file in a connection's roots: what the watch compares, and what the
connection check counts. Blocking I/O: run it in a worker thread."""

from __future__ import annotations

import os
from collections.abc import Iterator

from steward.connectors.base import ConnectionFailed
from steward.connectors.folder.paths import Tally, TooLarge, open_root, walk
from steward.connectors.folder.settings import FolderSettings, Root
from steward.harness.tools import ToolError

MAX_WATCHED = 10_000
"""The most files a folder connection's watch keeps track of, over all its roots."""

Version = tuple[int, int]
"""A file as the watch knows it: its modification time (ns) and size."""


class TooManyFiles(ConnectionFailed):
    """More files than a watch keeps track of."""


def snapshot(settings: FolderSettings, most: int = MAX_WATCHED) -> dict[str, Version]:
    """Every file under the roots (``Documents/taxes/2025.txt`` → its version), passing over
    what :func:`~steward.connectors.folder.paths.walk` passes over; :class:`TooManyFiles`
    beyond ``most``, :class:`ConnectionFailed` when a root cannot be opened."""
    found: dict[str, Version] = {}
    for root in settings.folders:
        for parts, version in _files(root):
            if len(found) >= most:
                raise TooManyFiles(
                    f"your folders hold more than {most:,} files, more than a watch keeps "
                    "track of: connect a smaller folder to be told of changes"
                )
            found["/".join((root.name, *parts))] = version
    return found


def count(root: Root, most: int = MAX_WATCHED) -> int | None:
    """How many files are under ``root`` (None: more than ``most``)."""
    seen = 0
    try:
        for _ in _files(root):
            seen += 1
            if seen > most:
                return None
    except TooManyFiles:
        return None
    return seen


def _files(root: Root) -> Iterator[tuple[tuple[str, ...], Version]]:
    try:
        fd = open_root(root)
    except ToolError as exc:
        raise ConnectionFailed(str(exc)) from None
    try:
        for walked in walk(fd, tally=Tally(most=MAX_WATCHED)):
            yield walked.parts, (walked.status.st_mtime_ns, walked.status.st_size)
    except TooLarge as exc:
        raise TooManyFiles(
            f"{root.name}: {exc}, more than a watch keeps track of: connect a smaller folder "
            "to be told of changes"
        ) from None
    finally:
        os.close(fd)
