"""Whether this process can serve: the database answers and its schema is the code's."""

from __future__ import annotations

from steward.errors import DatabaseUnavailable
from steward.service.base import ServiceBase


class HealthService(ServiceBase):
    async def readiness(self) -> str | None:
        """None when the database answers at the schema revision this code needs; otherwise
        why not, in a sentence (names nothing of anyone's: a load balancer may ask)."""
        from steward.store import migrate

        try:
            current = await self.store.schema_revision()
        except DatabaseUnavailable as exc:
            return f"the database is not answering: {exc}"
        head = migrate.head_revision()
        if current == head:
            return None
        if current is None:
            return "the database has no schema yet: run 'steward db upgrade'"
        if migrate.is_known(current):
            return (
                f"the database schema is at revision {current}, behind this version's {head}: "
                "run 'steward db upgrade'"
            )
        return (
            f"the database schema is at revision {current}, newer than this version knows "
            f"({head}): upgrade Steward"
        )
