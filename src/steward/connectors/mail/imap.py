"""A mailbox over IMAP, async: ``imapclient`` is blocking, so every call runs in a thread of the
account's own, one at a time (an IMAP connection is one conversation). A thread per account
rather than the shared pool: a watch's IDLE holds its thread for minutes, and twenty watched
mailboxes must not starve everything else that runs in threads.

Listing fetches headers only (the header fields, flags and BODYSTRUCTURE); a body is fetched
when a message is read (``BODY.PEEK``: reading never marks a message read). A message is named
by its folder, the folder's UIDVALIDITY and its UID (:class:`MessageRef`): a UID read under
another UIDVALIDITY is refused rather than applied to a different message.
"""

from __future__ import annotations

import asyncio
import contextlib
import imaplib
import re
import socket
import ssl
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, TypeVar

from imapclient import IMAPClient
from imapclient.exceptions import IMAPClientError, LoginError

from steward.connectors.mail.failures import (
    MailError,
    MailUnreachable,
    refuse_control,
    server_words,
    text_of,
)
from steward.connectors.mail.message import (
    addresses,
    decoded,
    headers_only,
    message_ids,
    sender_name,
    sent_at,
)
from steward.connectors.mail.model import Folder, FolderRole, Header, MessageRef
from steward.connectors.mail.settings import MailSettings
from steward.connectors.mail.tls import tls_context, tls_failure

T = TypeVar("T")

HEADER_FIELDS = (
    "BODY.PEEK[HEADER.FIELDS (FROM REPLY-TO TO CC SUBJECT DATE MESSAGE-ID IN-REPLY-TO REFERENCES)]"
)
LISTED = [HEADER_FIELDS, "FLAGS", "BODYSTRUCTURE", "INTERNALDATE", "RFC822.SIZE"]
SPECIAL_USE = {
    b"\\Sent": FolderRole.SENT,
    b"\\Drafts": FolderRole.DRAFTS,
    b"\\Archive": FolderRole.ARCHIVE,
    b"\\Trash": FolderRole.TRASH,
    b"\\Junk": FolderRole.JUNK,
    b"\\All": FolderRole.ALL,
}
COMMON_NAMES = {
    FolderRole.SENT: ("sent", "sent items", "sent messages", "sent mail"),
    FolderRole.DRAFTS: ("drafts", "draft"),
    FolderRole.ARCHIVE: ("archive", "archives"),
    FolderRole.TRASH: ("trash", "deleted items", "deleted messages", "bin"),
}
"""Names a folder without a SPECIAL-USE flag is recognised by (last part, case-insensitive)."""
IDLE_SLICE = 1.0
"""IDLE waits in slices this long (seconds), so a cancelled wait frees its thread soon."""


def _has_attachment(structure: object) -> bool:
    """Whether a BODYSTRUCTURE has a part with ``Content-Disposition: attachment``."""
    if isinstance(structure, tuple | list):
        if (
            len(structure) == 2
            and isinstance(structure[0], bytes)
            and structure[0].lower() == b"attachment"
        ):
            return True
        return any(_has_attachment(part) for part in structure)
    return False


