"""The app on a free loopback port, for tests that talk to it over a real socket."""

from steward.api.server import serving

__all__ = ["serving"]
