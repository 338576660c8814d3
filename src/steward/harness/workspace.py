"""The person's workspace: a directory per person where large tool outputs become artifacts.

Its files are private to the machine's user who runs Steward (directories 0700, files 0600).
A large output enters the model's context only as a bounded excerpt with a reference; the whole
of it stays on disk and in the artifact table, and the model can page through it with the
``read_artifact`` tool.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path
from urllib.parse import quote

from steward.domain import Artifact
from steward.errors import UsageError
from steward.filemodes import PRIVATE_FILE, private_dir


def path_part(part: str) -> str:
    """One path component from an id: percent-encoded (dots too, so never ``.`` or ``..``),
    hence distinct ids never share a directory."""
    return quote(part, safe="-_") or "%00"


class Workspace:
    """Per-person directories under one root."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def person_dir(self, person_id: str) -> Path:
        return self.root / path_part(person_id)

    def artifact_path(self, person_id: str, task_id: str, step_seq: int, name: str) -> str:
        """Workspace-relative path of an output; derived from the step, so a replayed step
        overwrites its own file instead of leaving a second one."""
        return f"artifacts/{path_part(task_id)}/{step_seq:06d}-{path_part(name)}.txt"

    async def write_text(self, person_id: str, relative: str, text: str) -> tuple[int, str]:
        """Write a file; returns its size and sha256."""
        data = text.encode()
        path = self._resolve(person_id, relative)

        def write() -> None:
            private_dir(path.parent)
            tmp = path.with_suffix(path.suffix + ".tmp")
            tmp.unlink(missing_ok=True)  # a crashed write's leftover would keep its own mode
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            tmp.replace(path)

        await asyncio.to_thread(write)
        return len(data), hashlib.sha256(data).hexdigest()

    async def read_text(self, artifact: Artifact, *, offset: int = 0, length: int = 4000) -> str:
        """A slice of an artifact's text (by characters)."""
        if offset < 0 or length <= 0:
            raise UsageError("offset must be >= 0 and length > 0")
        path = self._resolve(artifact.person_id, artifact.path)
        try:
            data = await asyncio.to_thread(path.read_bytes)
        except FileNotFoundError as exc:
            raise UsageError(f"artifact {artifact.id} file is missing from the workspace") from exc
        if hashlib.sha256(data).hexdigest() != artifact.sha256:
            # the workspace's shell can write files: a stored output must be the tool's own
            raise UsageError(f"artifact {artifact.id} was changed after it was stored")
        return data.decode()[offset : offset + length]

    def _resolve(self, person_id: str, relative: str) -> Path:
        """The file's path; refused when it leaves the workspace or passes through a link
        (the workspace's shell could have put one where a stored output's folder goes)."""
        base = self.person_dir(person_id).resolve()
        path = base / relative
        if not path.resolve().is_relative_to(base) or any(
            p.is_symlink() for p in (path, *path.parents) if p.is_relative_to(base) and p != base
        ):
            raise UsageError(f"path {relative!r} leaves the workspace")
        return path