class IMAPAccount:
    """The person's mailbox on one IMAP server."""

    def __init__(self, settings: MailSettings, secret: str, *, timeout: float = 30.0) -> None:
        self.settings = settings
        self._secret = secret
        self._timeout = timeout
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="imap")
        self._client: IMAPClient | None = None
        self._selected: tuple[str, int] | None = None
        self._folders: list[Folder] | None = None
        self._stop_idle = threading.Event()
        # whether the server spoke IDLE, learned in the account's thread by idle(): asking
        # may take a round trip, which has_idle() on the event loop must not
        self._idles = False

    async def __aenter__(self) -> IMAPAccount:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Log out (the credential goes with the connection)."""
        self._stop_idle.set()
        try:
            await asyncio.get_running_loop().run_in_executor(self._thread, self._close)
        finally:
            self._thread.shutdown(wait=False)

    def _close(self) -> None:
        client, self._client, self._selected = self._client, None, None
        if client is not None:
            # a connection gone already has nothing to log out of
            with contextlib.suppress(IMAPClientError, OSError):
                client.logout()

    # -- plumbing ---------------------------------------------------------------------------

    async def run(self, fn: Callable[[IMAPClient], T]) -> T:
        """Run ``fn`` with the signed-in client in the account's thread, errors in plain words."""

        def call() -> T:
            try:
                return fn(self._connect())
            except LoginError:
                self._drop()
                raise MailError(self._refused()) from None
            except MailError:
                raise
            except ssl.SSLError as exc:
                self._drop()
                raise MailUnreachable(tls_failure(self.settings.imap_host, "IMAP", exc)) from None
            except (imaplib.IMAP4.abort, OSError) as exc:
                self._drop()
                raise MailUnreachable(self._unreachable(exc)) from exc
            except IMAPClientError as exc:
                raise MailError(f"{self.settings.imap_host} refused: {server_words(exc)}") from None

        return await asyncio.get_running_loop().run_in_executor(self._thread, call)

    def _refused(self) -> str:
        user = self.settings.username
        how = "access token" if self.settings.auth == "oauth2" else "password"
        return (
            f"{self.settings.imap_host} refused the sign-in as {user}: the {how} is wrong "
            "or has expired, or the account does not allow IMAP"
        )

    def _unreachable(self, exc: BaseException) -> str:
        host, port = self.settings.imap_host, self.settings.port("imap")
        if isinstance(exc, socket.gaierror):
            return f"cannot find the mail server {host} (check its name)"
        if isinstance(exc, ConnectionRefusedError):
            return f"{host} refused the connection on port {port} (is that the IMAP port?)"
        if isinstance(exc, TimeoutError | socket.timeout):
            return f"{host} did not answer in time"
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else ""
        return f"lost the connection to {host}" + (f" ({reason.lower()})" if reason else "")

    def _drop(self) -> None:
        client, self._client, self._selected = self._client, None, None
        if client is not None:
            with contextlib.suppress(OSError, IMAPClientError):
                client.shutdown()

    def _connect(self) -> IMAPClient:
        if self._client is not None:
            return self._client
        settings = self.settings
        client = IMAPClient(
            settings.imap_host,
            port=settings.port("imap"),
            ssl=settings.imap_security == "ssl",
            ssl_context=tls_context(),
            timeout=self._timeout,
        )
        try:
            client.normalise_times = False  # keep the server's offsets: times stay aware
            if settings.imap_security == "starttls":
                client.starttls(tls_context())
            if settings.auth == "oauth2":
                client.oauth2_login(settings.username, self._secret)
            else:
                client.login(settings.username, self._secret)
        except BaseException:
            with contextlib.suppress(OSError, IMAPClientError):
                client.shutdown()
            raise
        self._client = client
        return client

    def _select(self, client: IMAPClient, folder: str) -> int:
        """Select ``folder``; its UIDVALIDITY."""
        if self._selected is not None and self._selected[0] == folder:
            return self._selected[1]
        refuse_control([folder])
        try:
            answer = client.select_folder(folder)
        except IMAPClientError as exc:
            raise MailError(f"there is no folder {folder} ({server_words(exc)})") from None
        validity = int(answer.get(b"UIDVALIDITY", 0))
        self._selected = (folder, validity)
        return validity

    def _at(self, client: IMAPClient, ref: MessageRef) -> None:
        """Select the folder of ``ref``; refuse when its UIDVALIDITY changed."""
        if self._select(client, ref.folder) != ref.uidvalidity:
            raise MailError(
                f"the folder {ref.folder} was rebuilt on the server since that message was "
                "listed: search again"
            )

    # -- reading ----------------------------------------------------------------------------

    def _list(self, client: IMAPClient) -> list[Folder]:
        if self._folders is None:
            chosen = {
                FolderRole.SENT: self.settings.sent_folder,
                FolderRole.DRAFTS: self.settings.drafts_folder,
                FolderRole.ARCHIVE: self.settings.archive_folder,
                FolderRole.TRASH: self.settings.trash_folder,
            }
            named = {name: role for role, name in chosen.items() if name}
            folders = []
            for flags, _, name in client.list_folders():
                if b"\\Noselect" in flags or b"\\NonExistent" in flags:
                    continue
                role = named.get(name)
                if role is None and name.upper() == "INBOX":
                    role = FolderRole.INBOX
                if role is None:
                    flagged = next((SPECIAL_USE[f] for f in flags if f in SPECIAL_USE), None)
                    # a role the settings give another folder is that folder's alone
                    role = flagged if flagged is not None and not chosen.get(flagged) else None
                folders.append(Folder(name=name, role=role))
            roles = {f.role for f in folders}
            for role, words in COMMON_NAMES.items():
                if role in roles:
                    continue
                match = next(
                    (
                        f
                        for f in folders
                        if f.role is None and re.split(r"[./]", f.name)[-1].casefold() in words
                    ),
                    None,
                )
                if match is not None:
                    folders[folders.index(match)] = Folder(name=match.name, role=role)
            self._folders = folders
        return self._folders

    async def folders(self) -> list[Folder]:
        """The folders that hold messages, with what each is for when known."""
        return await self.run(self._list)

    async def folder(self, role: FolderRole) -> str:
        """The name of the folder for ``role``; :class:`MailError` when there is none."""
        found = next((f.name for f in await self.folders() if f.role is role), None)
        if found is None:
            raise MailError(
                f"found no {role.value} folder on {self.settings.imap_host}; name it in the "
                f"connection's settings ({role.value}_folder)"
            )
        return found

    async def status(self, folder: str) -> dict[str, int]:
        """``uidvalidity``, ``uidnext``, ``messages`` and ``unseen`` of ``folder``."""
        refuse_control([folder])

        def status(client: IMAPClient) -> dict[str, int]:
            try:
                found = client.folder_status(
                    folder, [b"UIDVALIDITY", b"UIDNEXT", b"MESSAGES", b"UNSEEN"]
                )
            except IMAPClientError as exc:
                raise MailError(f"there is no folder {folder} ({server_words(exc)})") from None
            return {text_of(k).lower(): int(v) for k, v in found.items()}

        return await self.run(status)

    def _headers(
        self, client: IMAPClient, folder: str, validity: int, uids: Sequence[int]
    ) -> list[Header]:
        if not uids:
            return []
        fetched = client.fetch(list(uids), LISTED)
        out = []
        for uid in sorted(fetched, reverse=True):
            data = fetched[uid]
            raw = next((v for k, v in data.items() if k.startswith(b"BODY[HEADER")), b"")
            head = headers_only(raw or b"")
            flags = tuple(text_of(f) for f in data.get(b"FLAGS", ()))
            date = sent_at(head)
            if date is None:
                received = data.get(b"INTERNALDATE")
                date = received if isinstance(received, datetime) else date
            sender = addresses(head, "From")
            out.append(
                Header(
                    ref=MessageRef(folder=folder, uidvalidity=validity, uid=int(uid)),
                    message_id=next(iter(message_ids(head.get("Message-ID"))), ""),
                    sender=sender[0] if sender else "",
                    sender_name=sender_name(head),
                    reply_to=addresses(head, "Reply-To") or sender,
                    to=addresses(head, "To"),
                    cc=addresses(head, "Cc"),
                    subject=decoded(head.get("Subject")),
                    date=date,
                    unread="\\Seen" not in flags,
                    flagged="\\Flagged" in flags,
                    keywords=tuple(f for f in flags if not f.startswith("\\")),
                    has_attachment=_has_attachment(data.get(b"BODYSTRUCTURE")),
                    size=int(data.get(b"RFC822.SIZE", 0)),
                    in_reply_to=" ".join(message_ids(head.get("In-Reply-To"))),
                    references=message_ids(head.get("References")),
                )
            )
        return out

    async def search(
        self, folder: str, criteria: list[Any], *, limit: int
    ) -> tuple[list[Header], int]:
        """The newest ``limit`` messages of ``folder`` meeting ``criteria`` (imapclient's search
        criteria), newest first, and how many met them in all. Text is sent as UTF-8."""
        refuse_control(criteria)

        def search(client: IMAPClient) -> tuple[list[Header], int]:
            validity = self._select(client, folder)
            uids = sorted(client.search(criteria or ["ALL"], charset="UTF-8"))
            return self._headers(client, folder, validity, uids[-limit:] if limit else uids), len(
                uids
            )

        return await self.run(search)

    async def headers(self, refs: Iterable[MessageRef]) -> list[Header]:
        """The headers of the messages ``refs`` (those gone are left out)."""
        wanted = list(refs)

        def headers(client: IMAPClient) -> list[Header]:
            out: list[Header] = []
            for folder in dict.fromkeys(r.folder for r in wanted):
                refs_here = [r for r in wanted if r.folder == folder]
                for ref in refs_here:  # each was listed under the folder's UIDVALIDITY now
                    self._at(client, ref)
                out += self._headers(
                    client, folder, refs_here[0].uidvalidity, [r.uid for r in refs_here]
                )
            return out

        return await self.run(headers)

    async def raw(self, ref: MessageRef) -> bytes:
        """The whole message ``ref`` (without marking it read)."""

        def raw(client: IMAPClient) -> bytes:
            self._at(client, ref)
            fetched = client.fetch([ref.uid], ["BODY.PEEK[]"]).get(ref.uid, {})
            body = fetched.get(b"BODY[]")
            if not isinstance(body, bytes):
                raise MailError("that message is no longer there (moved or deleted): search again")
            return body

        return await self.run(raw)

    async def since(
        self, folder: str, after_uid: int, *, limit: int
    ) -> tuple[int, int, list[Header]]:
        """For a watch: the folder's UIDVALIDITY and UIDNEXT, and the headers of (at most
        ``limit``) messages with a UID above ``after_uid``, oldest first."""
        refuse_control([folder])

        def since(client: IMAPClient) -> tuple[int, int, list[Header]]:
            answer = client.select_folder(folder, readonly=True)
            self._selected = None
            validity = int(answer.get(b"UIDVALIDITY", 0))
            uidnext = int(answer.get(b"UIDNEXT", 0))
            if after_uid + 1 >= uidnext:
                return validity, uidnext, []
            uids = sorted(u for u in client.search(["UID", f"{after_uid + 1}:*"]) if u > after_uid)
            found = self._headers(client, folder, validity, uids[:limit])
            return validity, uidnext, sorted(found, key=lambda h: h.ref.uid)

        return await self.run(since)

    async def find(self, folder: str, message_id: str) -> list[tuple[MessageRef, tuple[str, ...]]]:
        """The messages in ``folder`` whose Message-ID is ``message_id``, with their flags."""
        refuse_control([message_id])

        def find(client: IMAPClient) -> list[tuple[MessageRef, tuple[str, ...]]]:
            validity = self._select(client, folder)
            uids = client.search(["HEADER", "Message-ID", message_id])
            flags = client.get_flags(uids) if uids else {}
            return [
                (
                    MessageRef(folder=folder, uidvalidity=validity, uid=int(uid)),
                    tuple(text_of(f) for f in flags.get(uid, ())),
                )
                for uid in sorted(uids)
            ]

        return await self.run(find)

    async def thread(self, root: str, folders: Sequence[str]) -> list[Header]:
        """Every message in ``folders`` that is ``root`` or names it among its References or
        In-Reply-To, oldest first."""
        refuse_control([root])

        def thread(client: IMAPClient) -> list[Header]:
            out: list[Header] = []
            for folder in folders:
                validity = self._select(client, folder)
                uids = client.search(
                    [
                        "OR",
                        "HEADER",
                        "Message-ID",
                        root,
                        "OR",
                        "HEADER",
                        "References",
                        root,
                        "HEADER",
                        "In-Reply-To",
                        root,
                    ]
                )
                out += self._headers(client, folder, validity, sorted(uids))
            return sorted(out, key=lambda h: (h.date is None, h.date or datetime.min))

        return await self.run(thread)

    # -- writing ----------------------------------------------------------------------------

    async def flag(self, refs: Sequence[MessageRef], flags: Sequence[str], *, add: bool) -> None:
        """Add or remove ``flags`` (``\\Seen``, ``\\Flagged``, keywords) on ``refs``."""
        refuse_control(flags)

        def flag(client: IMAPClient) -> None:
            for ref in refs:
                self._at(client, ref)
                if add:
                    client.add_flags([ref.uid], list(flags), silent=True)
                else:
                    client.remove_flags([ref.uid], list(flags), silent=True)

        await self.run(flag)

    async def label(self, refs: Sequence[MessageRef], labels: Sequence[str], *, add: bool) -> None:
        """Gmail labels where the server has them (X-GM-EXT-1), else IMAP keywords."""
        refuse_control(labels)

        def label(client: IMAPClient) -> None:
            gmail = client.has_capability("X-GM-EXT-1")
            for ref in refs:
                self._at(client, ref)
                if gmail:
                    change = client.add_gmail_labels if add else client.remove_gmail_labels
                elif add:
                    change = client.add_flags
                else:
                    change = client.remove_flags
                change([ref.uid], list(labels), silent=True)

        await self.run(label)

    async def move(self, refs: Sequence[MessageRef], destination: str) -> None:
        """Move ``refs`` to ``destination`` (MOVE; else COPY, then delete and expunge)."""
        refuse_control([destination])

        def move(client: IMAPClient) -> None:
            for ref in refs:
                self._at(client, ref)
                if client.has_capability("MOVE"):
                    client.move([ref.uid], destination)
                else:
                    client.copy([ref.uid], destination)
                    client.delete_messages([ref.uid], silent=True)
                    if client.has_capability("UIDPLUS"):
                        client.uid_expunge([ref.uid])
                    else:
                        client.expunge()

        await self.run(move)

    async def append(
        self, folder: str, message: bytes, flags: Sequence[str], when: datetime
    ) -> None:
        """Store ``message`` in ``folder`` with ``flags``."""
        refuse_control([folder, *flags])

        def append(client: IMAPClient) -> None:
            try:
                client.append(folder, message, flags=list(flags), msg_time=when)
            except IMAPClientError as exc:
                raise MailError(
                    f"could not store the message in {folder}: {server_words(exc)}"
                ) from None

        await self.run(append)

    async def delete(self, refs: Sequence[MessageRef]) -> None:
        """Delete ``refs`` for good (a copy Steward itself stored)."""

        def delete(client: IMAPClient) -> None:
            for ref in refs:
                self._at(client, ref)
                client.delete_messages([ref.uid], silent=True)
                if client.has_capability("UIDPLUS"):
                    client.uid_expunge([ref.uid])
                else:
                    client.expunge()

        await self.run(delete)

    # -- waiting ----------------------------------------------------------------------------

    async def idle(self, folder: str, seconds: float, *, newer_than: int | None) -> bool:
        """Wait with IMAP IDLE until ``folder`` changes or ``seconds`` pass; True when the
        server said something changed (or mail already came past ``newer_than``, the UIDNEXT
        last seen). False at once when the server has no IDLE."""
        refuse_control([folder])
        self._stop_idle.clear()

        def idle(client: IMAPClient) -> bool:
            self._idles = bool(client.has_capability("IDLE"))
            if not self._idles:
                return False
            answer = client.select_folder(folder, readonly=True)
            self._selected = None
            if newer_than is not None and int(answer.get(b"UIDNEXT", 0)) > newer_than:
                return True
            client.idle()
            try:
                waited = 0.0
                while waited < seconds and not self._stop_idle.is_set():
                    step = min(IDLE_SLICE, seconds - waited)
                    if any(_changed(r) for r in client.idle_check(timeout=step)):
                        return True
                    waited += step
                return False
            finally:
                client.idle_done()

        return await self.run(idle)

    def has_idle(self) -> bool:
        """Whether the server spoke IDLE when :meth:`idle` last asked (False before it did)."""
        return self._idles


def _changed(response: tuple[Any, ...]) -> bool:
    return len(response) >= 2 and response[1] in (b"EXISTS", b"RECENT", b"EXPUNGE")
