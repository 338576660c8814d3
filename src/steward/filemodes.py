"""Files only their owner may open: the data directory, the database (with its ``-wal`` and
``-shm``), the workspace, the config file and the saved login hold a person's mail, memories,
audit trail and tokens, and other users of the same machine must not read them.

New ones are created private (a directory 0700, a file 0600, whatever the umask says). One that
other users could open is tightened when Steward starts, and the person is told once, in plain
words, what changed (the next start finds nothing left to tighten).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from steward.errors import ConfigError

PRIVATE_DIR = 0o700
"""A directory only its owner may list and enter."""
PRIVATE_FILE = 0o600
"""A file only its owner may read and write."""
_OTHERS = stat.S_IRWXG | stat.S_IRWXO


def private_dir(path: Path) -> Path:
    """``path`` as a directory only its owner can enter: created 0700 if missing (with any
    missing parents, also 0700), tightened if group or others could enter it."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    for directory in reversed(missing):
        directory.mkdir(mode=PRIVATE_DIR, exist_ok=True)
    tighten(path)
    return path


def private_file(path: Path) -> Path:
    """``path`` as a file only its owner can open: created empty with mode 0600 if missing,
    tightened otherwise. SQLite gives the ``-wal`` and ``-shm`` files it creates beside a
    database the database file's own mode, so a private database keeps them private too."""
    try:
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, PRIVATE_FILE))
    except FileExistsError:
        tighten(path)
    return path


def tighten(path: Path) -> None:
    """Take group's and others' access away from ``path``, if it exists and has any.

    Only the owner's bits are kept, so a tightened directory stays usable and a file keeps its
    owner's read/write. A path that cannot be tightened (another user's) is refused: Steward
    would otherwise go on writing private data where others can read it."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return
    if not mode & _OTHERS:
        return
    try:
        path.chmod(mode & ~_OTHERS)
    except OSError as exc:
        raise ConfigError(
            f"{path} can be read by other users of this machine (mode {mode:04o}) and Steward "
            f"cannot change that ({exc.strerror}); make it yours only: chmod go-rwx {path}"
        ) from None
    what = "directory" if path.is_dir() else "file"
    # imported only to say so: every command imports this module, and structlog ~40 ms
    import structlog

    structlog.get_logger(__name__).warning(
        f"{path} could be read by other users of this machine (mode {mode:04o}); Steward "
        f"made the {what} private (mode {mode & ~_OTHERS:04o})"
    )
