"""The folder tools on real files, called as the harness calls them: connecting, listing,
reading (encodings, binary files, long files), searching, writing (idempotent, never
overwriting unasked), and a read-only connection that cannot write — by its scopes in the
policy, and in the tool itself."""

from __future__ import annotations

import os
import resource
from typing import Any

import pytest

from connectors.folder.world import Folders
from steward.connectors.base import SettingsInvalid
from steward.connectors.folder import files, paths, scan
from steward.connectors.folder.files import write_file
from steward.connectors.folder.paths import locate
from steward.connectors.folder.scan import TooManyFiles, snapshot
from steward.connectors.folder.settings import settings_of
from steward.domain.actions import ActionRequest, Verdict
from steward.domain.agent_input import AgentTaskInput, Mode
from steward.harness.tools import Tool, ToolError
from steward.sentinel.policy import PolicySentinel


async def test_connecting_needs_no_credential_and_says_what_it_found(folders: Folders) -> None:
    done = await folders.svc.connect(
        person_id=folders.person_id,
        kind="folder",
        name="files",
        settings={"roots": f"{folders.documents}, Invoices={folders.invoices}"},
    )
    assert done.check == "2 folders: Documents (2 files), Invoices (1 file); read and write"
    assert (done.connection.scopes, done.connection.hosts, done.connection.secret) == (
        ("folder.read", "folder.write"),
        (),
        None,
    )
    assert await folders.svc.list_secrets(person_id=folders.person_id) == []
    reader = await folders.connect(name="reader", read_only=True)
    assert reader.scopes == ("folder.read",)
    said = await folders.svc.test_connection("reader", person_id=folders.person_id)
    assert said.said == "2 folders: Documents (2 files), Invoices (1 file); read-only"


@pytest.mark.parametrize(
    ("roots", "why"),
    [
        ("Documents", "not NAME=/absolute/path"),
        ("Docs=relative/path", "not an absolute path"),
        ("/no/such/folder/here", "there is no folder"),
        ("{home}/Documents/notes.md", "is a file, not a folder"),
        ("{home}/Documents, Documents={home}/Invoices", "two folders are named Documents"),
        ("{home}, {home}/Invoices", "Invoices is inside home"),
        ("A/B={home}/Invoices", "cannot name a folder"),
        ("", "name at least one folder"),
        (" , ", "name at least one folder"),
    ],
)
async def test_settings_that_do_not_fit_are_refused_and_nothing_is_kept(
    folders: Folders, roots: str, why: str
) -> None:
    with pytest.raises(SettingsInvalid, match=why):
        await folders.svc.connect(
            person_id=folders.person_id,
            kind="folder",
            name="files",
            settings={"roots": roots.format(home=folders.home)},
        )
    assert await folders.svc.list_connections(person_id=folders.person_id) == []


async def test_list_shows_folders_first_with_plain_sizes_and_times(folders: Folders) -> None:
    await folders.connect()
    os.utime(folders.documents / "notes.md", ns=(0, 1_780_000_000 * 10**9))
    listed = await folders.call("folder_list", path="Documents")
    assert listed["folder"] == "Documents"
    [taxes, notes] = listed["entries"]
    assert (taxes["name"], taxes["kind"]) == ("taxes", "folder")
    assert notes == {
        "name": "notes.md",
        "kind": "file",
        "size": "35 bytes",
        "modified": "Thu 28 May 2026, 22:26",  # Europe/Paris
    }
    assert (await folders.call("folder_list", path="invoices/"))["entries"][0]["name"] == (
        "shop-0042.txt"
    )


async def test_read_handles_encodings_and_describes_binary_files(folders: Folders) -> None:
    await folders.connect()
    docs = folders.documents
    (docs / "latin.txt").write_bytes("Café crème à la française, déjà vu.\n".encode("cp1252"))
    (docs / "wide.txt").write_bytes("\ufeffÜber 2 Straßen".encode("utf-16-le"))
    (docs / "bom8.txt").write_bytes(b"\xef\xbb\xbfhello")
    (docs / "scan.pdf").write_bytes(b"%PDF-1.7\n\x00\x01\x02binary stream")
    read = await folders.call("folder_read", path="Documents/notes.md")
    assert (read["text"], read["encoding"]) == ("# Notes\nCall Dana about the lease.\n", "utf-8")
    assert "déjà vu" in (await folders.call("folder_read", path="Documents/latin.txt"))["text"]
    wide = await folders.call("folder_read", path="Documents/wide.txt")
    assert (wide["text"], wide["encoding"]) == ("Über 2 Straßen", "utf-16-le")
    assert (await folders.call("folder_read", path="Documents/bom8.txt"))["text"] == "hello"
    pdf = await folders.call("folder_read", path="Documents/scan.pdf")
    assert "text" not in pdf
    assert pdf["binary"] == "a PDF document (application/pdf), not text: its contents are not shown"


