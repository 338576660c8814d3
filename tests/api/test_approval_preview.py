"""What a tool showed of an action, through the API: an approval's JSON carries its facts as
labelled lines and its picture as the URL it is served at (never its place in the workspace),
and that URL serves the person's own PNG only while it is the file taken."""

from __future__ import annotations

import json

from support.api import Api
from support.pictures import png
from support.tenancy import take_picture


async def test_an_approvals_json_has_its_facts_and_its_pictures_url(api: Api) -> None:
    a = api.a.approval
    assert api.owner.data_dir is not None
    take_picture(api.owner.data_dir, api.a)
    async with api.client(api.a.read) as me:
        listed = (await me.get("/approvals")).json()["items"]
        one = (await me.get(f"/approvals/{a.id}")).json()
        [shown] = [item for item in listed if item["id"] == a.id]
        for approval in (shown, one):
            assert approval["preview"] == {
                "facts": [{"label": "To", "value": "friend-of-ann@example.com"}],
                "picture_url": f"/api/v1/approvals/{a.id}/picture",
            }
            assert "previews/shot.png" not in json.dumps(approval)  # not where it is kept
        picture = await me.get(shown["preview"]["picture_url"].removeprefix("/api/v1"))
    assert picture.status_code == 200
    assert picture.headers["content-type"] == "image/png"
    assert picture.headers["x-content-type-options"] == "nosniff"
    assert picture.content.startswith(b"\x89PNG\r\n\x1a\n")
    async with api.client(api.a.control) as me:
        decided = await me.post(f"/approvals/{a.id}/decision", json={"approve": False})
    assert decided.json()["preview"]["picture_url"] == f"/api/v1/approvals/{a.id}/picture"


async def test_the_picture_route_refuses_another_person_and_a_changed_file(api: Api) -> None:
    a, b = api.a.approval, api.b.approval
    assert api.owner.data_dir is not None
    take_picture(api.owner.data_dir, api.b)  # theirs is there, and still not shown to A
    async with api.client(api.a.read) as me:
        theirs = await me.get(f"/approvals/{b.id}/picture")
        assert theirs.status_code == 404
        assert theirs.headers["content-type"] == "application/problem+json"
        assert b.id in theirs.json()["detail"]
        assert theirs.content.find(b"PNG") == -1
        assert api.owner.data_dir is not None
        shot = take_picture(api.owner.data_dir, api.a)
        assert (await me.get(f"/approvals/{a.id}/picture")).content == shot.read_bytes()
        shot.write_bytes(png(4, 3, (1, 2, 3)))
        changed = await me.get(f"/approvals/{a.id}/picture")
    assert changed.status_code == 404
    assert changed.json()["detail"] == (
        "The picture of this approval was changed after it was taken, so it is not shown."
    )
