"""Files the browser puts in the person's workspace: screenshots (``browser/<task>/NNNN.png``)
and downloads (``downloads/<name>``), private (0600) and never written through a link (the
workspace's shell could have put one where the browser's folder goes) nor outside the
workspace (a page chooses a download's name)."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from steward.filemodes import PRIVATE_FILE, private_dir
from steward.harness.tools import ToolError

DOWNLOAD_BYTES = 50 << 20
"""A larger download is not kept."""
_PICTURE = re.compile(r"^(\d{4,})\.png$")
_UNSAFE = re.compile(r"[\x00-\x1f\x7f/\\:*?\"<>|]+")
_NAME_CHARS = 120


def next_picture(base: Path, folder: str) -> str:
    """The workspace-relative path of a task's next screenshot."""
    existing = (base / folder).glob("*.png") if (base / folder).is_dir() else ()
    numbers = [int(m.group(1)) for p in existing if (m := _PICTURE.match(p.name))]
    return f"{folder}/{max(numbers, default=0) + 1:04d}.png"


def write_private(base: Path, relative: str, data: bytes) -> str:
    """Write ``data`` at ``relative`` under ``base`` (0600, replacing); returns its sha256."""
    path = _inside(base, relative)
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, PRIVATE_FILE)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    tmp.replace(path)
    return hashlib.sha256(data).hexdigest()


def save_download(base: Path, source: Path, suggested: str) -> tuple[str, int, str, str]:
    """Copy a finished download into ``downloads/`` under a safe, unused name; returns
    (workspace-relative path, size, sha256, name)."""
    name = safe_name(suggested)
    stem, dot, suffix = name.rpartition(".") if "." in name.lstrip(".") else (name, "", "")
    for n in range(1, 1000):
        candidate = name if n == 1 else f"{stem} ({n}){dot}{suffix}"
        path = _inside(base, f"downloads/{candidate}")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, PRIVATE_FILE)
        except FileExistsError:
            continue
        digest = hashlib.sha256()
        size = 0
        with open(source, "rb") as src, os.fdopen(fd, "wb") as out:
            while chunk := src.read(1 << 20):
                digest.update(chunk)
                size += len(chunk)
                out.write(chunk)
        return f"downloads/{candidate}", size, digest.hexdigest(), candidate
    raise ToolError(f"too many downloads named {name!r} already")


def safe_name(suggested: str) -> str:
    """A file name from what the site suggested: no folders, no control or shell-awkward
    characters, not hidden, at most 120 characters."""
    name = _UNSAFE.sub("_", os.path.basename(suggested.replace("\\", "/"))).strip(" .")
    if len(name) > _NAME_CHARS:
        stem, dot, suffix = name.rpartition(".")
        keep = suffix[:16] if dot else ""
        name = (stem if dot else name)[: _NAME_CHARS - len(keep) - 1] + (dot + keep)
    return name or "download"


def _inside(base: Path, relative: str) -> Path:
    """``base / relative`` with its folders made private; refused if any part is a link or
    it leaves ``base``."""
    root = private_dir(base).resolve()
    path = root / relative

    def check() -> None:
        if not path.resolve().is_relative_to(root) or any(
            p.is_symlink() for p in (path, *path.parents) if p.is_relative_to(root) and p != root
        ):
            raise ToolError(f"{relative} in the workspace passes through a link; nothing was saved")

    check()  # before making folders, so none is made (or tightened) through a link
    private_dir(path.parent)
    check()
    return path
