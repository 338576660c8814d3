"""Sizes, times and kinds of files as the person reads them."""

from __future__ import annotations

import mimetypes
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

UNITS = ("KB", "MB", "GB", "TB")


def size(count: int) -> str:
    """``37 bytes``, ``1.2 KB``, ``3.4 MB`` (units of 1,000)."""
    if count < 1000:
        return f"{count} byte{'' if count == 1 else 's'}"
    amount = count / 1000
    for unit in UNITS[:-1]:
        if amount < 1000:
            return f"{amount:.1f} {unit}"
        amount /= 1000
    return f"{amount:.1f} {UNITS[-1]}"


def modified(mtime_ns: int, zone: ZoneInfo) -> datetime:
    """A file's modification time in the person's zone."""
    return datetime.fromtimestamp(mtime_ns / 1e9, UTC).astimezone(zone)


def when(mtime_ns: int, zone: ZoneInfo) -> str:
    """``Fri 4 Dec 2026, 10:42``."""
    local = modified(mtime_ns, zone)
    return f"{local:%a} {local.day} {local:%b %Y, %H:%M}"


def kind_of(name: str) -> str:
    """What a file is by its name: ``a PDF document (application/pdf)``, or ``a file`` when the
    name does not say."""
    guessed, _ = mimetypes.guess_type(name, strict=False)
    if guessed is None:
        return "a file"
    major, _, minor = guessed.partition("/")
    words = {"image": "an image", "audio": "a sound", "video": "a video"}.get(major)
    if words is None:
        words = "a PDF document" if minor == "pdf" else "a document"
    return f"{words} ({guessed})"


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``1 file``, ``1,204 files``."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"
