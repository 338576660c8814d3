"""Nothing outside the roots is ever listed, read, searched or written: not by ``..``, not by
an absolute path, not through a symbolic link (to a file or a folder, at any depth, the last
component too, or swapped in while the tools run), and NUL bytes and overlong paths are
refused in plain words. Across arbitrary paths (hypothesis), the private diary beside the
roots is never read nor changed."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connectors.folder.world import SECRET, Folders
from steward.connectors.folder.files import list_folder, read_file, search, write_file
from steward.connectors.folder.paths import locate
from steward.connectors.folder.settings import FolderSettings
from steward.harness.tools import ToolError
from support.startup import scaled


def links(folders: Folders) -> None:
    """Links inside the roots leading outside them, and one between two roots."""
    docs = folders.documents
    (docs / "escape.txt").symlink_to(folders.outside / "diary.txt")
    (docs / "out").symlink_to(folders.outside)
    (docs / "taxes" / "deep").mkdir()
    (docs / "taxes" / "deep" / "away").symlink_to(folders.outside, target_is_directory=True)
    (docs / "dangling.txt").symlink_to(folders.outside / "not-yet.txt")
    (folders.invoices / "docs").symlink_to(docs)


BAD_TEXT = [
    ("../private/diary.txt", "cannot go up"),
    ("Documents/../../private/diary.txt", "cannot go up"),
    ("Documents/taxes/../../../private", "cannot go up"),
    ("/etc/passwd", "not an absolute path"),
    ("~/diary.txt", "not an absolute path"),
    ("Documents/a\x00b.txt", "NUL"),
    ("Documents/" + "a" * 300, "too long"),
    ("Documents/" + "a/" * 2100, "too long"),
    ("private/diary.txt", "is not one of your folders"),
    ("", "name one of your folders"),
    ("Documents/\udc80.txt", "no file name can have"),
]
THROUGH_LINKS = [
    "Documents/escape.txt",
    "Documents/out/diary.txt",
    "Documents/out",
    "Documents/taxes/deep/away/diary.txt",
    "Documents/taxes/deep/away",
    "Documents/dangling.txt",
    "Invoices/docs/notes.md",
]


@pytest.mark.parametrize(("path", "why"), BAD_TEXT)
async def test_paths_that_could_leave_the_roots_are_refused_in_plain_words(
    folders: Folders, path: str, why: str
) -> None:
    await folders.connect()
    calls = [
        ("folder_list", {}),
        ("folder_read", {}),
        ("folder_write", {"content": "x"}),
        ("folder_replace", {"content": "x"}),
        ("folder_search", {"name": "*"}),
    ]
    for tool, more in calls:
        if tool == "folder_search" and not path:
            continue  # no path: all the folders
        with pytest.raises(ToolError, match=why):
            await folders.call(tool, path=path, **more)
    assert (folders.outside / "diary.txt").read_text() == SECRET
    assert sorted(p.name for p in folders.outside.iterdir()) == ["diary.txt"]


@pytest.mark.parametrize("path", THROUGH_LINKS)
async def test_no_tool_goes_through_a_link(folders: Folders, path: str) -> None:
    await folders.connect()
    links(folders)
    for tool, more in [
        ("folder_list", {}),
        ("folder_read", {}),
        ("folder_search", {"name": "*"}),
    ]:
        with pytest.raises(ToolError, match=r"symbolic link|there is no|is a file"):
            await folders.call(tool, path=path, **more)
    for target in (path, f"{path}/new.txt"):
        for tool in ("folder_write", "folder_replace"):
            with pytest.raises(ToolError, match=r"symbolic link|there is no|is a file"):
                await folders.call(tool, path=target, content="owned")
    assert (folders.outside / "diary.txt").read_text() == SECRET
    assert sorted(p.name for p in folders.outside.iterdir()) == ["diary.txt"]
    assert (folders.documents / "escape.txt").is_symlink()  # not replaced by a file either


async def test_links_are_shown_as_links_and_never_searched_through(folders: Folders) -> None:
    await folders.connect()
    links(folders)
    listed = await folders.call("folder_list", path="Documents")
    kinds = {e["name"]: e["kind"] for e in listed["entries"]}
    assert kinds["escape.txt"] == kinds["out"] == "link (not followed)"
    assert "size" not in str([e for e in listed["entries"] if e["name"] == "escape.txt"])
    found = await folders.call("folder_search", text="private diary")
    assert found == {"found": []}
    every = await folders.call("folder_search", name="*")
    assert all("diary" not in f["path"] for f in every["found"])


async def test_a_pipe_or_a_folder_is_not_read(folders: Folders) -> None:
    await folders.connect()
    os.mkfifo(folders.documents / "pipe")
    with pytest.raises(ToolError, match="not a plain file"):  # and it does not hang
        await asyncio.wait_for(folders.call("folder_read", path="Documents/pipe"), scaled(10))
    with pytest.raises(ToolError, match="is a folder: list it"):
        await folders.call("folder_read", path="Documents/taxes")
    with pytest.raises(ToolError, match="is one of your folders"):
        await folders.call("folder_read", path="Documents")


async def test_a_link_swapped_in_while_the_tools_run_is_never_followed(
    folders: Folders,
) -> None:
    """A thread keeps replacing ``flip.txt`` (and the folder ``flip``) by links to the
    private folder and back: whatever the timing, no read, listing or write gets through."""
    await folders.connect()
    docs = folders.documents
    stop = threading.Event()

    def flipping() -> None:
        diary, flip_file, flip_folder = (
            folders.outside / "diary.txt",
            docs / "flip.txt",
            docs / "flip",
        )
        spare = docs / ".flip.new"
        while not stop.is_set():
            spare.write_text("mine")
            os.replace(spare, flip_file)  # a plain file...
            spare.symlink_to(diary)
            os.replace(spare, flip_file)  # ...and a link out, in its place at once
            with contextlib.suppress(OSError):  # the tools make the folder too
                if flip_folder.is_symlink():
                    flip_folder.unlink()
                    flip_folder.mkdir()
                else:
                    shutil.rmtree(flip_folder, ignore_errors=True)
                    flip_folder.symlink_to(folders.outside)

    flipper = threading.Thread(target=flipping)
    flipper.start()
    outcomes: set[str] = set()
    read_states: set[str] = set()
    """What folder_read met at flip.txt: the plain file, or the link (refused as a link)."""
    try:
        for _ in range(300):
            for tool, args in [
                ("folder_read", {"path": "Documents/flip.txt"}),
                ("folder_list", {"path": "Documents/flip"}),
                ("folder_write", {"path": "Documents/flip/x.txt", "content": "owned"}),
                ("folder_replace", {"path": "Documents/flip.txt", "content": "w"}),
            ]:
                try:
                    result = await folders.call(tool, **args)
                except ToolError as exc:
                    outcomes.add(f"{tool} refused")
                    if tool == "folder_read" and "symbolic link" in str(exc):
                        read_states.add("link")
                    continue
                outcomes.add(f"{tool} done")
                assert SECRET not in str(result)
                if tool == "folder_read" and result["text"] == "mine":
                    read_states.add("file")
    finally:
        stop.set()
        flipper.join()
    assert (folders.outside / "diary.txt").read_text() == SECRET
    assert sorted(p.name for p in folders.outside.iterdir()) == ["diary.txt"]
    # the race was really run: the reads met the plain file and the link in its place, so
    # a read that followed the link would have been seen (and failed the asserts above)
    assert read_states == {"file", "link"}, outcomes


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FolderSettings]:
    """Roots with links out, for the property test (made once: hypothesis runs many cases)."""
    base = tmp_path_factory.mktemp("tree")
    docs, outside = base / "Documents", base / "private"
    (docs / "taxes").mkdir(parents=True)
    outside.mkdir()
    (outside / "diary.txt").write_text(SECRET)
    (docs / "taxes" / "2025.txt").write_text("Income")
    (docs / "escape.txt").symlink_to(outside / "diary.txt")
    (docs / "out").symlink_to(outside)
    (docs / "taxes" / "up").symlink_to("../..")
    yield FolderSettings(roots=(str(docs),))
    assert (outside / "diary.txt").read_text() == SECRET
    assert sorted(p.name for p in outside.iterdir()) == ["diary.txt"]


SEGMENTS = st.sampled_from(
    [
        *("Documents", "taxes", "2025.txt", "escape.txt", "out", "up", "diary.txt", "private"),
        *("..", ".", "", "~", "/", "\x00", "x", "Documents/..", "%2e%2e", "..\\..", " .."),
    ]
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(parts=st.lists(SEGMENTS, min_size=1, max_size=8), replace=st.booleans())
def test_any_path_stays_inside_the_roots(
    tree: FolderSettings, parts: list[str], replace: bool
) -> None:
    path = "/".join(parts)
    zone = tree.zone
    for attempt in (
        lambda located: list_folder(located, zone),
        lambda located: read_file(located, 0, zone),
        lambda located: search(located, "*", "diary", threading.Event()),
        lambda located: write_file(located, "owned", replace),
    ):
        try:
            result = attempt(locate(tree, path))
        except ToolError:
            continue
        assert SECRET not in str(result)
    root = Path(tree.folders[0].path)
    outside = root.parent / "private"
    assert (outside / "diary.txt").read_text() == SECRET
    assert sorted(p.name for p in outside.iterdir()) == ["diary.txt"]
    for made in root.rglob("*"):  # whatever was written landed inside the root
        if made.is_file() and not made.is_symlink():
            assert made.resolve().is_relative_to(root)


async def test_a_folder_put_in_place_of_a_root_is_not_reached(folders: Folders) -> None:
    """Someone who may write beside a root swaps it: for a link to elsewhere, or for another
    folder under its name. The tools and the watch reach neither."""
    await folders.connect()
    folders.documents.rename(folders.home / "Documents.old")
    folders.documents.symlink_to(folders.outside, target_is_directory=True)
    for tool, args in [
        ("folder_read", {"path": "Documents/diary.txt"}),
        ("folder_list", {"path": "Documents"}),
        ("folder_write", {"path": "Documents/new.txt", "content": "x"}),
    ]:
        with pytest.raises(ToolError, match="not the folder you connected any more"):
            await folders.call(tool, **args)
    folders.documents.unlink()
    folders.documents.mkdir()  # a new folder of the same name: not the one connected either
    with pytest.raises(ToolError, match="not the folder you connected any more"):
        await folders.call("folder_list", path="Documents")
    assert sorted(p.name for p in folders.outside.iterdir()) == ["diary.txt"]


async def test_a_hard_link_to_a_file_outside_is_not_read(folders: Folders) -> None:
    await folders.connect()
    os.link(folders.outside / "diary.txt", folders.documents / "diary.txt")
    with pytest.raises(ToolError, match="has other names on this machine"):
        await folders.call("folder_read", path="Documents/diary.txt")
    found = await folders.call("folder_search", text="private diary")
    assert found == {"found": []}
