"""The dashboard's files page: the person's workspace files newest first, in words (size, when,
where from), each downloaded as an attachment — never shown as a page, even an HTML file —
and another person's file not found."""

from __future__ import annotations

import html
import os
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

from steward.harness.workspace import Workspace
from support.web import Site


def _home(site: Site) -> Path:
    assert site.owner.data_dir is not None
    return Workspace(site.owner.data_dir / "workspace").person_dir(site.a.person.id)


def _write(home: Path, path: str, data: bytes, at: float) -> None:
    file = home / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_bytes(data)
    os.utime(file, (at, at))


async def test_the_page_lists_files_newest_first_in_words(site: Site) -> None:
    home, now = _home(site), site.clock.now()
    _write(home, "trip/tickets.pdf", b"%PDF" * 3_000, (now - timedelta(hours=5)).timestamp())
    _write(home, "notes.txt", b"pack light", (now - timedelta(days=1)).timestamp())
    os.utime(home / site.a.file, ((now - timedelta(days=30)).timestamp(),) * 2)
    me = await site.session(site.a.read)  # a read token sees it
    text = html.unescape((await me.get("/files")).text)
    assert '<a href="/files" aria-current="page">Files</a>' in text
    assert text.index("trip/tickets.pdf") < text.index("notes.txt") < text.index(site.a.file)
    assert "12.0 KB" in text
    assert "today 03:00" in text  # the clock is 08:00, in the person's zone
    assert "yesterday 08:00" in text
    assert "made by the task “noop”" in text
    assert "who wrote it is not recorded" in text
    assert f'href="/files/download?path={quote("trip/tickets.pdf")}"' in text
    assert "what web_fetch returned" in text
    assert ">" + site.a.file not in text  # its path names the task by id: only in the link
    assert site.b.file not in text


async def test_no_files_is_said_in_words(site: Site) -> None:
    (_home(site) / site.a.file).unlink()
    me = await site.session(site.a.control)
    text = html.unescape((await me.get("/files")).text)
    assert "Your workspace has no files yet." in text


async def test_a_download_is_an_attachment_never_a_page(site: Site) -> None:
    page = b"<script>alert(document.cookie)</script>"
    _write(_home(site), "from the web/offer €.html", page, site.clock.now().timestamp())
    me = await site.session(site.a.read)
    got = await me.get("/files/download?path=" + quote("from the web/offer €.html", safe=""))
    assert got.status_code == 200
    assert got.content == page
    assert got.headers["content-type"] == "application/octet-stream"
    assert got.headers["content-disposition"] == (
        "attachment; filename=\"offer _.html\"; filename*=UTF-8''offer%20%E2%82%AC.html"
    )
    assert got.headers["x-content-type-options"] == "nosniff"
    assert "sandbox" in got.headers["content-security-policy"]
    for path, status in ((site.b.file, 404), (f"../{site.b.person.id}/{site.b.file}", 400)):
        refused = await me.get("/files/download?path=" + quote(path, safe=""))
        assert refused.status_code == status
        assert "text/html" in refused.headers["content-type"]  # the error page, in words
        assert "bob's page" not in refused.text
