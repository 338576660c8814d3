"""The moment simulated clocks start at."""

from __future__ import annotations

from datetime import UTC, datetime

START = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
"""A Monday morning: the ``clock`` fixture starts here."""
