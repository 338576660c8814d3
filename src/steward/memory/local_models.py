"""What the offline models share: they run on the CPU from files that installed packages ship,
each file checked against the digest its model's name stands for, and each model loads once, on
first use."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from steward.errors import ConfigError

T = TypeVar("T")


def check_file(path: Path, sha256: str, *, model: str, fix: str) -> None:
    """Refuse a missing or different file: stored vectors are only compared with vectors of the
    same embedder name, so a package release that changed a file must fail loudly here rather
    than silently mix two vector spaces. ``fix`` says what to install."""
    try:
        with path.open("rb") as file:
            digest = hashlib.file_digest(file, "sha256").hexdigest()
    except OSError as exc:
        raise ConfigError(f"{model}: cannot read {path} ({exc}): {fix}") from exc
    if digest != sha256:
        raise ConfigError(
            f"{model}: {path} is not the file its vectors are known by (sha256 {digest}); {fix}"
        )


class LoadOnce(Generic[T]):
    """A model loaded by the first :meth:`get`; concurrent first calls (from worker threads)
    wait for one shared load."""

    def __init__(self, load: Callable[[], T]) -> None:
        self._load = load
        self._lock = threading.Lock()
        self._loaded: T | None = None

    def get(self) -> T:
        """The loaded model."""
        loaded = self._loaded
        if loaded is None:
            with self._lock:
                if self._loaded is None:
                    self._loaded = self._load()
                loaded = self._loaded
        return loaded
