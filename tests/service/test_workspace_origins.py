"""The facade's workspace listing shows where each file came from when that was recorded (a
browser download, the shell), "changed since" when its contents no longer match, and the
person's Files page shows it beside the file."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

from steward.domain.clock import SimulatedClock
from steward.environment.provenance import Provenance
from steward.harness.workspace import Workspace
from steward.service import Service
from steward.store import Store

AT = datetime(2026, 12, 4, 9, 14, tzinfo=UTC)


async def test_listed_files_carry_their_recorded_origin(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    svc = Service(store, clock, data_dir=tmp_path)
    person = (await svc.ensure_person()).id
    home = Workspace(tmp_path / "workspace").person_dir(person)
    (home / "downloads").mkdir(parents=True)
    (home / "downloads" / "invoice.pdf").write_bytes(b"%PDF-1.7 the invoice")
    (home / "report.txt").write_text("made by the shell")
    (home / "mine.txt").write_text("the person's own")
    provenance = Provenance(tmp_path / "environment")
    for path, data, tool, origin in (
        (
            "downloads/invoice.pdf",
            b"%PDF-1.7 the invoice",
            "browser_download",
            "a download from localhost",
        ),
        ("report.txt", b"what the shell wrote first", "workspace_shell", "the shell: make report"),
    ):
        await provenance.record(
            person,
            path,
            task_id="tsk_1",
            tool=tool,
            origin=origin,
            sha256=hashlib.sha256(data).hexdigest(),
            at=AT,
        )
    listing = await svc.workspace_files(person_id=person)
    origins = {f.path: f.origin for f in listing.files}
    when = "2026-12-04 09:14 UTC"
    assert origins == {
        "downloads/invoice.pdf": f"a download from localhost (browser_download, {when})",
        "report.txt": f"the shell: make report (workspace_shell, {when}); changed since",
        "mine.txt": None,
    }
