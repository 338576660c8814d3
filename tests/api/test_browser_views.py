"""The browser over the API: each task's last view as JSON (its screenshot's path only while
unchanged), the screenshot as ``image/png`` (``nosniff``) and never another person's, a changed
one or one behind a link; logging out needs a ``control`` token and is refused, changing
nothing, while a task uses the browser."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from steward.domain import TaskSpec
from steward.harness.workspace import Workspace
from support.api import Api
from support.screenshots import png, profiles, record_look, sign_in


def _data(api: Api) -> Path:
    assert api.owner.data_dir is not None
    return api.owner.data_dir


async def test_views_and_their_pictures(api: Api, tmp_path: Path) -> None:
    data, a, b = _data(api), api.a, api.b
    now = api.owner.clock.now()
    shot = png()
    older = record_look(data, a.person.id, a.task.id, at=now - timedelta(hours=1), picture=shot)
    other = await api.owner.create_task(
        person_id=a.person.id, spec=TaskSpec(kind="noop", title="Read the news")
    )
    record_look(data, a.person.id, other.id, at=now, url="https://news.example/", title="News")
    record_look(data, b.person.id, b.task.id, at=now, picture=png(rgb=(0, 0, 0)))
    async with api.client(a.read) as client:
        listed = (await client.get("/browser/views")).json()
        assert [(v["task"], v["host"], v["title"]) for v in listed] == [
            ("Read the news", "news.example", "News"),
            ("noop", "shop.example", "Your cart"),
        ]
        assert listed[1]["picture"] == older.picture
        assert listed[0]["picture"] is None
        assert listed[0]["picture_note"] is None
        assert b.task.id not in str(listed)

        got = await client.get(f"/browser/views/{a.task.id}/picture")
        assert (got.status_code, got.content) == (200, shot)
        assert got.headers["content-type"] == "image/png"
        assert got.headers["x-content-type-options"] == "nosniff"
        for task in (b.task.id, other.id):  # another person's; one without a screenshot
            refused = await client.get(f"/browser/views/{task}/picture")
            assert refused.status_code == 404, refused.text
            assert refused.headers["content-type"] == "application/problem+json"

        file = Workspace(data / "workspace").person_dir(a.person.id) / str(older.picture)
        file.write_bytes(png(rgb=(255, 0, 0)))
        changed = await client.get(f"/browser/views/{a.task.id}/picture")
        assert changed.status_code == 404
        assert "changed after it was taken" in changed.json()["detail"]
        listed = (await client.get("/browser/views")).json()
        assert listed[1]["picture"] is None
        assert "changed" in listed[1]["picture_note"]

        outside = tmp_path / "outside.png"
        outside.write_bytes(shot)
        file.unlink()
        file.symlink_to(outside)
        linked = await client.get(f"/browser/views/{a.task.id}/picture")
        assert linked.status_code == 404
        assert "no longer in your workspace" in linked.json()["detail"]


async def test_clearing_needs_control_and_waits_for_no_task(api: Api) -> None:
    data, a = _data(api), api.a
    cookies = sign_in(data, a.person.id)
    async with api.client(a.read) as client:
        assert (await client.post("/browser/clear")).status_code == 403
    assert cookies.exists()
    async with api.client(a.control) as client:
        with profiles(data).hold(a.person.id, "tsk_busy"):
            busy = await client.post("/browser/clear")
        assert busy.status_code == 409, busy.text
        assert busy.json()["detail"] == (
            "a task is using the browser right now; try again when it has finished"
        )
        assert cookies.exists()
        done = await client.post("/browser/clear")
        assert done.status_code == 200, done.text
        assert "Logged out of every site" in done.json()["said"]
    assert not cookies.exists()