async def test_a_long_file_is_read_in_parts_without_cutting_a_character(
    folders: Folders,
) -> None:
    await folders.connect()
    whole = "é" * 150_000  # 300,000 bytes: the cap falls inside a character
    (folders.documents / "long.txt").write_text(whole)
    first = await folders.call("folder_read", path="Documents/long.txt")
    assert first["more"] == "the file goes on: read it again with offset=200000"
    second = await folders.call("folder_read", path="Documents/long.txt", offset=200_000)
    assert "more" not in second
    assert first["text"] + second["text"] == whole


async def test_search_by_name_and_by_text(folders: Folders) -> None:
    await folders.connect()
    (folders.documents / "taxes" / "2024.txt").write_text("Income: 900\nLEASE signed\n")
    (folders.documents / "~$draft.txt").write_text("lease")  # an office owner file
    found = await folders.call("folder_search", name="*.TXT")
    assert [f["path"] for f in found["found"]] == [
        "Documents/taxes/2024.txt",
        "Documents/taxes/2025.txt",
        "Invoices/shop-0042.txt",
    ]
    assert "stopped" not in found
    hits = await folders.call("folder_search", text="lease")
    assert [(h["path"], h["match"]) for h in hits["found"]] == [
        ("Documents/notes.md", "# Notes Call Dana about the lease."),
        ("Documents/taxes/2024.txt", "Income: 900 LEASE signed"),
    ]
    both = await folders.call("folder_search", name="2*", text="lease", path="Documents/taxes")
    assert [h["path"] for h in both["found"]] == ["Documents/taxes/2024.txt"]
    with pytest.raises(ToolError, match="say what to look for"):
        await folders.call("folder_search")


async def test_a_search_is_bounded(folders: Folders) -> None:
    await folders.connect()
    many = folders.documents / "many"
    many.mkdir()
    for n in range(60):
        (many / f"f{n:02}.txt").write_text("x")
    found = await folders.call("folder_search", name="f*.txt")
    assert len(found["found"]) == 50
    assert found["stopped"].startswith("the search stopped after 50 files and 50 matches")


async def test_writes_land_are_idempotent_and_never_overwrite_unasked(folders: Folders) -> None:
    await folders.connect()
    made = await folders.call(
        "folder_write", path="Documents/letters/dana.txt", content="Dear Dana,\n"
    )
    assert made == {"path": "Documents/letters/dana.txt", "written": "created", "size": "11 bytes"}
    target = folders.documents / "letters" / "dana.txt"
    assert target.read_text() == "Dear Dana,\n"
    again = await folders.call(
        "folder_write", path="Documents/letters/dana.txt", content="Dear Dana,\n"
    )
    assert again["written"] == "unchanged"
    with pytest.raises(ToolError, match=r"already exists; nothing was written .*folder_replace"):
        await folders.call("folder_write", path="Documents/letters/dana.txt", content="Hi")
    assert target.read_text() == "Dear Dana,\n"
    target.chmod(0o600)
    replaced = await folders.call("folder_replace", path="Documents/letters/dana.txt", content="Hi")
    assert replaced["written"] == "replaced"
    assert (target.read_text(), target.stat().st_mode & 0o777) == ("Hi", 0o600)
    kept = ["dana.txt", "dana.txt.~1~"]
    assert sorted(p.name for p in target.parent.iterdir()) == kept  # no leftovers
    for folder_itself in ("Documents", "Documents/letters"):
        with pytest.raises(ToolError):
            await folders.call("folder_replace", path=folder_itself, content="x")
    with pytest.raises(ToolError, match="named like a temporary file"):
        await folders.call("folder_write", path="Documents/x.part", content="x")


def request(
    folders: Folders, found: Tool, args: dict[str, Any], mode: Mode | None = None
) -> ActionRequest:
    """The action the harness would put to the sentinel for this call."""
    return ActionRequest(
        person_id=folders.person_id,
        task_id="tsk_test",
        goal_id=None,
        tool=found.name,
        args=found.validate(args),
        effect=found.effect,
        scopes=found.scopes,
        source=found.source,
        connector=found.connector,
        wake_reason="test",
        task_input=AgentTaskInput(mode=mode),
        roles=dict(found.roles) if found.roles is not None else None,
    )


