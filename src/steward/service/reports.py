"""The facade's reports part: what Steward told the person (newest first, a page at a time,
read one by one), and when it may reach them — quiet hours and the daily digest's time."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import time
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from steward.domain import Person
from steward.domain.report import Report
from steward.domain.tokens import CONTROL, READ
from steward.errors import UsageError
from steward.service.base import ServiceBase

MAX_PAGE = 500
"""Reports in one page."""
_CLOCK = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")


def parse_clock(text: str, what: str) -> time:
    """A local time written ``HH:MM`` (24-hour)."""
    found = _CLOCK.match(text.strip())
    if found is None:
        raise UsageError(f"{what} must be a time like 07:30 or 22:00 (24-hour), not {text!r}")
    return time(int(found[1]), int(found[2]))


def parse_quiet_hours(text: str) -> tuple[time, time] | None:
    """``22:00-07:00`` (may wrap midnight), or ``off`` for none."""
    if text.strip().lower() in ("off", "none", ""):
        return None
    start, sep, end = text.partition("-")
    if not sep:
        raise UsageError(f"quiet hours look like 22:00-07:00 (or 'off'), not {text!r}")
    begin, finish = parse_clock(start, "the start"), parse_clock(end, "the end")
    if begin == finish:
        raise UsageError("quiet hours must start and end at different times")
    return begin, finish


class ReportService(ServiceBase):
    async def list_reports(
        self,
        *,
        person_id: str | None = None,
        limit: int = 50,
        offset: int = 0,
        unread: bool = False,
    ) -> list[Report]:
        """The person's reports, newest first: ``limit`` of them after the first ``offset``."""
        pid = self._for(person_id, READ)
        if not 1 <= limit <= MAX_PAGE:
            raise UsageError(f"a page holds 1 to {MAX_PAGE} reports")
        if offset < 0:
            raise UsageError("the offset cannot be negative")
        return await self.store.reports.list_for(pid, limit=limit, offset=offset, unread=unread)

    async def goal_usages(self, *, person_id: str | None = None) -> dict[str, dict[str, float]]:
        """What each of the person's goals has spent so far (as :meth:`goal_detail` gives one
        goal's), by goal id, in one read."""
        pid = self._for(person_id, READ)
        return await self.store.activations.usage_by_goal(pid)

    async def mark_reports_read(
        self, report_ids: Sequence[str], *, person_id: str | None = None
    ) -> int:
        """Mark reports read (a read token may: the dashboard's own bookkeeping); returns how
        many were unread. An id that is not the person's is not found, and nothing changes."""
        pid = self._for(person_id, READ)
        for report_id in report_ids:
            report = await self.store.reports.get(report_id)
            self._owned("report", report_id, report.person_id)
            if self.principal is None and report.person_id != pid:
                raise UsageError(f"report {report_id!r} is not {pid!r}'s")
        return await self.store.reports.mark_read(pid, report_ids, now=self.clock.now())

    async def set_quiet_hours(self, hours: str, *, person_id: str | None = None) -> Person:
        """Set the person's quiet hours, ``22:00-07:00`` in their zone (``off``: none). Only
        urgent messages reach them then; the rest wait until the hours end."""
        pid = self._for(person_id, CONTROL)
        quiet = parse_quiet_hours(hours)
        person = await self.store.persons.get_person(pid)
        start, end = quiet if quiet is not None else (None, None)
        return await self.store.persons.set_reach(
            pid, quiet_start=start, quiet_end=end, digest_at=person.digest_at
        )

    async def set_digest_time(self, at: str, *, person_id: str | None = None) -> Person:
        """Set when the daily digest of information reports goes, ``18:00`` in their zone."""
        pid = self._for(person_id, CONTROL)
        when = parse_clock(at, "the digest time")
        person = await self.store.persons.get_person(pid)
        return await self.store.persons.set_reach(
            pid, quiet_start=person.quiet_start, quiet_end=person.quiet_end, digest_at=when
        )

    async def set_timezone(self, timezone: str, *, person_id: str | None = None) -> Person:
        """Set the time zone (IANA name, ``Europe/Berlin``) the person's times are shown in
        and their quiet hours, digest and new cron triggers keep."""
        pid = self._for(person_id, CONTROL)
        try:
            ZoneInfo(timezone)
        except (ValueError, ZoneInfoNotFoundError):
            raise UsageError(
                f"unknown time zone {timezone!r}; give an IANA name like 'Europe/Berlin'"
            ) from None
        return await self.store.persons.set_timezone(pid, timezone)
