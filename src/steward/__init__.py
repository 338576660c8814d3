"""Steward: a self-hosted personal agent runtime."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("steward")
except PackageNotFoundError:  # pragma: no cover - run from a source tree without installing
    __version__ = "0+unknown"
