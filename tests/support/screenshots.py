"""What a task's browser leaves behind, made the way the browser host makes it: a real PNG in
the person's workspace (``browser/<task>/``) and the task's last view naming it with its
sha256, recorded through :class:`~steward.environment.browser.profile.Profiles` — and a
cookie in the person's browser profile, for logging out."""

from __future__ import annotations

import hashlib
import struct
import zlib
from datetime import datetime
from pathlib import Path

from steward.environment.browser.profile import LastView, Profiles
from steward.harness.workspace import Workspace


def png(width: int = 4, height: int = 3, rgb: tuple[int, int, int] = (36, 86, 199)) -> bytes:
    """A valid PNG of one colour (8-bit RGB, no interlacing)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\x00" + bytes(rgb) * width  # filter type 0, then the pixels
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


def profiles(data_dir: Path) -> Profiles:
    """The browser directories as the app has them: ``<data>/browser``."""
    return Profiles(data_dir / "browser")


def record_look(
    data_dir: Path,
    person_id: str,
    task_id: str,
    *,
    at: datetime,
    url: str = "https://shop.example/cart",
    title: str = "Your cart",
    picture: bytes | None = None,
) -> LastView:
    """The task's last look at ``url``, with ``picture`` (a PNG; None: no screenshot) saved
    in the person's workspace as the browser host saves one."""
    where = profiles(data_dir)
    path = sha = None
    if picture is not None:
        path = f"{where.screenshot_folder(task_id)}/1.png"
        file = Workspace(data_dir / "workspace").person_dir(person_id) / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(picture)
        sha = hashlib.sha256(picture).hexdigest()
    view = LastView(task_id=task_id, url=url, title=title, picture=path, picture_sha256=sha, at=at)
    where.record_view(person_id, view)
    return view


def sign_in(data_dir: Path, person_id: str) -> Path:
    """A cookie in the person's browser profile, as a site that logged them in leaves it."""
    cookies = profiles(data_dir).profile_dir(person_id) / "Default" / "Cookies"
    cookies.parent.mkdir(parents=True, exist_ok=True)
    cookies.write_bytes(b"SQLite format 3\x00 session=abc; shop.example")
    return cookies
