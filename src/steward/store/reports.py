"""Reports: stored with their placement and deliveries (:mod:`steward.store.planning`), listed
for the person newest first, marked read one by one, and gathered into daily digests."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from zoneinfo import ZoneInfo

from sqlalchemy import Connection, func, select, update

from steward.domain.delivery import digest_message
from steward.domain.report import Report, ReportState, digest_id
from steward.errors import NotFound
from steward.store import rows
from steward.store.backend import Backend
from steward.store.channels import enabled_channels
from steward.store.fencing import Fence, touch_fenced
from steward.store.persons import load_person
from steward.store.planning import plan_in, record_report_in
from steward.store.schema import goals, reports


class ReportRepository:
    """What Steward told each person."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    async def add(
        self, report: Report, *, fence: Fence | None = None, lease_now: datetime | None = None
    ) -> Report:
        """Store a report, placed by its goal's policy, with its deliveries. Under the task's
        ``fence`` when the agent reports, so a zombie reports nothing; a report whose id is
        stored already (a replayed step) is returned unchanged, not added again."""

        def op(conn: Connection) -> Report:
            if fence is not None:
                touch_fenced(self.backend, conn, fence, lease_now)
            return record_report_in(conn, self.backend, report)

        return await self.backend.write(op)

    async def get(self, report_id: str) -> Report:
        return await self.backend.read(lambda conn: _get(conn, report_id))

    async def list_for(
        self, person_id: str, *, limit: int = 50, offset: int = 0, unread: bool = False
    ) -> list[Report]:
        """A person's reports, newest first, a page at a time."""
        query = (
            select(reports)
            .where(reports.c.person_id == person_id)
            .order_by(reports.c.created_at.desc(), reports.c.id.desc())
            .limit(limit)
            .offset(offset)
        )
        if unread:
            query = query.where(reports.c.read_at.is_(None))
        return await self.backend.read(lambda conn: [rows.report(r) for r in conn.execute(query)])

    async def count_unread(self, person_id: str) -> int:
        query = select(func.count()).where(
            reports.c.person_id == person_id, reports.c.read_at.is_(None)
        )
        return await self.backend.read(lambda conn: int(conn.execute(query).scalar() or 0))

    async def mark_read(self, person_id: str, report_ids: Sequence[str], *, now: datetime) -> int:
        """Mark the person's reports read (others' ids are ignored); returns how many changed."""

        def op(conn: Connection) -> int:
            changed = conn.execute(
                update(reports)
                .where(
                    reports.c.person_id == person_id,
                    reports.c.id.in_(list(report_ids)),
                    reports.c.read_at.is_(None),
                )
                .values(read_at=rows.ts(now))
                .returning(reports.c.id)
            ).all()
            return len(changed)

        return await self.backend.write(op) if report_ids else 0

    async def release_digests(self, *, now: datetime) -> list[str]:
        """Gather the reports waiting for a digest due by ``now`` into one digest per person
        and local day, and plan its deliveries; returns the digests' ids. Nothing waiting,
        nothing planned; run twice, the same digest is planned once."""

        def op(conn: Connection) -> list[str]:
            due = [
                rows.report(r)
                for r in conn.execute(
                    select(reports)
                    .where(
                        reports.c.state == ReportState.DIGEST.value,
                        reports.c.hold_until <= rows.ts(now),
                    )
                    .order_by(reports.c.person_id, reports.c.created_at)
                )
            ]
            groups: dict[tuple[str, str], list[Report]] = {}
            zones: dict[str, ZoneInfo] = {}
            for report in due:
                if report.person_id not in zones:
                    zones[report.person_id] = ZoneInfo(load_person(conn, report.person_id).timezone)
                assert report.hold_until is not None
                day = report.hold_until.astimezone(zones[report.person_id]).date()
                groups.setdefault((report.person_id, day.isoformat()), []).append(report)
            made = []
            for (person_id, _), items in groups.items():
                zone = zones[person_id]
                at = max(r.hold_until or now for r in items)
                digest = digest_id(person_id, at.astimezone(zone).date(), (r.id for r in items))
                goal_ids = {r.goal_id for r in items if r.goal_id}
                titles = {
                    g.id: g.title
                    for g in conn.execute(
                        select(goals.c.id, goals.c.title).where(goals.c.id.in_(goal_ids))
                    )
                }
                message = digest_message(
                    digest=digest, reports=items, goal_titles=titles, zone=zone, at=at
                )
                channels = enabled_channels(conn, person_id)
                plan_in(
                    conn, self.backend, person_id=person_id, channels=channels,
                    message=message, ref=digest, at=now, now=now,
                )  # fmt: skip
                state = ReportState.DIGESTED if channels else ReportState.DROPPED
                conn.execute(
                    update(reports)
                    .where(reports.c.id.in_([r.id for r in items]))
                    .values(state=state.value)
                )
                made.append(digest)
            return made

        return await self.backend.write(op)

    async def next_digest_at(self) -> datetime | None:
        """When the earliest waiting digest is due, or None."""
        query = select(func.min(reports.c.hold_until)).where(
            reports.c.state == ReportState.DIGEST.value
        )
        return await self.backend.read(lambda conn: rows.dt_opt(conn.execute(query).scalar()))


def _get(conn: Connection, report_id: str) -> Report:
    row = conn.execute(select(reports).where(reports.c.id == report_id)).first()
    if row is None:
        raise NotFound("report", report_id)
    return rows.report(row)
