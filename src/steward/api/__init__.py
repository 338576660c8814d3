"""The HTTP API and everything else Steward serves over HTTP."""

from steward.api.app import create_app

__all__ = ["create_app"]
