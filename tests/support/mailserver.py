"""Real mail servers for tests: Dovecot (IMAP, Debian's ``dovecot-imapd``) run as a throwaway
instance, and aiosmtpd (SMTP) delivering into it.

Dovecot's configuration, users (passwd-files of plain passwords: :meth:`MailServer.add_user`,
read again at each login) and maildirs live in one directory of their own, listening on a free
loopback port. Run as root (CI), Dovecot will not give mail access to root nor run its login
process as root: mail is then owned by the ``dovecot`` system user (``nobody`` without one),
logins run as ``dovenull``, and the instance lives in a directory those users can reach
(made under /tmp and removed afterwards, since pytest's own temporary directory is private to
root). Run as anyone else, everything runs as that user under the given directory.

The SMTP server asks senders to sign in (a user's password, or ``XOAUTH2`` with a token from
:attr:`MailServer.tokens`), records each message it accepts (:attr:`MailServer.accepted`) and
delivers it to every recipient at ``example.test`` who is a user here, by IMAP APPEND into
their INBOX; it refuses recipients at ``nowhere.test`` and does not speak SMTPUTF8.
"""

from __future__ import annotations

import base64
import contextlib
import grp
import imaplib
import ipaddress
import json
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from support.startup import scaled

DOVECOT = "/usr/sbin/dovecot"
DOMAIN = "example.test"
NOWHERE = "nowhere.test"
"""The SMTP server refuses every recipient at this domain."""
SPECIAL = ("Drafts", "Sent", "Trash", "Archive", "Junk")


BASIC = "IMAP4rev1 LITERAL+ SASL-IR ID ENABLE UIDPLUS NAMESPACE SPECIAL-USE"
"""The capabilities of a server from before IDLE (RFC 2177) and MOVE (RFC 6851)."""


def dovecot_missing() -> str | None:
    """Why Dovecot cannot run here, or None."""
    if not Path(DOVECOT).exists():
        return f"Dovecot is not installed ({DOVECOT}; apt-get install dovecot-imapd)"
    return None


