"""Steward: a self-hosted personal agent runtime."""

import functools


@functools.cache
def _installed_version() -> str:
    # importlib.metadata costs every command ~30 ms to import: read only when asked
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("steward")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree without installing
        return "0+unknown"


def __getattr__(name: str) -> str:
    """``steward.__version__``: the installed distribution's version."""
    if name == "__version__":
        return _installed_version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