async def test_a_read_only_connection_cannot_write(folders: Folders) -> None:
    await folders.connect(name="reader", read_only=True)
    sentinel = PolicySentinel(folders.store, folders.clock)
    tools = folders.tools()
    write = {"path": "Documents/x.txt", "content": "x"}
    denied = await sentinel.decide(request(folders, tools["folder_write"], write))
    assert (denied.verdict, denied.basis) == (Verdict.DENY, "connection")
    assert "does not allow folder.write" in denied.reason
    read = {"path": "Documents/notes.md"}
    allowed = await sentinel.decide(request(folders, tools["folder_read"], read))
    assert allowed.verdict is Verdict.ALLOW
    with pytest.raises(ToolError, match="is read-only"):  # called past the policy: refused too
        await folders.call("folder_write", **write)
    assert not (folders.documents / "x.txt").exists()


async def test_a_read_write_connection_writes_but_not_in_proactive_research(
    folders: Folders,
) -> None:
    await folders.connect()
    sentinel = PolicySentinel(folders.store, folders.clock)
    write = folders.tools()["folder_write"]
    args = {"path": "Documents/x.txt", "content": "x"}
    assert (await sentinel.decide(request(folders, write, args))).verdict is Verdict.ALLOW
    research = await sentinel.decide(request(folders, write, args, mode="research"))
    assert (research.verdict, research.basis) == (Verdict.DENY, "mode:research")


async def test_the_tools_declare_what_they_touch(folders: Folders) -> None:
    tools = folders.tools()
    for name in ("folder_list", "folder_read", "folder_search"):
        assert (tools[name].effect.value, tools[name].scopes) == ("read", ("folder.read",))
        assert tools[name].untrusted_output
    write = tools["folder_write"]
    assert (write.effect.value, write.scopes, write.untrusted_output) == (
        "local",
        ("folder.write",),
        False,
    )
    assert write.roles is not None
    assert (write.roles["path"].value, write.roles["account"].value) == ("identifier", "account")
    assert write.summary({"path": "Documents/a.txt", "content": "x"}) == (
        "Write a new file Documents/a.txt"
    )
    replace = tools["folder_replace"]
    assert (replace.effect.value, replace.scopes, replace.idempotent) == (
        "external",  # the sentinel asks the person first
        ("folder.write",),
        True,
    )
    assert replace.summary({"path": "Documents/a.txt", "content": "x"}) == (
        "Replace the text of Documents/a.txt (its old text is kept beside it)"
    )
    assert tools["folder_search"].summary({"name": "*.pdf", "text": "tax"}) == (
        'Look in your folders for files named *.pdf and containing "tax"'
    )


async def test_a_failed_write_leaves_no_part_file_and_no_folder_it_made(
    folders: Folders,
) -> None:
    """The file system refuses half-way through writing (here: the process may not write
    files that large), after the part file and the folders on the way were made."""
    connection = await folders.connect()
    located = locate(settings_of(connection), "Documents/new/deeper/big.txt")
    limits = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1000, limits[1]))
    try:
        with pytest.raises(ToolError, match=r"could not be written.*nothing was written"):
            write_file(located, "x" * 5000, replace=False)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limits)
    assert sorted(p.name for p in folders.documents.iterdir()) == ["notes.md", "taxes"]


async def test_a_folder_too_large_to_read_is_said_not_loaded(
    folders: Folders, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Listing, searching and watching read a folder's entries only up to a bound (here 50),
    and count the folders a walk enters against its bounds (a tree of empty folders)."""
    monkeypatch.setattr(paths, "MAX_FOLDER_ENTRIES", 50)
    connection = await folders.connect()
    many = folders.documents / "many"
    many.mkdir()
    for n in range(60):
        (many / f"f{n:02}.txt").write_text("x")
    with pytest.raises(ToolError, match="many holds more than 50 files and folders"):
        await folders.call("folder_list", path="Documents/many")
    found = await folders.call("folder_search", text="nowhere")
    assert "(many holds more than 50 files and folders)" in found["stopped"]
    with pytest.raises(TooManyFiles, match="more than 50 files and folders"):
        snapshot(settings_of(connection))
    for n in range(60):
        (many / f"f{n:02}.txt").unlink()
    monkeypatch.setattr(scan, "MAX_WATCHED", 30)
    monkeypatch.setattr(files, "MAX_SEARCHED_FILES", 30)
    for n in range(40):
        (many / f"d{n:02}").mkdir()  # no file at all: the folders alone are too many
    found = await folders.call("folder_search", name="*.pdf")
    assert found["found"] == []
    assert "(there are more than 30 folders)" in found["stopped"]
    with pytest.raises(TooManyFiles, match="more than 30 folders"):
        snapshot(settings_of(connection))