def skip_or_fail(reason: str) -> None:
    """Skip locally; in CI a missing server is a failure, not a skip."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"mail tests cannot run in CI: {reason}")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(kw_only=True)
class Accepted:
    """A message the SMTP server took."""

    sender: str
    """Its envelope sender."""
    recipients: list[str]
    """Its envelope recipients."""
    data: bytes
    """The message."""
    login: str | None
    """Who signed in to send it."""


@dataclass(kw_only=True)
class MailServer:
    """A running Dovecot and the SMTP server in front of it."""

    imap_port: int
    """Dovecot's IMAP port on 127.0.0.1 (plain text: loopback only)."""
    tls_port: int
    """Its IMAP port with TLS from the start, with a certificate no authority signed."""
    smtp_port: int
    """The SMTP server's port on 127.0.0.1."""
    users: Path
    """Dovecot's passwd-files, one per user."""
    log: Path
    """Dovecot's log (read it when a test fails)."""
    passwords: dict[str, str] = field(default_factory=dict)
    """Each user's password."""
    tokens: dict[str, str] = field(default_factory=dict)
    """OAuth access tokens the SMTP server takes (token → user)."""
    accepted: list[Accepted] = field(default_factory=list)
    """Every message the SMTP server took, in order."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add_user(self, user: str | None = None) -> str:
        """A new user (a fresh name when none is given); return the name. Their address is
        ``<user>@example.test``."""
        name = user or f"person-{uuid.uuid4().hex[:8]}"
        password = f"{name}-secret"
        with self.lock:
            # a file per user: Dovecot looks at a file it read at most once a second, so a
            # user added to a shared file could not sign in for up to a second
            (self.users / name).write_text(f"{name}:{{PLAIN}}{password}\n")
            self.passwords[name] = password
        return name

    def imap(self, user: str) -> imaplib.IMAP4:
        """A signed-in stdlib IMAP client, to look at or change a mailbox as another client
        would (blocking: call it from a thread or outside the event loop's hot path)."""
        client = imaplib.IMAP4("127.0.0.1", self.imap_port, timeout=scaled(10))
        client.login(user, self.passwords[user])
        return client

    def deliver(self, user: str, message: bytes, *, folder: str = "INBOX") -> None:
        """Put ``message`` in ``user``'s folder, as delivery would (blocking)."""
        client = self.imap(user)
        try:
            status, answer = client.append(folder, None, None, message)
            assert status == "OK", answer
        finally:
            client.logout()

    def messages(self, user: str, folder: str) -> list[tuple[bytes, bytes]]:
        """``(flags, message)`` of every message in ``user``'s folder (blocking)."""
        client = self.imap(user)
        try:
            client.select(folder, readonly=True)
            _, data = client.uid("SEARCH", "ALL")  # type: ignore[arg-type]
            out = []
            for uid in data[0].split():
                _, fetched = client.uid("FETCH", uid.decode(), "(FLAGS BODY.PEEK[])")
                head, body = fetched[0]  # type: ignore[misc]
                out.append((head, body))
            return out
        finally:
            client.logout()


def message(
    *,
    sender: str,
    to: str,
    subject: str,
    body: str = "Hello",
    message_id: str | None = None,
    extra: str = "",
    date: str = "Mon, 07 Dec 2026 09:00:00 +0100",
) -> bytes:
    """A plain-text message as someone else's mail program writes it."""
    ident = message_id or f"<{uuid.uuid4().hex}@{sender.rpartition('@')[2]}>"
    return (
        f"From: {sender}\r\nTo: {to}\r\nSubject: {subject}\r\nDate: {date}\r\n"
        f"Message-ID: {ident}\r\n{extra}MIME-Version: 1.0\r\n"
        f"Content-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n"
    ).encode()


class _LoopbackController(Controller):
    """aiosmtpd warns that AUTH without TLS exposes passwords: this server listens on
    loopback only, where the connector allows plain text too."""

    def factory(self) -> SMTP:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Requiring AUTH while not requiring TLS")
            return super().factory()


class _Delivery:
    """aiosmtpd handler: signs senders in, records and delivers what it accepts."""

    def __init__(self, server: MailServer) -> None:
        self.server = server

    def authenticate(
        self, _smtp: SMTP, _session: Session, _envelope: Envelope, mechanism: str, data: Any
    ) -> AuthResult:
        if isinstance(data, LoginPassword):
            user, password = data.login.decode(), data.password.decode()
            ok = self.server.passwords.get(user) == password
            return AuthResult(success=ok, handled=False, auth_data=data)
        return AuthResult(success=False, handled=False)

    async def auth_XOAUTH2(self, server: SMTP, args: list[str]) -> AuthResult:
        blob = args[1] if len(args) > 1 else ""
        try:
            fields = dict(
                part.split("=", 1)
                for part in base64.b64decode(blob).decode().split("\x01")
                if "=" in part
            )
        except ValueError:
            return AuthResult(success=False, handled=False)
        token = fields.get("auth", "").removeprefix("Bearer ")
        user = self.server.tokens.get(token)
        if user is None or user != fields.get("user"):
            return AuthResult(success=False, handled=False)
        return AuthResult(success=True, auth_data=LoginPassword(user.encode(), b""))

    async def handle_RCPT(
        self,
        _server: SMTP,
        _session: Session,
        envelope: Envelope,
        address: str,
        _options: list[str],
    ) -> str:
        if address.lower().endswith("@" + NOWHERE):
            return "550 5.1.1 No such user here"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, _server: SMTP, session: Session, envelope: Envelope) -> str:
        data = envelope.original_content or b""
        auth = session.auth_data
        login = auth.login.decode() if isinstance(auth, LoginPassword) else None
        with self.server.lock:
            self.server.accepted.append(
                Accepted(
                    sender=str(envelope.mail_from),
                    recipients=list(envelope.rcpt_tos),
                    data=data,
                    login=login,
                )
            )
        for rcpt in envelope.rcpt_tos:
            user, _, domain = rcpt.rpartition("@")
            if domain.lower() == DOMAIN and user in self.server.passwords:
                self.server.deliver(user, data)
        return "250 OK"


