"""The workspace files over the API: listed newest first as JSON, downloaded as
``application/octet-stream`` attachments; a path out of the workspace refused, another person's
file not found."""

from __future__ import annotations

from pathlib import Path

from steward.harness.workspace import Workspace
from support.api import Api


def _home(api: Api, person_id: str) -> Path:
    assert api.owner.data_dir is not None
    return Workspace(api.owner.data_dir / "workspace").person_dir(person_id)


async def test_files_are_listed_and_downloaded(api: Api) -> None:
    async with api.client(api.a.read) as client:
        listed = (await client.get("/files")).json()
        assert [f["path"] for f in listed["files"]] == [api.a.file]
        [only] = listed["files"]
        assert only["size"] == len(b"ann's page")
        assert only["tool"] == "web_fetch"
        got = await client.get(f"/files/{api.a.file}")
        assert got.status_code == 200
        assert got.content == b"ann's page"
        assert got.headers["content-type"] == "application/octet-stream"
        assert got.headers["content-disposition"].startswith('attachment; filename="000001-')


async def test_out_of_the_workspace_or_another_persons_is_refused(api: Api) -> None:
    (_home(api, api.a.person.id) / "bob").symlink_to(_home(api, api.b.person.id))
    async with api.client(api.a.control) as client:
        for path, status, words in (
            (api.b.file, 404, "not found"),
            (f"bob/{api.b.file}", 404, "not found"),
            (f"%2E%2E/{api.b.person.id}/{api.b.file}", 400, "cannot go up"),
            ("artifacts", 404, "not found"),
        ):
            answer = await client.get(f"/files/{path}")
            assert answer.status_code == status, (path, answer.text)
            assert answer.headers["content-type"] == "application/problem+json"
            assert words in answer.json()["detail"]