def _introspection(tokens: dict[str, str]) -> type[BaseHTTPRequestHandler]:
    """An OAuth 2.0 token introspection endpoint (RFC 7662) over ``tokens`` (token → user)."""

    class Introspect(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            form = parse_qs(self.rfile.read(length).decode())
            token = (form.get("token") or [""])[0]
            user = tokens.get(token)
            body = json.dumps({"active": True, "username": user} if user else {"active": False})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the test's output is not the place for request lines."""

    return Introspect


def _oauth2_config(introspection: int) -> str:
    """Dovecot's oauth2 passdb: it asks the token gateway (:class:`_Introspection`) whether a
    Bearer token is valid and whose it is."""
    return (
        "introspection_mode = post\n"
        f"introspection_url = http://127.0.0.1:{introspection}/introspect\n"
        "username_attribute = username\n"
        "active_attribute = active\n"
        "active_value = true\n"
        "force_introspection = yes\n"
    )


def _self_signed(root: Path) -> None:
    """A certificate for 127.0.0.1 that no authority signed (``cert.pem``, ``key.pem``)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=30))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    (root / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (root / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def _config(root: Path, port: int, tls_port: int, capabilities: str | None) -> str:
    as_root = os.geteuid() == 0
    me = pwd.getpwuid(os.geteuid()).pw_name
    if as_root:
        owner = "dovecot" if _user_exists("dovecot") else "nobody"
        login = "dovenull" if _user_exists("dovenull") else "nobody"
        users = f"uid={owner} gid={pwd.getpwnam(owner).pw_gid} "
        internal = f"default_internal_user = {owner}\ndefault_login_user = {login}\n"
    else:
        users = ""
        group = grp.getgrgid(os.getegid()).gr_name
        internal = (
            f"default_internal_user = {me}\ndefault_internal_group = {group}\n"
            f"default_login_user = {me}\n"
        )
    mailboxes = "".join(
        f"  mailbox {name} {{\n    special_use = \\{name}\n    auto = subscribe\n  }}\n"
        for name in SPECIAL
    )
    return f"""
base_dir = {root}/run
state_dir = {root}/state
log_path = {root}/dovecot.log
instance_name = steward-test-{port}
protocols = imap
listen = 127.0.0.1
ssl = yes
ssl_cert = <{root}/cert.pem
ssl_key = <{root}/key.pem
disable_plaintext_auth = no
auth_mechanisms = plain login xoauth2 oauthbearer
auth_failure_delay = 0
{internal}first_valid_uid = 1
mail_location = maildir:{root}/mail/%u
passdb {{
  driver = passwd-file
  mechanisms = plain login
  args = scheme=PLAIN username_format=%u {root}/users/%u
}}
passdb {{
  driver = oauth2
  mechanisms = xoauth2 oauthbearer
  args = {root}/oauth2.conf
}}
userdb {{
  driver = static
  args = {users}home={root}/home/%u
}}
service imap-login {{
  chroot =
  inet_listener imap {{
    address = 127.0.0.1
    port = {port}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {tls_port}
    ssl = yes
  }}
}}
service anvil {{
  chroot =
}}
protocol imap {{
  mail_max_userip_connections = 1000
{f"  imap_capability = {capabilities}" if capabilities else ""}
}}
namespace inbox {{
  inbox = yes
{mailboxes}}}
"""


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
            return sock.recv(64).startswith(b"* OK")
    except OSError:
        return False


@contextlib.contextmanager
def running_mail(workdir: Path, *, capabilities: str | None = None) -> Iterator[MailServer]:
    """Start Dovecot and the SMTP server; stop both and remove the mail on exit.
    ``capabilities``: what Dovecot announces after sign-in, when not all it can (a server
    without IDLE or MOVE)."""
    root = Path(tempfile.mkdtemp(prefix="steward-dovecot-")) if os.geteuid() == 0 else workdir
    root.chmod(0o755)
    for sub in ("mail", "home"):
        (root / sub).mkdir()
        if os.geteuid() == 0:
            owner = pwd.getpwnam("dovecot" if _user_exists("dovecot") else "nobody")
            os.chown(root / sub, owner.pw_uid, owner.pw_gid)
    users = root / "users"
    users.mkdir()
    port = free_port()
    tokens: dict[str, str] = {}
    gateway = ThreadingHTTPServer(("127.0.0.1", 0), _introspection(tokens))
    threading.Thread(target=gateway.serve_forever, daemon=True).start()
    (root / "oauth2.conf").write_text(_oauth2_config(gateway.server_address[1]))
    tls_port = free_port()
    _self_signed(root)
    config = root / "dovecot.conf"
    config.write_text(_config(root, port, tls_port, capabilities))
    out = (root / "dovecot.out").open("ab")
    proc = subprocess.Popen([DOVECOT, "-F", "-c", str(config)], stdout=out, stderr=out)
    smtp: Controller | None = None
    try:
        deadline, waited = scaled(30), 0.0
        # a blocking poll: this runs once per session, before any event loop exists
        while not _answers(port):
            if proc.poll() is not None:
                log = (root / "dovecot.out").read_text() + _read(root / "dovecot.log")
                raise RuntimeError(f"dovecot exited ({proc.returncode}): {log}")
            if waited > deadline:
                raise RuntimeError(f"dovecot did not answer in {deadline:.0f}s")
            waited += 0.1
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.1)
        server = MailServer(
            imap_port=port,
            tls_port=tls_port,
            smtp_port=free_port(),
            users=users,
            log=root / "dovecot.log",
            tokens=tokens,
        )
        server.add_user("dana")
        handler = _Delivery(server)
        smtp = _LoopbackController(
            handler,
            hostname="127.0.0.1",
            port=server.smtp_port,
            authenticator=handler.authenticate,
            auth_required=True,
            auth_require_tls=False,
            # like many servers, no SMTPUTF8: an international address cannot be sent
            enable_SMTPUTF8=False,
            ready_timeout=scaled(10),
        )
        smtp.start()
        yield server
    finally:
        if smtp is not None:
            smtp.stop()
        gateway.shutdown()
        gateway.server_close()
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        out.close()
        if root != workdir:
            shutil.rmtree(root, ignore_errors=True)


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""
